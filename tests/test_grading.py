"""Grading for a teacher (bertlab/course/grading.py): the exercises exported as nbgrader assignments; the
instructor pack's answers pass the graded tests and its known wrong answers fail them, end to end through
nbgrader's own command line (slow); bad destinations, lessons and packs are one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bertlab
from bertlab.cli import main as cli_main
from bertlab.course import grading, registry

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions"


def _nb(path: Path) -> dict:
    return json.loads(path.read_text())


def test_each_lesson_is_an_assignment_with_one_graded_check_per_exercise(tmp_path):
    written = grading.export_assignments(tmp_path / "course", ["04", 5])
    assert [p.relative_to(tmp_path / "course").as_posix() for p in written] == [
        "source/lesson04/lesson04.ipynb", "source/lesson05/lesson05.ipynb"]
    assert "course_id" in (tmp_path / "course" / "nbgrader_config.py").read_text()
    nb = _nb(written[0])
    meta = [c["metadata"]["nbgrader"] for c in nb["cells"]]
    graded = [m for m in meta if m["grade"]]
    exs = registry.exercises("04")
    assert [m["grade_id"] for m in graded] == [f"ex_04_{e.id.split('.')[1]}_check" for e in exs]
    assert [m["points"] for m in graded] == [e.difficulty for e in exs]
    assert all(m["locked"] for m in graded) and sum(m["solution"] for m in meta) == len(exs)
    assert len({m["grade_id"] for m in meta}) == len(meta)                     # nbgrader needs unique ids
    sources = ["".join(c["source"]) for c in nb["cells"]]
    for e in exs:
        assert any(f"grade({e.id!r}, answer_04_{e.id[-1]})" == s for s in sources)
        solution = next(s for s in sources if s.startswith(f"answer_04_{e.id[-1]} = None"))
        assert "### BEGIN SOLUTION" in solution and "### END SOLUTION" in solution     # stripped for students


def test_grade_is_the_check_and_keeps_no_progress(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTLAB_PROGRESS", str(tmp_path / "p.json"))
    assert grading.grade("00.4", "RTE").right
    with pytest.raises(AssertionError, match="00.4 not yet") as e:
        grading.grade("00.4", "CoLA")
    assert "RTE" not in str(e.value)                                           # the diagnosis, never the answer
    with pytest.raises(AssertionError, match="not answered yet"):
        grading.grade("00.4", None)
    with pytest.raises(KeyError, match="no exercise '77.1'"):
        grading.grade("77.1", 3)
    assert not (tmp_path / "p.json").exists()                                 # the grader's checks are not kept
    bertlab.check("00.4", "RTE")
    assert (tmp_path / "p.json").exists()


# ---- bad input ---------------------------------------------------------------------------------------------

def test_a_folder_that_is_not_empty_a_file_or_a_link_is_refused_untouched(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "gradebook.db").write_text("a term of grades")
    with pytest.raises(FileExistsError, match="not empty"):
        grading.export_assignments(full, ["04"])
    assert [p.name for p in full.iterdir()] == ["gradebook.db"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        grading.export_assignments(afile, ["04"])
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(FileExistsError, match="symbolic link"):
        grading.export_assignments(link, ["04"])
    assert not (tmp_path / "elsewhere").exists()
    grading.export_assignments(tmp_path / "empty", ["04"])                     # new or empty is fine
    (tmp_path / "empty2").mkdir()
    grading.export_assignments(tmp_path / "empty2", ["04"])


def test_unknown_lessons_and_a_bad_pack_are_named_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="no notebook '99'.*00, 01"):
        grading.export_assignments(tmp_path / "a", ["04", "99"])
    with pytest.raises(ValueError, match="at least one lesson"):
        grading.export_assignments(tmp_path / "a", [])
    with pytest.raises(ValueError, match="no notebook 'x'"):
        grading.export_assignments(tmp_path / "a", ["x"])
    with pytest.raises(FileNotFoundError, match="holds no solutions"):
        grading.export_assignments(tmp_path / "a", ["04"], solutions=tmp_path / "nowhere")
    partial = tmp_path / "pack"
    partial.mkdir()
    (partial / "nb04.py").write_text("def ex_04_1():\n    return 0.12\n")
    with pytest.raises(ValueError, match="no solution for 04.2, 04.3"):
        grading.export_assignments(tmp_path / "a", ["04"], solutions=partial)
    with pytest.raises(FileNotFoundError, match="no solutions for notebook 05"):
        grading.export_assignments(tmp_path / "a", ["05"], solutions=partial)
    assert not (tmp_path / "a").exists()


def test_the_command_writes_the_course_and_says_what_next_or_one_line_of_error(tmp_path, capsys):
    assert cli_main(["assign", str(tmp_path / "c"), "--notebooks", "04", "--solutions", str(SOLUTIONS)]) == 0
    out = capsys.readouterr().out
    assert "lesson04" in out and "nbgrader generate_assignment lesson04" in out
    assert cli_main(["assign", str(tmp_path / "c"), "--notebooks", "04"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertlab assign: error:") and "not empty" in err and err.count("\n") == 1
    assert cli_main(["assign", str(tmp_path / "d"), "--notebooks", "42"]) == 2
    assert "no notebook '42'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["assign"])                                                  # DIR is required
    assert "DIR" in capsys.readouterr().err


# ---- end to end, through nbgrader's command line --------------------------------------------------------------

def _submit(course: Path, student: str, lesson: str, answer_code) -> None:
    """A student's notebook: the released one with each `raise NotImplementedError()` replaced by an answer."""
    released = _nb(course / "release" / f"lesson{lesson}" / f"lesson{lesson}.ipynb")
    for cell in released["cells"]:
        src = "".join(cell["source"])
        if "raise NotImplementedError()" in src:
            var = src.split(" = None")[0]
            nn, k = var.split("_")[1:]
            cell["source"] = src.replace("# YOUR CODE HERE\nraise NotImplementedError()", answer_code(nn, k))
    folder = course / "submitted" / student / f"lesson{lesson}"
    folder.mkdir(parents=True)
    (folder / f"lesson{lesson}.ipynb").write_text(json.dumps(released))


