"""interact: a notebook's own small live cell on the view base, drawn the same in every front end and the book.

    from bertlab.viz import interact
    from bertlab.viz.views import controls as W

    def pieces(text, split="WordPiece"):
        return HTML(...)                         # a plotly figure, HTML (IPython's HTML) or plain text
    interact(pieces, text="The snorkelweed grew.", split=W.ToggleButtons(options=["WordPiece", "BPE"]))

Why not `ipywidgets.interactive`: it prints into an `Output` area, which shows nothing in VS Code, breaks plotly
in Colab, does not exist in marimo and is a still picture in the book. An `Interactive` is one view (views.base):
its controls and its pane are drawn by `js/interact.js`, and Python drives it exactly as a person does
(`w.controls["split"].value = "BPE"`; then `w.result`, `w.figure`, `w.html` hold the answer, synchronously).

Live in the book, without a kernel: when every control that could be moved has few values (menus, toggle
buttons, checkboxes, sliders; at most `precompute` combinations, 64 by default, and `max_bytes` of answers),
the function's answer to each combination is computed when the view is built and saved with it
(`view.data["answers"]`), so the page looks each change up. A text box cannot be enumerated: its current text
is part of every saved answer, and typing a new one in the book says that it needs a live notebook. In a
kernel the function always runs again on a change, as ipywidgets' `interact` does: the table is for the book.

The function's HTML is shown as it is in a notebook (markup with a script goes into a sandboxed frame, as the
views do), so it should escape the text a person types (`html.escape`); the book cleans every saved answer with
the allowlist it uses for all notebook HTML (bertlab/book/sanitize.py).
"""

from __future__ import annotations

import html
import inspect
import itertools
import json
import logging
import math
import numbers
from typing import Any, Callable

from . import controls as C
from .base import View, _jsonable, pack_figure, show_figure, show_html

logger = logging.getLogger(__name__)

__all__ = ["Interactive", "interact"]

PRECOMPUTE = 64                 # at most this many combinations of control values are saved for the book
MAX_BYTES = 4_000_000           # ... and at most this many bytes of answers (JSON and binary buffers)
PRECOMPUTE_NEVER = 2**63        # the count of a slider with more values than a float can say: never enumerated

_VALUED = (C.Text, C._Selection, C.Checkbox, C.IntSlider)     # the controls that carry a value
_KINDS = ("a control from bertlab.viz.views.controls (Text, Dropdown, ToggleButtons, IntSlider, "
          "SelectionSlider, Checkbox, ...), a str (a text box), a bool (a checkbox), a list of options (a menu) "
          "or a tuple (min, max[, step]) (a slider)")


def _control(name: str, spec) -> C.Element:
    """A control for the parameter `name`: the control given, or one made from an abbreviation."""
    if isinstance(spec, C.Element):
        if not isinstance(spec, _VALUED):
            raise ValueError(f"{name!r} is a {type(spec).__name__}, which has no value to pass: give {_KINDS}")
        if spec._view is not None:
            raise ValueError(f"the control for {name!r} is already part of another view: make a new one")
        if not spec.description:
            spec.description = name
        if isinstance(spec, C.IntSlider) and spec.max < spec.min:     # it would pin every value to max, silently
            raise ValueError(f"{name!r} is a slider from {spec.min} to {spec.max}: its max is below its min; swap them")
        if isinstance(spec, C._Selection):
            if not spec.values:
                raise ValueError(f"{name!r} has no options: give at least one")
            if spec.value is None:              # ipywidgets' toggle buttons start at the first option: so here
                spec.value = spec.values[0]
        return spec
    if type(spec).__module__.startswith("ipywidgets"):
        raise ValueError(f"{name!r} is an ipywidgets control, which only JupyterLab draws: use the same one from "
                         f"bertlab.viz.views.controls (same name and arguments), so it draws everywhere")
    if isinstance(spec, bool):
        return C.Checkbox(value=spec, description=name)
    if isinstance(spec, str):
        return C.Text(value=spec, description=name, layout={"width": "90%"})    # redrawn as one types
    if (isinstance(spec, tuple) and 2 <= len(spec) <= 3 and all(isinstance(x, numbers.Real)
                                                                and not isinstance(x, bool) for x in spec)):
        return _slider(name, spec)          # ipywidgets' abbreviation: (min, max) or (min, max, step) is a slider
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise ValueError(f"{name!r} has an empty list of options: give at least one")
        return C.Dropdown(options=list(spec), description=name)
    raise ValueError(f"{name!r} must be {_KINDS}, got {spec!r} ({type(spec).__name__})")


