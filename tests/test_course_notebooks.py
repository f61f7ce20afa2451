"""Every notebook with checkable exercises is a course unit: it opens with its prerequisites and time, asks
for at least two predictions before reveals, has 3 to 6 tagged exercises (at least two checkable, each
check cell naming an exercise that exists, and every registered exercise of the notebook asked), and ends
with a quiz of 4 to 6 questions whose every option is explained (the Quiz widget refuses one that is not).
Static: the notebooks are read, not run (nbval runs them)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import bertlab

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
WITH_EXERCISES = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if bertlab.course.exercises(p.name[:2]))


def cells(path, with_metadata=False):
    raw = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [("".join(c["source"]), c["cell_type"]) + ((c.get("metadata", {}),) if with_metadata else ()) for c in raw]


def test_the_first_notebooks_have_checkable_exercises():
    assert {p.name[:2] for p in WITH_EXERCISES} >= {"00", "01", "02", "03", "04"}


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_a_notebook_opens_with_prerequisites_and_time(path):
    opening = " ".join(s for s, _ in cells(path)[:3])
    assert "Before you start" in opening and "Time:" in opening and "measured" in opening, path.name
    assert "RUNTIME" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_predictions_come_before_reveals(path):
    predicts = [s for s, t in cells(path) if t == "code" and "Predict(" in s]
    assert len(predicts) >= 2, f"{path.name} has {len(predicts)} Predict widgets"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_exercises_are_tagged_and_the_checks_match_the_registry(path):
    nn = path.name[:2]
    source = cells(path)
    tagged = [s for s, t in source if t == "markdown" and re.match(rf"\*\*{nn}\.\d+\*\* · difficulty", s)]
    assert 3 <= len(tagged) <= 6, f"{path.name}: {len(tagged)} tagged exercises"
    asked = {m for s, t in source if t == "code" for m in re.findall(r"bertlab\.check\(['\"](\d\d\.\d+)['\"]", s)}
    registered = {e.id for e in bertlab.course.exercises(nn)}
    assert len(asked) >= 2 and asked == registered, (asked, registered)
    for s, t in source:
        if t == "code" and "bertlab.check(" in s and "answer = None" in s:
            continue
        assert not (t == "code" and "bertlab.check(" in s), f"a check cell must start unanswered:\n{s}"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_the_quiz_has_four_to_six_explained_questions(path):
    pytest.importorskip("ipywidgets")
    quiz_cells = [(s, m) for s, t, m in cells(path, with_metadata=True) if t == "code" and "Quiz(" in s]
    assert len(quiz_cells) == 1, path.name
    assert quiz_cells[0][1].get("jupyter", {}).get("source_hidden"), "hide the quiz's code: it holds the answers"
    quiz_cells = [quiz_cells[0][0]]
    tree = ast.parse(quiz_cells[0])
    *body, last = tree.body
    namespace: dict = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), path.name, "exec"), namespace)
    quiz = eval(compile(ast.Expression(last.value), path.name, "eval"), namespace)
    assert 4 <= len(quiz.questions) <= 6
    assert quiz.answer(0, 0) in (True, False) and quiz.feedback[0].value      # answering shows explanations
