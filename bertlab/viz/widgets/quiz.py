"""Quiz (the end of every notebook): multiple-choice questions on the paper's ideas, every option explained.

    q = Quiz([
        ("Why does BERT mask tokens instead of predicting the next word?",
         [("A left-to-right model sees only the left context", False, "true, but ..."),
          ("So every layer can use the words on both sides", True, "a bidirectional model would ..."),
          ...]),
        ...], title="Notebook 04")
    q                                    # the questions, nothing else
    q.answer(0, 1)                       # what clicking option 1 of question 0 does (or set q.choices[0].value)
    q.feedback[0].value                  # every option of question 0 with ✓/✗ and its explanation
    q.score                              # (right so far, answered so far, questions)

Why every option is explained, not only the right one: a wrong option a learner picked is a belief they
hold, and the explanation of why it is wrong is the part of the quiz that teaches (the HuggingFace course
does the same). An answer is final, so the score means something: the options lock once one is chosen.

The options are shown shuffled (`shuffle=True`), so an author may write the right one first without the
position giving it away; the order is fixed per question (seeded by its text), so every reader and every
test sees the same one. `q.questions` holds them in the order shown. In a notebook, hide the quiz cell's
source (JupyterLab: the cell's metadata `"jupyter": {"source_hidden": true}`), which spells out the answers.
"""

from __future__ import annotations

import random
import zlib
from typing import Sequence

from ..views import View
from ..views import controls as W
from .predict import markup

__all__ = ["Quiz"]


class Quiz:
    """Questions, each with options (text, correct, why); choosing one shows every option's explanation."""

    def __init__(self, questions: Sequence, title: str = "Quiz", shuffle: bool = True):
        self.questions = self._validate(questions)
        if shuffle:
            for text, options in self.questions:
                random.Random(zlib.crc32(text.encode("utf-8"))).shuffle(options)
        self.title = title
        self.choices: list[W.RadioButtons] = []
        self.feedback: list[W.HTML] = []
        self.picked: list[int | None] = [None] * len(self.questions)
        rows = [W.HTML(f"<h3 style='margin:4px 0'>{markup(title)}</h3>")]
        for i, (text, options) in enumerate(self.questions):
            radio = W.RadioButtons(options=[(o[0], k) for k, o in enumerate(options)], value=None,
                                   layout=W.Layout(width="auto"))
            radio.observe(lambda change, i=i: self._answered(i, change["new"]), names="value")
            fb = W.HTML("")
            self.choices.append(radio)
            self.feedback.append(fb)
            rows += [W.HTML(f"<b>{i + 1}.</b> {markup(text)}"), radio, fb]
        self.summary = W.HTML(self._summary())
        rows.append(self.summary)
        self.view = View(W.VBox(rows, layout=W.Layout(border="1px solid #d0d7de", padding="6px 10px", margin="4px 0")))

    @staticmethod
    def _validate(questions) -> list:
        if isinstance(questions, (str, bytes)) or not questions:
            raise ValueError("Quiz takes a list of (question, options) pairs, each option (text, correct, why)")
        out = []
        for n, item in enumerate(questions, 1):
            try:
                text, options = item
                options = [(str(t), bool(c), str(w)) for t, c, w in options]
            except (TypeError, ValueError):
                raise ValueError(f"question {n}: write it as (question, [(option, correct, why), ...])") from None
            if len(options) < 2:
                raise ValueError(f"question {n} ({text!r}) needs at least two options")
            if sum(c for _, c, _ in options) != 1:
                raise ValueError(f"question {n} ({text!r}) must have exactly one correct option, "
                                 f"has {sum(c for _, c, _ in options)}")
            if not all(w.strip() for _, _, w in options):
                raise ValueError(f"question {n} ({text!r}): every option needs its explanation (why it is right "
                                 "or wrong), since the explanations are what the quiz teaches")
            out.append((str(text), options))
        return out

    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        right, answered, total = self.score
        return f"Quiz({self.title!r}: {answered} of {total} answered, {right} right)"

    def answer(self, question: int, option: int) -> bool:
        """Choose `option` (0-based) for `question` (0-based), as a click does; returns whether it is right."""
        if not 0 <= question < len(self.questions):
            raise IndexError(f"question {question} does not exist: this quiz has questions 0 to {len(self.questions) - 1}")
        options = self.questions[question][1]
        if not 0 <= option < len(options):
            raise IndexError(f"question {question} has options 0 to {len(options) - 1}, not {option}")
        self.choices[question].value = option
        return self.picked[question] is not None and options[self.picked[question]][1]

    def _answered(self, i: int, k) -> None:
        if k is None or self.picked[i] is not None:
            return
        self.picked[i] = k
        self.choices[i].disabled = True
        lines = []
        for j, (text, correct, why) in enumerate(self.questions[i][1]):
            mark = "✓" if correct else "✗"
            color = "#1a7f37" if correct else "#cf222e"
            yours = " <i>(your answer)</i>" if j == k else ""
            lines.append(f'<li><span style="color:{color}">{mark}</span> <b>{markup(text)}</b>{yours}: '
                         f"{markup(why)}</li>")
        verdict = "right" if self.questions[i][1][k][1] else "not quite"
        self.feedback[i].value = (f'<div style="margin:2px 0 8px 0"><b>{verdict}.</b>'
                                  f'<ul style="margin:2px 0">{"".join(lines)}</ul></div>')
        self.summary.value = self._summary()

    @property
    def score(self) -> tuple[int, int, int]:
        """(right, answered, questions)."""
        answered = [(i, k) for i, k in enumerate(self.picked) if k is not None]
        right = sum(self.questions[i][1][k][1] for i, k in answered)
        return right, len(answered), len(self.questions)

    def _summary(self) -> str:
        right, answered, total = self.score
        if not answered:
            return f"<i>{total} questions: choose an answer to see every option explained.</i>"
        return f"<b>{right} of {answered} answered right</b> ({total - answered} to go)" if answered < total \
            else f"<b>{right} of {total} right.</b>"