def _slider(name: str, spec: tuple) -> C.Element:
    """A slider for ipywidgets' `(min, max)` / `(min, max, step)`: whole numbers make an IntSlider, else a FloatSlider
    (starting, as ipywidgets' does, at the middle of the range)."""
    if not all(math.isfinite(x) for x in spec):
        raise ValueError(f"{name!r}: a slider's (min, max, step) must be finite numbers, got {spec!r}")
    lo, hi, *rest = spec
    if hi < lo:
        raise ValueError(f"{name!r}: (min, max) = {spec[:2]!r} has max below min: give ({hi!r}, {lo!r})")
    if rest and rest[0] <= 0:
        raise ValueError(f"{name!r}: the step {rest[0]!r} must be above 0")
    if all(isinstance(x, numbers.Integral) for x in spec):
        step = int(rest[0]) if rest else 1
        return C.IntSlider(value=int(lo) + (int(hi) - int(lo)) // 2 // step * step, min=int(lo), max=int(hi),
                           step=step, description=name)
    step = float(rest[0]) if rest else (hi - lo) / 10 or 0.1
    return C.FloatSlider(value=lo + round((hi - lo) / 2 / step) * step, min=float(lo), max=float(hi), step=step,
                         description=name)


def _check_signature(fn: Callable, names: list[str]) -> None:
    """Every control names a parameter of `fn`, and every parameter without a default has a control."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):             # a builtin without a signature: its call will say
        return
    what = getattr(fn, "__name__", "the function")
    for n, p in params.items():
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            raise ValueError(f"{what} takes {n!r} by position only: interact passes every value by name")
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        takes = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        for n in names:
            if n not in takes:
                raise ValueError(f"{what} has no parameter {n!r}: its parameters are "
                                 f"{', '.join(takes) or '(none)'}")
    for n, p in params.items():
        if (p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in names):
            raise ValueError(f"{what} needs {n!r}: give it a control ({n}=...)")


def _count(ctrl: C.Element) -> int | None:
    """How many values a person can give this control, or None for a text box (any text)."""
    if isinstance(ctrl, C.Text):
        return None
    if isinstance(ctrl, C._Selection):
        return len(ctrl.values)
    if isinstance(ctrl, C.Checkbox):
        return 2
    step = ctrl.step or 1
    if not step > 0:
        return 1
    span = (ctrl.max - ctrl.min) / step       # inf for a huge range in tiny steps: too many to save
    return max(1, int(math.floor(span + 1e-9)) + 1) if math.isfinite(span) else PRECOMPUTE_NEVER


def _choices(ctrl: C.Element) -> list | None:
    """Every value a person can give this control (call it once `_count` said they are few), or None for text."""
    if isinstance(ctrl, C.Text):
        return None
    if isinstance(ctrl, C._Selection):
        return ctrl.values
    if isinstance(ctrl, C.Checkbox):
        return [False, True]
    step = ctrl.step or 1
    return [ctrl._cast(round(ctrl.min + i * step, 10)) for i in range(_count(ctrl))]


def _key_part(ctrl: C.Element, value) -> Any:
    """How one control's value enters a saved answer's key; js/interact.js's `part` is the same rule."""
    if isinstance(ctrl, C.Text):
        return value
    if isinstance(ctrl, C._Selection):
        vals = ctrl.values
        return vals.index(value) if value in vals else None
    if isinstance(ctrl, C.Checkbox):
        return bool(value)
    return int(round((value - ctrl.min) / (ctrl.step or 1)))


