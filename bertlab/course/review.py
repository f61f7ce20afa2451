"""Review: questions from earlier lessons, drawn for spaced practice (notebooks/review.ipynb).

    plan = bertlab.course.review.plan()      # what is due today, from the progress file
    plan                                    # the exercises to try again and the quiz questions drawn
    plan.quiz()                             # those questions as a Quiz; each answer is kept in the progress
    plan.check(1, answer)                   # bertlab.check on the first exercise the plan lists

Two sources: the registry's checkable exercises (answered in the lessons with `bertlab.check`) and the
lessons' end-of-notebook quizzes (read from the notebooks shipped in the package; question K of notebook NN
is "NN.qK" in the progress file). What is due follows the Leitner schedule, the simplest spacing that works:
an item answered wrong is due at once; one answered right comes back after 1, 3, 7, 21, then 60 days, the
interval growing with each right answer in a row and starting over after a wrong one. Quiz questions are
drawn from the lessons a learner has worked on (any attempt kept); with nothing kept yet, from the core path.
Everything is ordered, never random, so the same progress file gives the same plan.
"""

from __future__ import annotations

import ast
import html
import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from .progress import load, record
from .registry import Result, check, exercises, get

__all__ = ["plan", "Plan", "quiz_questions", "INTERVALS", "CORE_PATH"]

