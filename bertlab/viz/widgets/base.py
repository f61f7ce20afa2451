"""What every widget shares: the model menu, the message line, the Output areas, and safe callbacks.

A widget is a small object around a view (its `.view`, an anywidget); a bare widget at the end of a cell,
or `display(w)`, shows it. Every control is observed on its `value`, as an ipywidget is, so Python drives a
widget exactly as a person does and reads the result back synchronously.

Why it never shows a traceback: every callback runs inside `Widget._run`, which turns any exception into a
one-line message in `w.message`. Why it is fast enough to use while typing: `Widget._forward` keeps the
forward pass of the current text, so a slider or a toggle reuses it.

Every widget is drawn by a view (bertlab.viz.views: one anywidget, one ES module, the same in JupyterLab,
Notebook 7, VS Code, Colab, marimo and the book). Its controls are the view's controls, spelled as ipywidgets
spells them; its figures go into `Output` panes (`show_figure`), which hold the go.Figure for Python to read
and send the module plotly JSON with binary arrays. Widgets do no model maths: every number comes from a
public function of bertlab.probe.
"""

from __future__ import annotations

import contextlib
import html
import logging
import numbers
import os
from typing import Any, Callable, Iterator

import plotly.graph_objects as go

from ... import probe
from ...checkpoint import load
from ..figures.look import check_index
from ..views import View
from ..views import controls as W
from ..views import show_figure as _show_figure
from ..views import show_html as _show_html

logger = logging.getLogger(__name__)

__all__ = ["Widget", "load_model", "model_options", "show_figure", "show_html", "controls_row", "MODEL_NAMES",
           "DISPLAY_NAMES", "WITH_HEADS", "WIDE", "LOADED"]

MODEL_NAMES = ("bertlab-mini", "bertlab-tiny", "minilm")
DISPLAY_NAMES = {"bertlab-mini": "bertlab-mini", "bertlab-tiny": "bertlab-tiny", "minilm": "MiniLM"}
WITH_HEADS = "bertlab-mini"             # the bundled model pre-trained with both MLM and NSP heads on real English
WIDE = {"width": "95%"}                 # a text box's width (a dict: views and ipywidgets both take it)


def model_options() -> list[str]:
    """The model menu: the bundled models, then the BERTs already in the local HuggingFace cache."""
    from ...hub import cached_models
    return list(MODEL_NAMES) + [m for m in cached_models() if m not in MODEL_NAMES]


LOADED: dict[str, tuple] = {}           # name or path → (model, tokenizer), shared by every widget


def load_model(name: str) -> tuple:
    """`bertlab.load(name)`, once per process: every widget that names the same model shares it."""
    if name not in LOADED:
        LOADED[name] = load(name)
    return LOADED[name]


# ---- rendering: the view base's show_figure and show_html (bertlab.viz.views) ----------------------------

show_figure = _show_figure
show_html = _show_html


def controls_row(*children):
    """Controls side by side, wrapping onto the next line where the notebook is narrow."""
    return W.HBox(list(children), layout=W.Layout(flex_flow="row wrap", align_items="center"))


# ---- constructor arguments, checked where the widget is built ------------------------------------------