class Interactive:
    """A function of some controls, drawn live: its plotly figure, HTML or text answers every change.

    `Interactive(fn, {"name": control, ...}, precompute=64, max_bytes=4_000_000)`; `interact(fn, **controls)`
    is the short form. `controls[name]` is each control, `result` the function's last return value (with
    `figure`, `html` or `text` set by its kind), `error` the last error's message (None when it worked), and
    `saved` how many answers are kept for the book. `view` is the anywidget.
    """

    def __init__(self, fn: Callable, controls: dict, *, precompute: int = PRECOMPUTE, max_bytes: int = MAX_BYTES):
        if not callable(fn):
            raise ValueError(f"interact takes a function first (one that returns a plotly figure, HTML or text), "
                             f"got {fn!r} ({type(fn).__name__})")
        if not isinstance(controls, dict) or not controls:
            raise ValueError("interact needs at least one control: interact(fn, text='a sentence', layer=W.IntSlider(...))")
        for name, limit in (("precompute", precompute), ("max_bytes", max_bytes)):
            if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
                raise ValueError(f"{name} must be a whole number of at least 0 (0: nothing saved for the book), "
                                 f"got {limit!r}")
        for name in controls:
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"a control's name is a parameter of the function, got {name!r}")
        _check_signature(fn, list(controls))
        self.fn = fn
        self.controls: dict[str, C.Element] = {n: _control(n, c) for n, c in controls.items()}
        if len({id(c) for c in self.controls.values()}) < len(self.controls):
            raise ValueError("each parameter needs its own control: the same control was given twice")
        self.message = C.HTML("")
        self.out = C.Output()
        self.result: Any = None
        self.error: str | None = None
        # the answers saved for the book, built here only: a change in a kernel runs the function and keeps nothing
        self._answers: dict[str, dict] = {self._key(self.values): self._answer(self.values)}
        self._precompute(int(precompute), int(max_bytes))
        self.view = View(C.VBox([*self.controls.values(), self.message, self.out]), module="interact")
        self._show(self._answers[self._key(self.values)])
        self.view.data = {"controls": [c.id for c in self.controls.values()],
                          "answers": {k: self._saved(a) for k, a in self._answers.items()}}
        self._answers = {}
        for c in self.controls.values():
            c.observe(self._changed, names="value")

    # -- display: shows as its view
    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", "fn")
        return f"interact({name}, {', '.join(self.controls)})"

    # -- what Python reads back
    @property
    def values(self) -> dict:
        """Each control's current value, by parameter name."""
        return {n: c.value for n, c in self.controls.items()}

    @property
    def figure(self):
        """The plotly figure shown, or None."""
        return self.out.figure

    @property
    def html(self) -> str | None:
        """The HTML shown (the function's HTML, or its text escaped in a <pre>), or None."""
        return self.out.html

    @property
    def text(self) -> str | None:
        """The function's answer when it was plain text, else None."""
        return self.result if isinstance(self.result, str) else None

    @property
    def saved(self) -> int:
        """How many answers the view keeps for the book (1: only the one shown; the book then needs a kernel)."""
        return len(self.view.data.get("answers", {}))

    def refresh(self) -> None:
        """Run the function again for the current values (say, after the data it reads changed)."""
        self._changed(None)

    # -- computing
    def _key(self, values: dict) -> str:
        parts = [_key_part(self.controls[n], values[n]) for n in self.controls]
        return json.dumps(parts, separators=(",", ":"), ensure_ascii=False)

    def _answer(self, values: dict) -> dict:
        """Run the function on `values`: its result and what the pane and the message line show."""
        try:
            result = self.fn(**values)
            content = self._content(result)
            answer = {"result": result, "error": None, "content": content, "message": ""}
        except Exception as e:                  # the function's error is a message in the view, not a traceback
            logger.debug("interact: %r failed", values, exc_info=True)
            first = (str(e).strip().splitlines() or [""])[0]
            text = first if isinstance(e, ValueError) else f"{type(e).__name__}: {first}".rstrip(": ")
            answer = {"result": None, "error": text, "content": None,
                      "message": ('<div style="color:#9f1c1c;background:#fdecea;padding:4px 8px;border-radius:4px">'
                                  f"{html.escape(text, quote=False)}</div>")}
        return answer

    def _content(self, result) -> tuple | None:
        """What the pane shows for a return value: ("figure", fig), ("html", markup) or None (nothing)."""
        if result is None:
            return None
        if hasattr(result, "to_plotly_json") and hasattr(result, "_data"):
            return ("figure", result)
        if isinstance(result, (str, numbers.Number)):
            text = str(result)
            return ("html", f'<pre class="bl-text" style="margin:0;white-space:pre-wrap">'
                            f"{html.escape(text, quote=False)}</pre>", text)
        if callable(getattr(result, "_repr_html_", None)):
            markup = result._repr_html_()
            if isinstance(markup, str):
                return ("html", markup, "")
        raise ValueError(f"{getattr(self.fn, '__name__', 'the function')} returned a {type(result).__name__}: "
                         "return a plotly figure, HTML (IPython.display.HTML) or text (a str)")

    def _precompute(self, limit: int, max_bytes: int) -> None:
        """Every combination of the controls' values (text boxes as they are), if there are at most `limit` and
        their answers fit in `max_bytes`; otherwise only the current one is kept."""
        names = list(self.controls)
        n_combos = math.prod(n for n in (_count(self.controls[n]) for n in names) if n is not None)
        if n_combos < 2 or n_combos > limit:
            return
        choices = [_choices(self.controls[n]) for n in names]
        current = self.values
        size = 0
        for combo in itertools.product(*[c if c is not None else [current[n]] for n, c in zip(names, choices)]):
            values = dict(zip(names, combo))
            key = self._key(values)
            answer = self._answers.get(key)
            if answer is None:
                answer = self._answers[key] = self._answer(values)
            size += self._size(answer)
            if size > max_bytes:
                keep = self._key(current)
                self._answers = {keep: self._answers[keep]}
                logger.info("interact: the answers pass %d bytes; the book will need a kernel", max_bytes)
                return

    def _pane(self, answer: dict) -> dict | None:
        """The pane's content as the module gets it (a packed figure, or HTML)."""
        c = answer["content"]
        if c is None:
            return None
        if c[0] == "figure":
            if "packed" not in answer:
                answer["packed"] = {"figure": pack_figure(c[1])}
            return answer["packed"]
        return {"html": c[1], "frame": "<script" in c[1].lower(), "plain": c[2]}

    def _size(self, answer: dict) -> int:
        pane = self._pane(answer)
        buffers = 0

        def walk(o):
            nonlocal buffers
            if isinstance(o, memoryview):
                buffers += o.nbytes
            elif isinstance(o, dict):
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(pane)
        return len(_jsonable(pane)) + buffers + len(answer["message"])

    def _saved(self, answer: dict) -> dict:
        """One answer as the book's page applies it: the pane's content and the message line's value."""
        return {"content": {self.out.id: self._pane(answer)}, "nodes": {self.message.id: {"value": answer["message"]}}}

    # -- showing
    def _show(self, answer: dict) -> None:
        self.result, self.error = answer["result"], answer["error"]
        self.message.value = answer["message"]
        c = answer["content"]
        if c is None:
            show_figure(self.out, None)
        elif c[0] == "figure":
            show_figure(self.out, c[1])
        else:
            show_html(self.out, c[1], plain=c[2])

    def _changed(self, change) -> None:
        """A control moved (a person, or Python setting `.value`): the function runs again, as in ipywidgets."""
        with self.view.hold_sync():
            self._show(self._answer(self.values))


def interact(fn: Callable, **controls) -> Interactive:
    """`fn` drawn live with a control per parameter: `interact(fn, text="a sentence", layer=W.IntSlider(...))`.

    Each keyword names a parameter of `fn` and gives its control (bertlab.viz.views.controls), or an
    abbreviation: a str makes a text box, a bool a checkbox, a list a menu, and (as in ipywidgets) a tuple
    `(min, max)` or `(min, max, step)` of numbers a slider (IntSlider for whole numbers). `fn` returns a plotly figure, HTML
    or text. Small enough tables of answers are saved for the book (see `Interactive`)."""
    return Interactive(fn, controls)
