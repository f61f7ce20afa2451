"""bertlab.check and bertlab.hint: every check passes its solution (solutions/, the instructor pack) and
rejects the known wrong answers with the right diagnosis; bad ids and answers get clear messages; no answer
sits readable in the package."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import bertlab
from bertlab.course import registry

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions"


def solution_module(notebook: str):
    path = SOLUTIONS / f"nb{notebook}.py"
    assert path.is_file(), f"exercise checks of notebook {notebook} have no solutions file {path}"
    spec = importlib.util.spec_from_file_location(f"solutions_nb{notebook}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ALL = [e.id for e in bertlab.course.exercises()]


def test_there_are_checkable_exercises_and_each_is_tagged():
    assert len(ALL) >= 4
    for e in bertlab.course.exercises():
        assert e.difficulty in (1, 2, 3) and e.importance in (1, 2, 3) and 1 <= e.minutes <= 120, e
        assert len(e.hints) >= 2, f"{e.id}: hints come in tiers, at least two"
        assert e.title and e.expects


@pytest.mark.slow
@pytest.mark.parametrize("exercise", ALL)
def test_the_solution_passes_and_every_known_wrong_answer_fails_with_its_diagnosis(exercise):
    nn, k = exercise.split(".")
    module = solution_module(nn)
    solve = getattr(module, f"ex_{nn}_{k}", None)
    wrongs = getattr(module, f"wrong_{nn}_{k}", None)
    assert solve and wrongs, f"solutions/nb{nn}.py needs ex_{nn}_{k}() and wrong_{nn}_{k}()"
    result = bertlab.check(exercise, solve())
    assert result.right and result.answered, str(result)
    known = wrongs()
    assert known, f"{exercise}: at least one known wrong answer"
    for answer, words in known:
        verdict = bertlab.check(exercise, answer)
        assert not verdict.right, f"{exercise} accepted the wrong answer {answer!r}"
        assert words.lower() in str(verdict).lower(), f"{exercise}, {answer!r}: expected {words!r} in: {verdict}"


def test_none_is_not_answered_yet_and_not_an_error():
    r = bertlab.check("00.1", None)
    assert not r.right and not r.answered and "not answered yet" in str(r) and "hint('00.1')" in str(r)


def test_an_unknown_exercise_lists_the_ones_that_exist():
    with pytest.raises(KeyError) as e:
        bertlab.check("00.99", 1)
    assert "00.1" in str(e.value) and "00.99" in str(e.value)
    with pytest.raises(TypeError, match="'04.3'"):
        bertlab.check(3, 1)
    with pytest.raises(KeyError):
        bertlab.hint("nope")
    assert bertlab.check("0.4", "cola").exercise == "00.4"       # "0.4" is read as "00.4"


def test_a_wrong_type_of_answer_says_what_the_exercise_takes():
    r = bertlab.check("00.1", "a lot")
    assert not r.right and r.kind == "wrong type" and "int" in r.message


def test_hints_come_in_tiers_and_a_bad_level_says_which_exist():
    e = registry.get("00.1")
    first, last = bertlab.hint("00.1"), bertlab.hint("00.1", level=len(e.hints))
    assert first.level == 1 and "level=2" in str(first) and "last hint" in str(last)
    with pytest.raises(ValueError, match="hints 1 to"):
        bertlab.hint("00.1", level=len(e.hints) + 1)


def test_a_result_prints_as_one_line_and_shows_in_html():
    r = registry.Result("00.1", False, "look again", kind="off by a factor of 2")
    assert str(r).startswith("✗ 00.1") and "off by a factor of 2" in str(r) and "<div" in r._repr_html_()
    assert not r and registry.Result("00.1", True, "ok")


def test_registering_an_id_twice_or_a_bad_tag_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        registry.exercise("00.1", "again", difficulty=1, importance=1, minutes=1, expects="x", hints=["h"])(
            lambda a: registry.right())
    with pytest.raises(ValueError, match="difficulty"):
        registry.exercise("77.1", "t", difficulty=5, importance=1, minutes=1, expects="x", hints=["h"])
    with pytest.raises(ValueError, match="NN.K"):
        registry.exercise("7.1", "t", difficulty=1, importance=1, minutes=1, expects="x", hints=["h"])


def test_hashed_answers_are_normalised_and_salted_per_exercise():
    d = registry.digest("00.4", "Some Task")
    assert registry.matches("00.4", "  'some   task'. ", d)
    assert registry.digest("00.5", "Some Task") != d and "some" not in d


@pytest.mark.slow
def test_no_answer_is_readable_in_the_course_package():
    """Every answer a solution returns that is a word or a longer number must not appear in the checks' source."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "bertlab" / "course").glob("*.py")).lower()
    for exercise in ALL:
        nn, k = exercise.split(".")
        answer = getattr(solution_module(nn), f"ex_{nn}_{k}")()
        if isinstance(answer, str) and len(answer) >= 3:
            assert not re.search(rf"['\"]{re.escape(answer.lower())}['\"]", source), f"{exercise}'s answer is readable"
        if isinstance(answer, int) and abs(answer) >= 1000:
            for spelling in (str(answer), f"{answer:_}", f"{answer:,}"):
                assert spelling not in source, f"{exercise}'s answer {spelling} is readable in bertlab/course"


def test_bertlab_exports_check_and_hint():
    assert bertlab.check is registry.check and bertlab.hint is registry.hint
    assert {"check", "hint"} <= set(bertlab.__all__)
