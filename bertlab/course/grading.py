"""Grading for a teacher: the course's checkable exercises as nbgrader assignments, one per lesson.

    bertlab assign COURSE_DIR [--notebooks 04 05] [--solutions path/to/bertlab/solutions]
    cd COURSE_DIR
    nbgrader generate_assignment lesson04          # release/lesson04/lesson04.ipynb: what students get
    # collect submissions into submitted/<student>/lesson04/lesson04.ipynb (or with nbgrader's exchange)
    nbgrader autograde lesson04                    # runs each submission; every check is one graded test
    nbgrader export                                # grades.csv

Each lesson NN becomes `source/lessonNN/lessonNN.ipynb`: per checkable exercise, its question (the
registry's title, what kind of answer it takes, the lesson it comes from), a solution cell whose
`### BEGIN SOLUTION` region calls the instructor pack (the repository's solutions/; nbgrader replaces the
region in the students' copy) and a locked test cell, `grade("NN.K", answer_NN_K)`, worth the exercise's
difficulty in points. The test is `bertlab.check` itself, so a student sees the same diagnosis, never the
answer, in the feedback, and a fix to a check fixes the grading too.

Why nbgrader 0.9.6 and not otter-grader 7.0.0 (both measured here with `pip install --dry-run`): nbgrader
adds five packages to bertlab's (SQLAlchemy, alembic, Mako, RapidFuzz, itself), grades from the command line
with the local kernel (`nbgrader autograde`, no Docker), works offline, and is what JupyterHub courses use
(formgrader, the exchange). Otter adds 22 (pandas, Sphinx, python-on-whales for its Docker grading among
them), and its batch `otter grade` runs in Docker by default.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from .progress import paused
from .registry import Result, check, exercises

__all__ = ["grade", "export_assignments", "instructor_pack", "assignment_name", "add_parser", "main"]


def grade(exercise: str, answer) -> Result:
    """A graded test: `bertlab.check(exercise, answer)`, kept out of the grader's own progress; not right →
    AssertionError carrying the check's diagnosis (which never holds the answer)."""
    with paused():
        result = check(exercise, answer)
    if not result.right:
        raise AssertionError(str(result))
    return result


def assignment_name(notebook: str) -> str:
    return f"lesson{notebook}"


def instructor_pack(notebook: str, source) -> object:
    """The instructor pack's module for `notebook` (`source`/nbNN.py), loaded from its file."""
    from ..lab import solutions_source

    path = solutions_source(source) / f"nb{notebook}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the instructor pack has no solutions for notebook {notebook}")
    spec = importlib.util.spec_from_file_location(f"bertlab_solutions_nb{notebook}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:       # a pack of another version, or edited: say which file, not its traceback
        where = f", line {e.lineno}" if isinstance(e, SyntaxError) and e.lineno else ""
        raise ValueError(f"{path}{where} cannot be loaded ({type(e).__name__}: {e}): the instructor pack must be "
                         "bertlab's solutions/ folder of this version, unedited") from e
    return module


def _lesson_file(notebook: str) -> str:
    found = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob(f"{notebook}_*.ipynb"))
    return found[0].name if found else f"notebook {notebook}"


def _cell(kind: str, source: str, grade_id: str, *, solution=False, graded=False, points=0) -> dict:
    meta = {"grade": graded, "grade_id": grade_id, "locked": not solution, "schema_version": 3,
            "solution": solution, "task": False}
    if graded:
        meta["points"] = points
    cell = {"cell_type": kind, "id": grade_id.replace("_", "-"), "metadata": {"nbgrader": meta}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _lesson(notebook: str, pack: Path) -> dict:
    """The source notebook of one lesson's assignment (nbformat 4.5, as nbgrader reads it)."""
    lesson = _lesson_file(notebook)
    cells = [
        _cell("markdown", f"# Lesson {notebook}: the checkable exercises of `{lesson}`\n\n"
              "Answer each exercise in its cell: put your answer in the variable the cell names (replace "
              "`raise NotImplementedError()`). Compute it here, copying what you need from the lesson. "
              "`bertlab.check(\"NN.K\", answer)` tells you before you hand in whether it is right, and if not, "
              "what kind of wrong; the grader runs the same check; `bertlab.hint(\"NN.K\")` helps.",
              f"lesson{notebook}_intro"),
        _cell("code", "import os\n\nos.environ.setdefault(\"OMP_NUM_THREADS\", \"1\")  # a grader runs many at once\n\n"
              "import bertlab\nfrom bertlab.course.grading import grade", f"lesson{notebook}_setup"),
    ]
    for ex in exercises(notebook):
        nn, k = ex.id.split(".")
        var = f"answer_{nn}_{k}"
        cells += [
            _cell("markdown", f"## {ex.id}. {ex.title}\n\nYour answer: {ex.expects}. "
                  f"({ex.difficulty} point{'s' if ex.difficulty > 1 else ''}; about {ex.minutes} minutes; "
                  f"from `{lesson}`)", f"ex_{nn}_{k}_question"),
            _cell("code", f"{var} = None\n### BEGIN SOLUTION\n"
                  f"from bertlab.course.grading import instructor_pack\n\n"
                  f"{var} = instructor_pack({nn!r}, {str(pack)!r}).ex_{nn}_{k}()\n### END SOLUTION",
                  f"ex_{nn}_{k}_answer", solution=True),
            _cell("code", f"grade({ex.id!r}, {var})", f"ex_{nn}_{k}_check", graded=True, points=ex.difficulty),
        ]
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}}}