@pytest.mark.slow
def test_nbgrader_grades_the_solutions_right_and_the_known_wrong_answers_wrong(tmp_path):
    pytest.importorskip("nbgrader", reason="the grader: pip install 'bertlab[grading]'")
    course, lesson = tmp_path / "course", "04"
    grading.export_assignments(course, [lesson], SOLUTIONS)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    nbgrader = [shutil.which("nbgrader", path=env["PATH"]) or "nbgrader"]

    def run(*args):
        done = subprocess.run(nbgrader + list(args), cwd=course, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    run("generate_assignment", f"lesson{lesson}")
    released = (course / "release" / f"lesson{lesson}" / f"lesson{lesson}.ipynb").read_text()
    assert "instructor_pack" not in released and "BEGIN SOLUTION" not in released    # no solution goes out
    pack = repr(str(SOLUTIONS))
    _submit(course, "alice", lesson, lambda nn, k: (
        f"from bertlab.course.grading import instructor_pack\n\n"
        f"answer_{nn}_{k} = instructor_pack({nn!r}, {pack}).ex_{nn}_{k}()"))
    _submit(course, "bob", lesson, lambda nn, k: (
        f"from bertlab.course.grading import instructor_pack\n\n"
        f"answer_{nn}_{k} = instructor_pack({nn!r}, {pack}).wrong_{nn}_{k}()[0][0]"))
    run("autograde", f"lesson{lesson}")

    from nbgrader.api import Gradebook

    exs = registry.exercises(lesson)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        alice, bob = (gb.find_submission(f"lesson{lesson}", s) for s in ("alice", "bob"))
        total = sum(e.difficulty for e in exs)
        assert alice.max_score == total and alice.score == total
        assert bob.score == 0
    graded = _nb(course / "autograded" / "bob" / f"lesson{lesson}" / f"lesson{lesson}.ipynb")
    tracebacks = "\n".join(o.get("evalue", "") for c in graded["cells"] for o in c.get("outputs", []))
    module = grading.instructor_pack(lesson, SOLUTIONS)
    for e in exs:
        _, words = getattr(module, "wrong_" + e.id.replace(".", "_"))()[0]
        assert f"{e.id} not yet" in tracebacks and words.lower() in tracebacks.lower()   # the check's diagnosis


def test_a_pack_that_fails_to_load_is_named_in_one_line(tmp_path, capsys):
    pack = tmp_path / "pack"
    pack.mkdir()
    for source, needle in (("raise RuntimeError('boom')\n", "RuntimeError: boom"),
                           ("def (:\n", "nb04.py, line 1 cannot be loaded \\(SyntaxError")):
        (pack / "nb04.py").write_text(source)
        with pytest.raises(ValueError, match=needle):
            grading.export_assignments(tmp_path / "a", ["04"], solutions=pack)
        assert cli_main(["assign", str(tmp_path / "a"), "--notebooks", "04", "--solutions", str(pack)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertlab assign: error:") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "a").exists()