def text_arg(name: str, value) -> str:
    """A text box's starting text: a str (None: empty). Anything else is a ValueError naming the argument,
    rather than an ipywidgets TraitError from inside the text box."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str (the text the widget starts with), got {value!r} "
                         f"({type(value).__name__})")
    return value


def whole_arg(name: str, value, low: int, high: int | None = None, what: str = "") -> int:
    """A whole-number argument in low … high, or a ValueError naming it (a slider would silently clamp it)."""
    span = f"from {low} to {high}" if high is not None else f"of at least {low}"
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low
            or (high is not None and value > high)):
        raise ValueError(f"{name} must be a whole number {span}{what}, got {value!r}")
    return int(value)


# ---- the base class ----------------------------------------------------------------------------------

class Widget:
    """What every widget shares: the model and tokenizer, a message line, a figure, safe callbacks.

    Subclasses build their controls, put them in `self.view`, and implement `_update()`, which recomputes
    from the current inputs and may raise `ValueError` with a message for the reader.
    """

    default_model = "minilm"
    module: str = "view"                    # the ES module that draws it: bertlab/viz/views/js/<module>.js

    def __init__(self, model=None):
        self._kit = W
        self.message = W.HTML(value="")
        self.error: str | None = None       # the last interaction's error message, None when it worked
        self.out = W.Output()
        self.figure: go.Figure | None = None
        self._quiet = 0                     # > 0 while the widget sets its own controls: no refresh
        self._fwd_key = None
        self._fwd = None
        self._custom: dict[str, tuple] = {}
        self._sliders: str | None = None    # which sliders `_layer_sliders` made, so a new model can fit them
        name = self._name_for(model if model is not None else self.default_model)
        options = model_options()
        options += [n for n in [name] if n not in options]
        self.model_select = W.Dropdown(options=options, value=name, description="model")
        self.switch = W.Button(description=f"switch to {WITH_HEADS}", button_style="info",
                               layout=W.Layout(display="none", width="auto"))
        self.switch.on_click(lambda _: self._run(self._switch))
        self.model = self.tokenizer = None
        self._model_error: str | None = None
        self._load(name)
        self.model_select.observe(lambda change: self._run(self._change_model), names="value")

    # -- display: the widget shows as its view
    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.view)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r})"

    # -- the model
    def _name_for(self, model) -> str:
        if isinstance(model, (str, os.PathLike)):
            return str(model)
        if isinstance(model, tuple) and len(model) == 2:
            m, tokenizer = model
            probe.base_model(m)                         # a ValueError saying what a model is, for anything else
            if not callable(tokenizer) or not isinstance(getattr(tokenizer, "vocab_size", None), int):
                raise ValueError(f"the second item of the (model, tokenizer) pair must be a bertlab Tokenizer, "
                                 f"got {type(tokenizer).__name__}: pass bertlab.load(...)'s pair as it is")
            label = f"custom {type(m).__name__} (L{m.config.num_hidden_layers} H{m.config.hidden_size})"
            self._custom[label] = model
            return label
        raise ValueError(f"model must be a name ({', '.join(MODEL_NAMES)}), a checkpoint directory, or a "
                         f"(model, tokenizer) pair, got {type(model).__name__}")

    def _load(self, name: str) -> None:
        try:
            self.model, self.tokenizer = self._custom[name] if name in self._custom else load_model(name)
            probe.check_pair(self.model, self.tokenizer)   # another model's tokenizer: refused, not guessed with
            self._model_error = None
        except Exception as e:                       # a missing checkpoint is a message, not a traceback
            logger.debug("loading %s failed", name, exc_info=True)
            self.model = self.tokenizer = None
            self._model_error = f"could not load {name!r}: {e}"

    @property
    def model_name(self) -> str:
        return self.model_select.value

    @property
    def display_name(self) -> str:
        return DISPLAY_NAMES.get(self.model_name, self.model_name)

    @property
    def bert(self):
        return probe.base_model(self.model)

    @property
    def config(self):
        return self.bert.config

    def _change_model(self) -> None:
        self._load(self.model_name)
        self._forget()
        if self.model is not None:
            with self._hold():
                self._model_changed()
        self._update_checked()

    def _model_changed(self) -> None:
        """Adapt the controls to a new model (slider ranges, head grid). Runs with refreshes held.

        The sliders of `_layer_sliders` stretch to the model; one at the last hidden state stays there."""
        cfg = self.config
        if self._sliders == "layer and head":
            self.layer.max, self.head.max = cfg.num_hidden_layers - 1, cfg.num_attention_heads - 1
        elif self._sliders == "hidden states":
            at_end = self.layer.value == self.layer.max
            self.layer.max = cfg.num_hidden_layers
            if at_end:
                self.layer.value = self.layer.max

    def _switch(self) -> None:
        self.model_select.value = WITH_HEADS

    def _offer_switch(self, show: bool) -> None:
        self.switch.layout.display = "" if show else "none"

    def _no_head(self, head: str, task: str) -> ValueError:
        """The error for a model without the head a lesson needs; the button to switch model shows too."""
        self._offer_switch(True)
        return ValueError(f"{self.display_name} has no {head} head, so it cannot {task} — switch to {WITH_HEADS}, "
                          "which was pre-trained with one")

    # -- layer (and head) sliders, fitted to the model and to every model chosen later
    def _layer_sliders(self, layer: int, head: int | None = None) -> None:
        """Make `self.layer`, and with `head` also `self.head`, starting at `layer` (and `head`).

        With a head, `layer` picks one of the L layers (0 … L - 1) and `head` one of its heads. Without,
        `layer` picks one of the L + 1 hidden states, 0 (the embedding output) … L. Negative indexes count
        from the end, as in Python (-1: the last layer, the last head); one past either end is a ValueError.
        """
        for name, value in (("layer", layer), ("head", head)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
                raise ValueError(f"{name} must be a whole number (negative counts from the end), got {value!r}")
        self.layer = self._kit.IntSlider(value=0, min=0, max=0, description="layer")
        if head is not None:
            self.head = self._kit.IntSlider(value=0, min=0, max=0, description="head")
        self._sliders = "layer and head" if head is not None else "hidden states"
        if self.model is None:
            return
        self._model_changed()
        with self._hold():
            self.layer.value = check_index(layer, self.layer.max + 1, "layer", "layers" if head is not None
                                           else "hidden states (0: the embedding output)",
                                           f"{self.display_name} has")
            if head is not None:
                self.head.value = check_index(head, self.head.max + 1, "head", "heads in each layer",
                                              f"{self.display_name} has")

    def _start(self, rows: list, watch: list) -> None:
        """Lay the widget out as `rows` (its `view`), refresh when any control in `watch` changes, draw once."""
        self.view = self._make_view(rows)
        self._watch(*watch)
        self._run(self._update_checked)

    def _make_view(self, rows: list):
        """The widget's view: its rows of controls and panes, drawn by `js/<module>.js`."""
        return View(W.VBox(rows), module=self.module)

    # -- safe callbacks
    @contextlib.contextmanager
    def _hold(self) -> Iterator[None]:
        """Inside `with self._hold():` setting a control does not trigger a refresh."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def _watch(self, *controls, handler: Callable[[], None] | None = None) -> None:
        fn = handler or self._update_checked

        def on_change(change):
            if not self._quiet:
                self._run(fn)
        for c in controls:
            c.observe(on_change, names="value")

    def _run(self, fn: Callable[..., Any], *args) -> bool:
        """Call `fn`; any exception becomes a message in the widget. Returns whether it succeeded."""
        try:
            fn(*args)
            return True
        except Exception as e:
            logger.debug("%s failed", type(self).__name__, exc_info=True)
            text = str(e) if isinstance(e, ValueError) else f"something went wrong: {type(e).__name__}: {e}"
            self._fail(text)
            return False

    def _fail(self, text: str) -> None:
        self.say(text, error=True)
        self.error = text
        self.figure = None
        show_figure(self.out, None)

    def say(self, text: str, error: bool = False) -> None:
        """Put a short note (or an error) in the message line; an empty text clears it."""
        if not text:
            self.message.value = ""
            return
        color, bg = ("#9f1c1c", "#fdecea") if error else ("#33475b", "#eef3f8")
        self.message.value = (f'<div style="color:{color};background:{bg};padding:4px 8px;border-radius:4px">'
                              f"{html.escape(text, quote=False)}</div>")

    def refresh(self) -> bool:
        """Recompute everything from the current inputs, caches emptied (say, after changing the weights)."""
        self._forget()
        return self._run(self._update_checked)

    def _forget(self) -> None:
        """Drop every cached result, so the next update computes from scratch. Subclasses add theirs."""
        self._fwd_key = self._fwd = None

    def _update_checked(self) -> None:
        self.say("")
        self.error = None
        if self.model is None:
            raise ValueError(self._model_error or "no model")
        self._update()

    def _update(self) -> None:
        raise NotImplementedError

    # -- text and the cached forward pass
    def _limit(self) -> int:
        return probe.max_length(self.model, self.tokenizer)

    def _encode(self, text: str, text_pair: str | None = None, what: str = "text"):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"the {what} is empty: type a sentence")
        enc = self.tokenizer(text, text_pair.strip() if text_pair and text_pair.strip() else None)
        if len(enc) > self._limit():
            raise ValueError(f"the {what} is {len(enc)} tokens; {self.display_name} takes at most "
                             f"{self._limit()} — shorten it")
        return enc

    def _forward(self, enc, **flags):
        """The encoder's output for `enc`, computed once per (model, ids, segments, flags) and reused."""
        key = (id(self.model), tuple(enc.input_ids), tuple(enc.token_type_ids), tuple(sorted(flags.items())))
        if key != self._fwd_key:
            self._fwd = probe.run(self.model, enc, **flags)
            self._fwd_key = key
        return self._fwd
