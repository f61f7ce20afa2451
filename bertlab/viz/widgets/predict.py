"""Predict (every notebook): commit to a guess before the reveal, then see the result beside it.

    p = Predict("bertlab-mini's first guess for 'She opened the [MASK] and walked in.'?",
                choices=["door", "window", "room", "car"],
                answer=lambda: bertlab.fill_mask(mini, mini_tok, "She opened the [MASK] and walked in.").guesses[0][0].token)
    p                                   # shows the question; nothing about the answer
    p.choice.value = "window"           # what a click does (a number question's box takes text: "12")
    p.commit.click()                    # now (and only now) `answer` runs and the reveal shows
    p.result, p.matched                 # 'door', False

Why a guess first: a prediction made before seeing the result is what makes the result teach (a
surprise sticks; a result read passively confirms whatever one half-expected). So nothing of the result
is shown, or even computed when `answer` is a function, before the learner commits, and the prediction
cannot be changed afterwards. Under nbval nobody clicks: the widget draws its question and waits,
blocking nothing.

`answer` is the value the cell computed, or a function of no arguments computing it on commit. With
`choices` it should be one of them; a number question (`number=True`) counts a prediction within
`tolerance` (relative) as matched. `explain` is shown with the reveal.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any, Sequence

from ..views import View
from ..views import controls as W

__all__ = ["Predict", "markup"]


def markup(text: str) -> str:
    """Plain text as HTML: escaped, `code` in backticks as <code>, **bold** as <b>."""
    out = html.escape(str(text), quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


class Predict:
    """A question, choices (or a number box) and a commit button; the result shows only after commit."""

    def __init__(self, question: str, choices: Sequence[str] | None = None, answer: Any = None, *,
                 number: bool = False, tolerance: float = 0.1, explain: str = "", unit: str = ""):
        if not isinstance(question, str) or not question.strip():
            raise ValueError("Predict needs a question (a non-empty str)")
        if (choices is None) == (not number):
            raise ValueError("give Predict either choices=[...] (two or more) or number=True, not both or neither")
        if choices is not None:
            choices = [str(c) for c in choices]
            if len(choices) < 2 or len(set(choices)) != len(choices):
                raise ValueError(f"choices must be two or more different options, got {choices!r}")
        if answer is None:
            raise ValueError("Predict needs the answer it reveals: the value the cell computed, or a function "
                             "of no arguments that computes it on commit")
        self.question, self.choices, self.number, self.unit = question, choices, number, unit
        self.tolerance, self.explain = float(tolerance), explain
        self._answer: Any = answer
        self.result: Any = None            # the revealed answer; None until the learner commits
        self.prediction: Any = None        # what they committed to
        self.matched: bool | None = None
        self.committed = False

        self.prompt = W.HTML(f"<b>Predict first.</b> {markup(question)}")
        if choices is not None:
            self.choice = W.RadioButtons(options=choices, value=None, layout=W.Layout(width="auto"))
            box = self.choice
        else:               # a text box, not FloatText: a number box cannot start empty (NaN is not valid JSON)
            self.choice = W.Text(value="", placeholder="your number", description=unit or "",
                                 layout=W.Layout(width="240px"))
            box = self.choice
        self.commit = W.Button(description="commit my prediction", button_style="primary", icon="lock",
                               layout=W.Layout(width="auto"))
        self.commit.on_click(lambda _: self._commit())
        self.reveal = W.HTML("")
        self.view = View(W.VBox([self.prompt, box, self.commit, self.reveal],
                           layout=W.Layout(border="1px solid #d0d7de", padding="6px 10px", margin="4px 0")))

    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        state = f"committed {self.prediction!r}, result {self.result!r}" if self.committed else "waiting"
        return f"Predict({self.question!r}: {state})"

    def _commit(self) -> None:
        if self.committed:
            return
        value = self.choice.value
        if self.choices is not None and value is None:
            self._say("pick one of the options first: the result shows once you have committed", error=True)
            return
        if self.number:
            value = _number(value)
            if value is None:
                self._say("type a number first (such as 12 or 0.5): the result shows once you have committed",
                          error=True)
                return
        try:
            result = self._answer() if callable(self._answer) else self._answer
        except Exception as e:          # noqa: BLE001 -- a widget shows a message, never a traceback
            self._say(f"the result could not be computed: {type(e).__name__}: {e}", error=True)
            return
        self.prediction, self.result, self.committed = value, result, True
        self.matched = self._matches(value, result)
        self.choice.disabled = self.commit.disabled = True
        self.commit.description = "committed"
        mark = "✓ as you predicted" if self.matched else "✗ not what you predicted"
        shown = _fmt(result, self.unit)
        self.reveal.value = (f'<div style="margin-top:4px">you predicted <b>{markup(_fmt(value, self.unit))}</b> · '
                             f'the result: <b>{markup(shown)}</b> · '
                             f'<span style="color:{"#1a7f37" if self.matched else "#cf222e"}">{mark}</span></div>'
                             + (f'<div style="color:#33475b;margin-top:2px">{markup(self.explain)}</div>'
                                if self.explain else ""))

    def _matches(self, value, result) -> bool:
        if self.choices is not None:
            return str(value) == str(result)
        try:
            r = float(result)
        except (TypeError, ValueError):
            return False
        return abs(value - r) <= self.tolerance * max(abs(r), 1e-12)

    def _say(self, text: str, error: bool = False) -> None:
        # a nudge, not a failure: amber, not the red error line of the model widgets (the browser test
        # flags that red as a broken widget)
        self.reveal.value = f'<div style="color:{"#8a4b00" if error else "#33475b"}">{markup(text)}</div>'


def _number(text) -> float | None:
    """The number typed in the box ("1,234", "0.5", "12 %" all read), or None."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    cleaned = str(text).replace(",", "").replace("_", "").replace("%", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _fmt(value, unit: str = "") -> str:
    if isinstance(value, float):
        text = f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    else:
        text = str(value)
    return f"{text} {unit}".strip()