INTERVALS = (1, 3, 7, 21, 60)            # days until an item answered right 1, 2, 3, 4, 5+ times in a row is due
CORE_PATH = ("00", "01", "02", "03", "04", "05", "07", "08")
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@lru_cache(maxsize=None)
def quiz_questions(notebook: str) -> tuple:
    """The quiz of lesson `notebook` as written in it: ((question, ((option, correct, why), ...)), ...)."""
    found = sorted(NOTEBOOKS.glob(f"{notebook}_*.ipynb"))
    if not found:
        return ()
    for cell in json.loads(found[0].read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or "Quiz(" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Quiz" and node.args:
                questions = ast.literal_eval(node.args[0])         # literals only: never runs the cell
                return tuple((q, tuple(tuple(o) for o in options)) for q, options in questions)
    return ()


def _day(stamp: str | None) -> date | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").date() if stamp else None
    except (TypeError, ValueError):
        return None


def _due(entry: dict, today: date) -> bool:
    """Leitner: wrong last time → due; right → due once its interval has passed."""
    streak = entry.get("streak")
    if not entry.get("right") or isinstance(streak, bool) or not isinstance(streak, int) or streak < 1:
        return True                        # wrong last time, or a streak this version did not write: practise it
    last = _day(entry.get("last_right"))
    wait = INTERVALS[min(streak, len(INTERVALS)) - 1]
    return last is None or today >= last + timedelta(days=wait)


@dataclass(frozen=True)
class Plan:
    """Today's review: exercise ids to try again and quiz question ids ("NN.qK"), in the order to take them."""

    exercises: tuple[str, ...]
    questions: tuple[str, ...]
    studied: tuple[str, ...]              # the lessons the questions were drawn from
    today: date

    def __str__(self) -> str:
        lines = [f"review: {len(self.exercises)} exercise(s) and {len(self.questions)} quiz question(s) due",
                 f"  drawn from lessons {', '.join(self.studied) or 'none'}"]
        for i, ex in enumerate(self.exercises, 1):
            lines.append(f"  exercise {i}: {ex}  {get(ex).title}")
        for q in self.questions:
            nn, k = q.split(".q")
            lines.append(f"  quiz: {q}  (lesson {nn}, question {k})")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f"<pre style='font-size:13px'>{html.escape(str(self))}</pre>"

    def check(self, number: int, answer) -> Result:
        """`bertlab.check` on the plan's exercise `number` (1 = the first listed)."""
        if not self.exercises:
            return Result("review", False, "no exercise is due: answer some in the lessons with bertlab.check, "
                                           "and those to practise come back here", answered=False)
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(self.exercises):
            raise ValueError(f"the plan lists exercises 1 to {len(self.exercises)}; got {number!r}")
        return check(self.exercises[number - 1], answer)

    def answer_box(self):
        """A box to answer the plan's exercises, and any other of the lessons drawn from, without writing a
        cell: pick the exercise, type the answer as Python (12, 0.5, 'word', (3, 7)), press check."""
        import ipywidgets as W

        ids = list(self.exercises) + [e.id for nn in self.studied for e in exercises(nn) if e.id not in self.exercises]
        pick = W.Dropdown(options=[(f"{i}  {get(i).title}"[:90], i) for i in ids], description="exercise",
                          layout=W.Layout(width="min(760px, 100%)"))
        text = W.Text(placeholder="your answer as Python: 12, 0.5, 'word', (3, 7)", description="answer",
                      continuous_update=False, layout=W.Layout(width="min(760px, 100%)"))
        button = W.Button(description="check", button_style="primary")
        said = W.HTML("<span style='color:#57606a'>pick an exercise, type your answer, press check</span>")

        def run(*_):
            said.value = _answer_in_box(pick.value, text.value)
        button.on_click(run)
        text.observe(run, names="value")
        return W.VBox([pick, W.HBox([text, button]), said])

    def quiz(self):
        """The drawn questions as a Quiz (bertlab.viz); the first answer to each is kept in the progress file."""
        from ..viz import Quiz

        if not self.questions:
            raise ValueError("no quiz question is due today: come back tomorrow, or work through a lesson first")
        chosen = []
        for q in self.questions:
            nn, k = q.split(".q")
            text, options = quiz_questions(nn)[int(k) - 1]
            chosen.append((f"({q}) {text}", [list(o) for o in options]))
        quiz = Quiz(chosen, title="Review")
        for i, item in enumerate(self.questions):
            def keep(change, i=i, item=item):
                if change["new"] is not None:                 # an answer is final: the options lock
                    record(item, bool(quiz.questions[i][1][change["new"]][1]))
            quiz.choices[i].observe(keep, names="value")
        return quiz


def plan(exercises_due: int = 3, questions: int = 5, today: date | None = None) -> Plan:
    """What to review today: up to `exercises_due` exercises and `questions` quiz questions (see the module)."""
    for name, value in (("exercises_due", exercises_due), ("questions", questions)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            raise ValueError(f"{name} is how many to draw, a whole number from 0 to 100; got {value!r}")
    if today is None:
        today = date.today()
    elif not isinstance(today, date):
        raise TypeError(f"today is a datetime.date, got {type(today).__name__} {today!r:.40}")
    items = load()["items"]
    known = {e.id for e in exercises()}
    # exercises tried before: wrong last time first (longest ago first), then those whose interval has passed
    tried = [(i, e) for i, e in items.items() if i in known]
    due = [i for i, e in sorted(tried, key=lambda t: (bool(t[1].get("streak")), str(t[1].get("last_try", "")), t[0]))
           if _due(e, today)]
    studied = sorted({i.split(".")[0] for i in items if i in known or ".q" in i})
    sources = [nn for nn in (studied or CORE_PATH) if quiz_questions(nn)]
    # quiz questions: round robin over the lessons, each lesson's questions in order, those due only
    pools = [[f"{nn}.q{k}" for k in range(1, len(quiz_questions(nn)) + 1)
              if f"{nn}.q{k}" not in items or _due(items[f"{nn}.q{k}"], today)] for nn in sources]
    drawn: list[str] = []
    while len(drawn) < questions and any(pools):
        for pool in pools:
            if pool and len(drawn) < questions:
                drawn.append(pool.pop(0))
    return Plan(tuple(due[:exercises_due]), tuple(drawn), tuple(sources), today)


def _answer_in_box(exercise: str | None, typed: str) -> str:
    """What the answer box shows for `typed`: the check's verdict, or why the text is not an answer (HTML)."""
    if not exercise:
        return "<span style='color:#57606a'>no exercise to answer yet: work through a lesson first</span>"
    if not typed.strip():
        return f"<span style='color:#57606a'>type your answer to {html.escape(exercise)} first</span>"
    try:
        answer = ast.literal_eval(typed.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ("<span style='color:#cf222e'>" + html.escape(
            f"{typed.strip()[:40]!r} is not a Python value: write a number (12, 0.5), a text in quotes ('word') "
            f"or a tuple ((3, 7)); an answer that is a function goes in a code cell: plan.check(...)") + "</span>")
    return check(exercise, answer)._repr_html_()