CONFIG = '''\
# nbgrader's settings for the bertlab course (written by `bertlab assign`)
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "bertlab"
c.Execute.timeout = 600        # a check may load a model and run a learner's function: minutes, not seconds
'''


def _notebooks(wanted) -> list[str]:
    known = sorted({e.notebook for e in exercises()})
    if wanted is None:
        return known
    if isinstance(wanted, (str, int)):
        wanted = [wanted]
    if not wanted:
        raise ValueError(f"name at least one lesson (or none at all, for every lesson): {', '.join(known)}")
    out = []
    for w in wanted:
        key = f"{w:02d}" if isinstance(w, int) and not isinstance(w, bool) else str(w).strip().zfill(2)
        if key not in known:
            raise ValueError(f"there is no notebook {w!r} with checkable exercises: they are {', '.join(known)}")
        if key not in out:
            out.append(key)
    return out


def export_assignments(dest, notebooks=None, solutions=None) -> list[Path]:
    """Write an nbgrader course folder at `dest` (new or empty): nbgrader_config.py and, per lesson,
    source/lessonNN/lessonNN.ipynb with its solutions from the instructor pack `solutions` (default: the
    checkout's solutions/). Returns the notebooks written."""
    dest = Path(dest).expanduser()
    chosen = _notebooks(notebooks)
    from ..lab import solutions_source

    pack = solutions_source(solutions).resolve()
    for nn in chosen:                                   # every solution exists before anything is written
        module = instructor_pack(nn, pack)
        missing = [e.id for e in exercises(nn) if not hasattr(module, "ex_" + e.id.replace(".", "_"))]
        if missing:
            raise ValueError(f"{pack}/nb{nn}.py has no solution for {', '.join(missing)}: the assignment needs one "
                             "per exercise; use the instructor pack of this bertlab's version")
    if dest.is_symlink():
        raise FileExistsError(f"{dest} is a symbolic link: export into a folder of its own")
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} is a file: export into a new or empty folder")
    if dest.is_dir() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty: export into a new or empty folder (nothing there was "
                              "changed; an earlier export's gradebook and submissions stay as they are)")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    written = []
    for nn in chosen:
        folder = dest / "source" / assignment_name(nn)
        folder.mkdir(parents=True)
        path = folder / f"{assignment_name(nn)}.ipynb"
        path.write_text(json.dumps(_lesson(nn, pack), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


# ---- the command: `bertlab assign` ------------------------------------------------------------------------

def add_parser(sub):
    p = sub.add_parser("assign", help="for teachers: the checkable exercises as nbgrader assignments",
                       description="Write an nbgrader course folder into DIR (new or empty): one assignment per "
                                   "lesson, each exercise a solution cell and a graded test that runs bertlab.check. "
                                   "Then, in DIR: nbgrader generate_assignment lessonNN; nbgrader autograde "
                                   "lessonNN. Needs nbgrader: pip install 'bertlab[grading]'.")
    p.add_argument("dir", metavar="DIR", help="the course folder to create")
    p.add_argument("--notebooks", nargs="+", default=None, metavar="NN",
                   help="only these lessons, e.g. 04 05 (default: every lesson with checkable exercises)")
    p.add_argument("--solutions", default=None, metavar="SRC",
                   help="the instructor pack, the bertlab repository's solutions/ folder (default: the checkout's)")
    return p


def main(args) -> int:
    import sys

    try:
        written = export_assignments(args.dir, args.notebooks, args.solutions)
    except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, PermissionError) as e:
        print(f"bertlab assign: error: {e}", file=sys.stderr)
        return 2
    names = ", ".join(re.sub(r"\.ipynb$", "", p.name) for p in written)
    print(f"nbgrader course in {args.dir}: {names}\nnext, in that folder: nbgrader generate_assignment "
          f"{assignment_name(_notebooks(args.notebooks)[0])}  (then autograde the submissions)")
    return 0
