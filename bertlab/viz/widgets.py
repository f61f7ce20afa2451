"""Live widgets: type a sentence, move a slider, click a token, and watch BERT answer.

Each widget is a small object around an `ipywidgets.VBox` (its `.view`); a bare widget at the end of a
cell, or `display(w)`, shows it. Every control is a real ipywidget, observed on its `value`, so Python
drives a widget exactly as a person does and reads the result back synchronously:

    w = AttentionExplorer("The river bank was muddy.", model="minilm")
    w.layer.value = 3                  # the heatmap now shows layer 3
    w.figure.data[0].z                 # ... and here are its numbers

The widgets:

    AttentionExplorer(text, text_pair, model)   layer / head sliders → heatmap; grid and bertviz head view
    MaskPlayground(text, model)                 click a token to mask it → top-k and per-layer guesses
    MaskingLab(text, model)                     re-draw the 15 % / 80-10-10 masking; running counts
    EmbeddingSumExplorer(text, text_pair)       token + segment + position → LayerNorm; position similarity
    NSPExplorer(a, b, model)                    P(IsNext)
    ContextExplorer(word, sentences, model)     one word in several contexts: distances, drift, projection
    HeadAblation(text, model)                   switch heads off → predictions change; rank heads

`model` is "bertlab-mini" or "bertlab-tiny" (MLM + NSP heads), "minilm" (a real encoder without them), a
HuggingFace hub id, a checkpoint directory, or a `(model, tokenizer)` pair. Named models load once per
process and are shared. The model menu lists the bundled models and every BERT in the local hub cache.

Why it is fast enough to use while typing: each widget keeps the forward pass of its current text and
reuses it when only a view setting changes (a slider, a toggle); a slider that changes only the numbers
of a figure updates that figure in place instead of building a new one (`w.figure` is then the same
object with new data). Why it never shows a traceback: every callback runs inside `Widget._run`, which
turns any exception into a one-line message in `w.message`.

Figures go into `ipywidgets.Output` areas as plotly's own mime bundle (`application/vnd.plotly.v1+json`,
what `display(fig)` sends in JupyterLab), set directly on `Output.outputs`: that works the same inside
and outside a kernel, so a test sees exactly what the browser gets, and nothing is printed.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import numbers
import os
from collections.abc import Iterable, Sequence
from typing import Any, Callable, Iterator

import ipywidgets as W
import plotly.graph_objects as go
import plotly.io as pio
import torch

from .. import probe
from ..checkpoint import load
from ..model.heads import BertForMaskedLM, BertForPreTraining
from ..pretraining.masking import mask_tokens
from . import figures as F

logger = logging.getLogger(__name__)

__all__ = ["Widget", "AttentionExplorer", "MaskPlayground", "MaskingLab", "EmbeddingSumExplorer", "NSPExplorer",
           "ContextExplorer", "HeadAblation", "load_model", "MODEL_NAMES"]

MODEL_NAMES = ("bertlab-mini", "bertlab-tiny", "minilm")
DISPLAY_NAMES = {"bertlab-mini": "bertlab-mini", "bertlab-tiny": "bertlab-tiny", "minilm": "MiniLM"}
WITH_HEADS = "bertlab-mini"             # the bundled model pre-trained with both MLM and NSP heads on real English


def model_options() -> list[str]:
    """The model menu: the bundled models, then the BERTs already in the local HuggingFace cache."""
    from ..hub import cached_models
    return list(MODEL_NAMES) + [m for m in cached_models() if m not in MODEL_NAMES]

_LOADED: dict[str, tuple] = {}          # name or path → (model, tokenizer), shared by every widget


def load_model(name: str) -> tuple:
    """`bertlab.load(name)`, once per process: every widget that names the same model shares it."""
    if name not in _LOADED:
        _LOADED[name] = load(name)
    return _LOADED[name]


def has_mlm_head(model) -> bool:
    return isinstance(model, (BertForPreTraining, BertForMaskedLM))


def has_nsp_head(model) -> bool:
    return isinstance(model, BertForPreTraining)


# ---- rendering ---------------------------------------------------------------------------------------

def _plot(out: W.Output, fig: go.Figure | None) -> None:
    """Show `fig` in `out` (or empty it): plotly's mime bundle, as `display(fig)` sends it in JupyterLab."""
    if fig is None:
        out.outputs = ()
        return
    data = json.loads(pio.to_json(fig, validate=False))
    data["config"] = {}
    title = fig.layout.title.text or "figure"
    bundle = {"application/vnd.plotly.v1+json": data, "text/plain": f"<plotly figure: {title}>"}
    out.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


def _html_output(out: W.Output, markup: str | None, plain: str = "") -> None:
    out.outputs = () if markup is None else (
        {"output_type": "display_data", "data": {"text/html": markup, "text/plain": plain}, "metadata": {}},)


WIDE = W.Layout(width="95%")
_PARTS = ("token", "segment", "position", "sum", "normed")   # embedding_sum's trace order: bars, then heatmaps


def _labels(tokens) -> list[str]:
    # as the figures label tokens: unique, since plotly merges equal category names ("the", "the")
    return [f"{t} ({i})" for i, t in enumerate(tokens)]


def _finish(fig: go.Figure, title: str, **layout) -> go.Figure:
    """The figures' shared look (figures.LAYOUT) and a left-aligned title, for the widgets' own figures."""
    fig.update_layout(**{**F.LAYOUT, **layout}, title=dict(text=title, x=0.0, xanchor="left"))
    return fig


# ---- the base class ----------------------------------------------------------------------------------

class Widget:
    """What every widget shares: the model and tokenizer, a message line, a figure, safe callbacks.

    Subclasses build their controls, put them in `self.view`, and implement `_update()`, which recomputes
    from the current inputs and may raise `ValueError` with a message for the reader.
    """

    default_model = "minilm"

    def __init__(self, model=None):
        self.message = W.HTML(value="")
        self.error: str | None = None       # the last interaction's error message, None when it worked
        self.out = W.Output()
        self.figure: go.Figure | None = None
        self._quiet = 0                     # > 0 while the widget sets its own controls: no refresh
        self._fwd_key = None
        self._fwd = None
        self._custom: dict[str, tuple] = {}
        name = self._name_for(model if model is not None else self.default_model)
        options = model_options()
        options += [n for n in [name] if n not in options]
        self.model_select = W.Dropdown(options=options, value=name, description="model")
        self.switch = W.Button(description=f"switch to {WITH_HEADS}", button_style="info",
                               layout=W.Layout(display="none", width="auto"))
        self.switch.on_click(lambda _: self._run(self._switch))
        self.model = self.tok = None
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
            m, _ = model
            label = f"custom {type(m).__name__} (L{m.config.num_hidden_layers} H{m.config.hidden_size})"
            self._custom[label] = model
            return label
        raise ValueError(f"model must be a name ({', '.join(MODEL_NAMES)}), a checkpoint directory, or a "
                         f"(model, tokenizer) pair, got {type(model).__name__}")

    def _load(self, name: str) -> None:
        try:
            self.model, self.tok = self._custom[name] if name in self._custom else load_model(name)
            self._model_error = None
        except Exception as e:                       # a missing checkpoint is a message, not a traceback
            logger.debug("loading %s failed", name, exc_info=True)
            self.model = self.tok = None
            self._model_error = f"could not load {name!r}: {e}"

    @property
    def model_name(self) -> str:
        return self.model_select.value

    @property
    def display_name(self) -> str:
        return DISPLAY_NAMES.get(self.model_name, self.model_name)

    @property
    def bert(self):
        return probe._encoder(self.model)

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
        """Adapt the controls to a new model (slider ranges, head grid). Runs with refreshes held."""

    def _switch(self) -> None:
        self.model_select.value = WITH_HEADS

    def _offer_switch(self, show: bool) -> None:
        self.switch.layout.display = "" if show else "none"

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
        _plot(self.out, None)

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
        return min(self.config.max_position_embeddings, self.tok.model_max_length)

    def _encode(self, text: str, text_pair: str | None = None, what: str = "text"):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"the {what} is empty: type a sentence")
        enc = self.tok(text, text_pair.strip() if text_pair and text_pair.strip() else None)
        if len(enc) > self._limit():
            raise ValueError(f"the {what} is {len(enc)} tokens; {self.display_name} takes at most "
                             f"{self._limit()} — shorten it")
        return enc

    def _forward(self, enc, **flags):
        """The encoder's output for `enc`, computed once per (model, ids, segments, flags) and reused."""
        key = (id(self.model), tuple(enc.input_ids), tuple(enc.token_type_ids), tuple(sorted(flags.items())))
        if key != self._fwd_key:
            with probe._inference(self.model):
                self._fwd = self.bert(**enc, **flags)
            self._fwd_key = key
        return self._fwd


def _controls_row(*children) -> W.HBox:
    return W.HBox(list(children), layout=W.Layout(flex_flow="row wrap", align_items="center"))


# ---- attention -----------------------------------------------------------------------------------------

class AttentionExplorer(Widget):
    """Text A (and optional text B) → one head's attention heatmap; layer and head sliders pick the head.

    `show_grid` adds every layer × head at once (`grid_figure`), `show_head_view` the offline bertviz head
    view (`head_view_html`). Moving a slider reuses the forward pass; `figure` is built once and then
    updated in place (the same object, new data).
    """

    def __init__(self, text: str = "The cat sat on the mat because it was warm.", text_pair: str = "",
                 model="minilm", layer: int = 0, head: int = 0):
        super().__init__(model)
        self.text = W.Text(value=text, description="text A", layout=WIDE)
        self.text_pair = W.Text(value=text_pair, description="text B", placeholder="optional second sentence",
                                layout=WIDE)
        self.layer = W.IntSlider(value=0, min=0, max=0, description="layer")
        self.head = W.IntSlider(value=0, min=0, max=0, description="head")
        self.show_grid = W.ToggleButton(value=False, description="all heads (grid)", icon="th", layout=W.Layout(width="auto"))
        self.show_head_view = W.ToggleButton(value=False, description="head view (bertviz)", icon="eye", layout=W.Layout(width="auto"))
        self.grid_out, self.head_view_out = W.Output(), W.Output()
        self.grid_figure: go.Figure | None = None
        self.head_view_html: str | None = None
        self._keys = {}                                 # what each view was last built from
        self._tokens: list[str] = []                    # the tokens the heatmap shows
        self._sizes: dict[int, tuple] = {}              # T → the (width, height) attention_heatmap gives
        if self.model is not None:
            self._model_changed()
            with self._hold():
                self.layer.value, self.head.value = min(layer, self.layer.max), min(head, self.head.max)
        self.view = W.VBox([
            _controls_row(self.model_select, self.switch), self.text, self.text_pair,
            _controls_row(self.layer, self.head, self.show_grid, self.show_head_view),
            self.message, self.out, self.grid_out, self.head_view_out])
        self._watch(self.text, self.text_pair, self.layer, self.head, self.show_grid, self.show_head_view)
        self._run(self._update_checked)

    def _model_changed(self) -> None:
        self.layer.max = self.config.num_hidden_layers - 1
        self.head.max = self.config.num_attention_heads - 1

    def _forget(self) -> None:
        super()._forget()
        self._keys = {}

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.grid_figure = self.head_view_html = None
        _plot(self.grid_out, None)
        _html_output(self.head_view_out, None)
        self._keys = {}

    def _update(self) -> None:
        enc = self._encode(self.text.value, self.text_pair.value)
        out = self._forward(enc, output_attentions=True)
        layer, head = self.layer.value, self.head.value
        if self.figure is None or (enc.tokens != self._tokens and len(enc) not in self._sizes):
            self.figure = F.attention_heatmap(out, enc.tokens, layer, head)
            self._tokens = enc.tokens
            self._sizes[len(enc)] = (self.figure.layout.width, self.figure.layout.height)
        else:
            self._patch_heatmap(out, enc.tokens, layer, head)
        _plot(self.out, self.figure)

        if self.show_grid.value:
            if self._keys.get("grid") != self._fwd_key:
                self.grid_figure = F.attention_grid(out, enc.tokens)
                self._keys["grid"] = self._fwd_key
                _plot(self.grid_out, self.grid_figure)
        elif self.grid_out.outputs:
            _plot(self.grid_out, None)
            self._keys.pop("grid", None)

        if self.show_head_view.value:
            if self._keys.get("head_view") != self._fwd_key:
                try:
                    self.head_view_html = self._head_view(out, enc, layer)
                except ValueError as e:            # the heatmap stays; only the head view is missing
                    self.head_view_html = None
                    _html_output(self.head_view_out, None)
                    self.say(f"head view: {e}", error=True)
                    return
                self._keys["head_view"] = self._fwd_key
                _html_output(self.head_view_out, self.head_view_html, "bertviz head view")
        elif self.head_view_out.outputs:
            _html_output(self.head_view_out, None)
            self._keys.pop("head_view", None)

    def _patch_heatmap(self, out, tokens: list[str], layer: int, head: int) -> None:
        """Turn the current figure into what `figures.attention_heatmap` would build, without building it.

        A new figure costs ~20 ms of plotly validation and template copying; changing the data of this one
        costs a few. Only what differs is set; the size of a T-token figure comes from the first one built
        (`_sizes`), so only the data is computed here. A test holds the result equal to attention_heatmap's.
        """
        L, A = len(out.attentions), out.attentions[0].shape[1]
        T = len(tokens)
        weights = out.attentions[layer][0, head, :T, :T].float().cpu()
        fig, trace = self.figure, self.figure.data[0]
        with fig.batch_update():
            trace.z = weights.tolist()
            trace.zmax = float(weights.max())
            fig.layout.title.text = f"layer {layer % L}, head {head % A}: where each token looks"
            if tokens != self._tokens:
                labels = _labels(tokens)
                trace.x = trace.y = labels
                trace.customdata = [[[q, k] for k in tokens] for q in tokens]
                fig.layout.width, fig.layout.height = self._sizes[T]
                self._tokens = tokens

    def _head_view(self, out, enc, layer: int) -> str:
        """bertviz's head view of the cached forward pass, offline (bertlab.viz.attention), opening at `layer`."""
        try:
            from .attention import BERTVIZ_MAX_TOKENS, head_view_html
        except ImportError as e:
            raise ValueError(f"not available in this installation ({e})") from None
        if len(enc) > BERTVIZ_MAX_TOKENS:
            raise ValueError(f"bertviz draws at most {BERTVIZ_MAX_TOKENS} tokens and this text has {len(enc)}; "
                             "the heatmap and the grid still work")
        b_start = enc.token_type_ids.index(1) if 1 in enc.token_type_ids else None
        return head_view_html(out, enc.tokens, b_start, layer=layer)


# ---- masked-LM -----------------------------------------------------------------------------------------

def _no_head_message(w: Widget, head: str, task: str) -> str:
    return (f"{w.display_name} has no {head} head, so it cannot {task} — switch to {WITH_HEADS}, "
            "which was pre-trained with one")


class MaskPlayground(Widget):
    """Click a token to hide it behind [MASK] → the model's top-k guesses, and what each layer would guess.

    The click replaces that token's id with [MASK] (no re-tokenizing), runs the model once and reads every
    layer's hidden state at that position through the MLM head. `mask(i)` does the same from Python
    (i = token position, as in `tokens_list`, or a token such as "bank"); `mask=` picks the first one.
    `result` is a `probe.FillMask`, `predictions` its top-k as (token, probability).
    """

    default_model = "bertlab-mini"

    def __init__(self, text: str = "Grace walked along the muddy bank of the river with her old dog.",
                 model="bertlab-mini", top_k: int = 5, mask: int | str | None = "bank"):
        super().__init__(model)
        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.tokens = W.ToggleButtons(options=[], value=None, description="mask:",
                                      style=dict(button_width="auto"))
        self.top_k = W.IntSlider(value=top_k, min=1, max=20, description="top k")
        self.layers_out = W.Output()
        self.result: probe.FillMask | None = None
        self.layers_figure: go.Figure | None = None
        self.tokens_list: list[str] = []
        self._enc = None
        self._initial_mask = mask
        self.view = W.VBox([_controls_row(self.model_select, self.switch), self.text, self.tokens,
                            self.top_k, self.message,
                            # side by side where there is room, the per-layer figure below where there is not
                            W.HBox([self.out, self.layers_out], layout=W.Layout(flex_flow="row wrap"))])
        self._watch(self.text, handler=self._new_text)
        self._watch(self.tokens, self.top_k)
        self._run(self._new_text)

    @property
    def predictions(self) -> list[tuple[str, float]] | None:
        """The top-k guesses for the masked token as (token, probability), most probable first."""
        if self.result is None:
            return None
        return [(g.token, g.probability) for g in self.result.guesses[0]]

    @property
    def masked(self) -> int | None:
        return self.tokens.value

    def mask(self, i: int | str | None) -> None:
        """Mask token position `i` (positions count from [CLS] = 0), or the first token equal to `i` if a
        str; None unmasks."""
        if isinstance(i, str):
            word, i = i, self._position_of(i)
            if i is None:
                tokens = ", ".join(t for t, _ in self.tokens.options)
                self._fail(f"{word!r} is not one of the text's tokens ({tokens})")
                return
        if i is not None and i not in {v for _, v in self.tokens.options}:
            self._fail(f"position {i} cannot be masked: choose one of the word pieces, positions 1 … "
                       f"{len(self.tokens_list) - 2} ([CLS] and [SEP] are never masked)")
            return
        if i == self.tokens.value:
            self._run(self._update_checked)
        else:
            self.tokens.value = i

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.result = self.layers_figure = None
        _plot(self.layers_out, None)

    def _position_of(self, token: str) -> int | None:
        return next((v for t, v in self.tokens.options if t in (token, token.lower())), None)

    def _model_changed(self) -> None:
        self._set_tokens()

    def _new_text(self) -> None:
        self._set_tokens()
        self._update_checked()

    def _set_tokens(self) -> None:
        """Turn the text into one button per maskable token (the text's own [MASK] pre-selected)."""
        with self._hold():
            self._set_tokens_held()

    def _set_tokens_held(self) -> None:
        keep = self.tokens.value
        self._enc = None
        self.tokens_list = []
        self.tokens.options = []
        self.tokens.value = None
        if self.tok is None or not self.text.value.strip():
            return
        enc = self.tok(self.text.value)
        self.tokens_list = enc.tokens
        if len(enc) > self._limit():
            return                                          # _update says what is wrong
        self._enc = enc
        self.tokens.options = [(t, i) for i, t in enumerate(enc.tokens) if 0 < i < len(enc) - 1]
        special = {self.tok.cls_id, self.tok.sep_id, self.tok.pad_id}
        # the position asked for, else the text's own [MASK], else the position masked before
        if isinstance(self._initial_mask, str):
            self._initial_mask = next((i for i, t in enumerate(enc.tokens) if t in (self._initial_mask,
                                       self._initial_mask.lower())), None)
        in_text = next((i for i, t in enumerate(enc.input_ids) if t == self.tok.mask_id), None)
        choice = next((c for c in (self._initial_mask, in_text, keep)
                       if c is not None and 0 < c < len(enc) - 1), None)
        self._initial_mask = None
        if choice is not None and enc.input_ids[choice] not in special:
            self.tokens.value = choice

    def _update(self) -> None:
        enc = self._encode(self.text.value)
        if not has_mlm_head(self.model):
            self._offer_switch(True)
            raise ValueError(_no_head_message(self, "masked-LM", "guess a hidden word"))
        self._offer_switch(False)
        if self._enc is None:
            self._set_tokens()
        i = self.tokens.value
        if i is None:
            self.result = self.layers_figure = self.figure = None
            _plot(self.out, None)
            _plot(self.layers_out, None)
            self.say("click a token to hide it behind [MASK]")
            return
        self.result = self._guess(enc, i, self.top_k.value)
        self.figure = F.fill_mask_figure(self.result)
        self.layers_figure = F.fill_mask_layers_figure(self.result)
        _plot(self.out, self.figure)
        _plot(self.layers_out, self.layers_figure)

    def _guess(self, enc, i: int, k: int) -> probe.FillMask:
        ids = list(enc.input_ids)
        ids[i] = self.tok.mask_id
        head = self.model.cls.predictions
        with probe._inference(self.model):
            out = self.bert(torch.tensor([ids]), torch.tensor([enc.token_type_ids]), output_hidden_states=True)
            states = torch.stack([h[0, i] for h in out.hidden_states[1:]])     # (L, H): each layer, position i
            probs = head(states).float().softmax(-1).cpu()                     # (L, V)
        p, top = probs.topk(min(k, probs.shape[-1]), dim=-1)                    # (L, k)
        layers = [[[probe.Guess(self.tok.id_to_token(int(t)), float(q)) for q, t in zip(pr, tr)]]
                  for pr, tr in zip(p, top)]
        tokens = [self.tok.id_to_token(t) for t in ids]
        text = self.tok.decode(ids[1:-1], skip_special_tokens=False)
        return probe.FillMask(text, tokens, [i], layers[-1], layers)


class MaskingLab(Widget):
    """Re-draw BERT's masked-LM corruption of a sentence and watch the running counts settle on the rates.

    `draw(n)` (the "re-draw" and "draw 100" buttons) corrupts the text n more times with `mask_tokens`
    and one persistent generator; `counts` and `rates` are the running totals since the text (or a
    setting) last changed: chosen / candidate tokens → 15 %, and [MASK] / random / kept among the chosen →
    80 / 10 / 10. A random draw that happens to equal the original counts as kept, as in the figure.
    """

    default_model = "bertlab-tiny"
    TARGETS = {"chosen": 0.15, "mask": 0.8, "random": 0.1, "kept": 0.1}
    MAX_DRAWS = 10_000       # per call: the n draws are corrupted at once, as one (n, T) tensor

    def __init__(self, text: str = "The river was low after a long dry summer, and brown leaves floated past "
                                   "the ducks near the far shore.",
                 model="bertlab-tiny", seed: int = 0):
        super().__init__(model)
        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.mode = W.ToggleButtons(options=[("dynamic (each token 15 %)", "dynamic"),
                                             ("bert (exactly 15 % per text)", "bert")], value="dynamic",
                                    description="choose", style=dict(button_width="auto"))
        self.whole_word = W.Checkbox(value=False, description="whole-word masking", indent=False, layout=W.Layout(width="auto"))
        self.redraw = W.Button(description="re-draw", icon="refresh", button_style="primary")
        self.draw100 = W.Button(description="draw 100", icon="forward")
        self.reset_button = W.Button(description="reset counts")
        self.stats = W.HTML()
        self.generator = torch.Generator().manual_seed(seed)
        self.inputs = self.labels = None
        self._enc = None
        self.reset()
        self.redraw.on_click(lambda _: self._run(self.draw, 1))
        self.draw100.on_click(lambda _: self._run(self.draw, 100))
        self.reset_button.on_click(lambda _: self._run(self._reset_and_draw))
        self.view = W.VBox([_controls_row(self.model_select), self.text,
                            _controls_row(self.mode, self.whole_word),
                            _controls_row(self.redraw, self.draw100, self.reset_button),
                            self.message, self.stats, self.out])
        self._watch(self.text, self.mode, self.whole_word)
        self._run(self._update_checked)

    def reset(self) -> None:
        self.counts = dict(draws=0, candidates=0, chosen=0, mask=0, random=0, kept=0)
        self._show_stats()

    @property
    def rates(self) -> dict[str, float]:
        c = self.counts
        per = lambda a, b: a / b if b else float("nan")  # noqa: E731
        return dict(chosen=per(c["chosen"], c["candidates"]), mask=per(c["mask"], c["chosen"]),
                    random=per(c["random"], c["chosen"]), kept=per(c["kept"], c["chosen"]))

    def _reset_and_draw(self) -> None:
        self.reset()
        self.draw(1)

    def _update(self) -> None:
        self._enc = None
        self.reset()
        self._enc = self._encode(self.text.value)
        self.draw(1)

    def draw(self, n: int = 1) -> None:
        """Corrupt the text `n` more times (1 … MAX_DRAWS), add to the counts, and show the last draw."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= self.MAX_DRAWS:
            raise ValueError(f"draw takes a whole number of draws from 1 to {self.MAX_DRAWS:,}, got {n!r}: "
                             "e.g. draw(100); call it again for more")
        n = int(n)
        if self._enc is None:
            self._update_checked()                        # raises the message of a bad text
            if n == 1:
                return
            n -= 1
        enc, tok = self._enc, self.tok
        ids = torch.tensor(enc.input_ids).expand(n, len(enc))                  # (n, T)
        inputs, labels = mask_tokens(ids, tok, generator=self.generator, mode=self.mode.value,
                                     whole_word=self.whole_word.value)
        chosen = labels != -100
        masked = chosen & (inputs == tok.mask_id)
        kept = chosen & (inputs == labels)
        never = torch.tensor([tok.cls_id, tok.sep_id, tok.pad_id, tok.mask_id])
        c = self.counts
        c["draws"] += n
        c["candidates"] += n * int((~torch.isin(ids[0], never)).sum())
        c["chosen"] += int(chosen.sum())
        c["mask"] += int(masked.sum())
        c["kept"] += int(kept.sum())
        c["random"] += int((chosen & ~masked & ~kept).sum())
        self.inputs, self.labels = inputs[-1], labels[-1]
        self.figure = F.masking_figure(enc.tokens, self.inputs, self.labels, tok)
        _plot(self.out, self.figure)
        self._show_stats()

    def _show_stats(self) -> None:
        c, r = self.counts, self.rates
        if not c["draws"]:
            self.stats.value = ""
            return
        pct = lambda x: "–" if x != x else f"{100 * x:.1f} %"  # noqa: E731
        rows = [("chosen", f"{c['chosen']} of {c['candidates']} candidate tokens", r["chosen"], 0.15),
                ("→ [MASK]", f"{c['mask']} of {c['chosen']} chosen", r["mask"], 0.8),
                ("→ random token", f"{c['random']} of {c['chosen']} chosen", r["random"], 0.1),
                ("→ kept", f"{c['kept']} of {c['chosen']} chosen", r["kept"], 0.1)]
        cells = "".join(f"<tr><td>{html.escape(a)}</td><td>{b}</td><td><b>{pct(x)}</b></td><td>{pct(t)}</td></tr>"
                        for a, b, x, t in rows)
        self.stats.value = (f"<table style='border-collapse:collapse'><tr><th align=left>after {c['draws']} "
                            "draws</th><th align=left>count</th><th>rate</th><th>target</th></tr>"
                            f"{cells}</table>")


# ---- embeddings ----------------------------------------------------------------------------------------

class EmbeddingSumExplorer(Widget):
    """BERT's input, token by token: token + segment + position → LayerNorm (`embedding_sum`).

    Only the embedding layer runs (the encoder is not needed for this picture). `show_positions` adds the
    cosine similarity of the learned position vectors beside the sinusoidal ones (`positions_figure`).
    """

    def __init__(self, text: str = "The cat sat on the mat.", text_pair: str = "It was warm there.",
                 model="minilm"):
        super().__init__(model)
        self.text = W.Text(value=text, description="text A", layout=WIDE)
        self.text_pair = W.Text(value=text_pair, description="text B", placeholder="optional second sentence",
                                layout=WIDE)
        self.show_positions = W.ToggleButton(value=False, description="position similarity", icon="th", layout=W.Layout(width="auto"))
        self.positions_out = W.Output()
        self.positions_figure: go.Figure | None = None
        self.parts = None
        self._fig_key = None
        self._pos_key = None
        self._sizes: dict[int, tuple] = {}          # n tokens → the (width, height) embedding_sum gives
        self.view = W.VBox([_controls_row(self.model_select, self.show_positions), self.text, self.text_pair,
                            self.message, self.out, self.positions_out])
        self._watch(self.text, self.text_pair, self.show_positions)
        self._run(self._update_checked)

    def _update(self) -> None:
        enc = self._encode(self.text.value, self.text_pair.value)
        key = (id(self.model), tuple(enc.input_ids), tuple(enc.token_type_ids))
        if key != self._fig_key or self.figure is None:
            with probe._inference(self.model):
                self.parts = self.bert.embeddings(enc["input_ids"].to(self.bert.device),
                                                  enc["token_type_ids"].to(self.bert.device))
            n = len(enc)
            if self._fig_key is None or self._fig_key[0] != key[0]:
                self._sizes = {}
            if self.figure is None or n not in self._sizes:
                self.figure = F.embedding_sum(_Parts(self.parts), enc.tokens)
                self._sizes[n] = (self.figure.layout.width, self.figure.layout.height)
            else:
                self._patch(self.parts, enc.tokens)
            self._fig_key = key
            _plot(self.out, self.figure)
        if self.show_positions.value:
            if self._pos_key != id(self.model):
                weight = self.bert.embeddings.position_embeddings.weight
                self.positions_figure = F.position_similarity(weight, n=min(len(weight), 128))
                self._pos_key = id(self.model)
                _plot(self.positions_out, self.positions_figure)
        elif self.positions_out.outputs:
            _plot(self.positions_out, None)
            self._pos_key = None

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self._fig_key = None

    def _forget(self) -> None:
        super()._forget()
        self._fig_key = self._pos_key = None

    def _patch(self, parts, tokens: list[str], dims: int = 32) -> None:
        """Turn the current figure into what `figures.embedding_sum` would build for a new text of the same
        model, without building it (that costs ~40 ms: ten traces on subplots). Only the data is computed
        here; the size of an n-token figure comes from the first one built. A test holds them equal."""
        n, k = len(tokens), min(dims, parts.token.shape[-1])
        labels = _labels(tokens)
        values = {name: getattr(parts, name)[0, :n].detach().float().cpu() for name in _PARTS}     # (n, H)
        fig = self.figure
        bars, maps = fig.data[:len(_PARTS)], fig.data[len(_PARTS):]
        with fig.batch_update():
            for name, bar, heat in zip(_PARTS, bars, maps):
                bar.x = labels
                bar.y = values[name].norm(dim=-1).numpy()
                heat.z = values[name][:, :k].numpy()
                heat.y = labels
            raw = max(float(values[name][:, :k].abs().max()) for name in ("token", "segment", "position", "sum"))
            normed = float(values["normed"][:, :k].abs().max())
            fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax = -raw, raw
            fig.layout.coloraxis2.cmin, fig.layout.coloraxis2.cmax = -normed, normed
            fig.layout.width, fig.layout.height = self._sizes[n]


class _Parts:
    """What `embedding_sum` reads from a BertOutput: its `.embeddings`."""

    def __init__(self, parts):
        self.embeddings = parts


# ---- next-sentence prediction --------------------------------------------------------------------------

class NSPExplorer(Widget):
    """Sentence A, sentence B → P(IsNext), the NSP head's belief that B followed A in the original text."""

    default_model = "bertlab-mini"

    def __init__(self, a: str = "Grace walked along the muddy bank with her brother.",
                 b: str = "Brown leaves floated past them on the slow current.", model="bertlab-mini"):
        super().__init__(model)
        self.a = W.Text(value=a, description="A", layout=WIDE)
        self.b = W.Text(value=b, description="B", layout=WIDE)
        self.swap = W.Button(description="swap A and B", icon="exchange")
        self.swap.on_click(lambda _: self._run(self._swap))
        self.probability: float | None = None
        self.view = W.VBox([_controls_row(self.model_select, self.switch, self.swap), self.a, self.b,
                            self.message, self.out])
        self._watch(self.a, self.b)
        self._run(self._update_checked)

    def _swap(self) -> None:
        with self._hold():
            self.a.value, self.b.value = self.b.value, self.a.value
        self._update_checked()

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.probability = None

    def _update(self) -> None:
        a, b = self.a.value, self.b.value
        if not has_nsp_head(self.model):
            self._offer_switch(True)
            raise ValueError(_no_head_message(self, "next-sentence", "judge whether B follows A"))
        self._offer_switch(False)
        self._encode(a, what="sentence A")
        self._encode(b, what="sentence B")
        self._encode(a, b, what="pair A + B")
        self.probability = probe.next_sentence(self.model, self.tok, a, b)
        self.figure = F.nsp_figure(self.probability, a, b)
        _plot(self.out, self.figure)


# ---- contextual vectors --------------------------------------------------------------------------------

BANK = ["Grace walked along the muddy bank of the river. | river",
        "The ducks rested on the grassy bank near the water. | river",
        "Tom went to the bank to open a savings account. | money",
        "The bank pays a small amount of interest each year. | money"]


class ContextExplorer(Widget):
    """One word in several sentences: how far apart its vectors are, layer by layer.

    `sentences` go one per line; end a line with `| sense` (e.g. `... river bank. | river`) to colour the
    projection by sense. The word's vectors at every layer are computed once per (word, sentences); the
    layer slider only picks one (`vectors` is (n, L + 1, H), `distances` (L + 1, n, n)). `show` picks the
    figure: the cosine matrix at the layer, the drift of every context across layers, or a 2-D PCA.
    """

    VIEWS = ("cosine matrix", "drift by layer", "projection 2-D")

    def __init__(self, word: str = "bank", sentences: Sequence[str] | str | None = None,
                 senses: Sequence[str] | None = None, model="minilm", layer: int = -1):
        super().__init__(model)
        lines = BANK if sentences is None else sentences.splitlines() if isinstance(sentences, str) else sentences
        if senses is not None:
            if isinstance(senses, str) or not isinstance(senses, Sequence):
                raise ValueError(f"senses must be a list of labels, one per sentence, got {type(senses).__name__}")
            lines = [line for line in lines if str(line).strip()]   # blank lines are not sentences: none gets a sense
            if len(senses) != len(lines):
                raise ValueError(f"got {len(lines)} sentences but {len(senses)} senses: pass one sense per "
                                 "sentence ('' for one without), or end each sentence line with '| sense'")
            lines = [f"{s} | {k}" for s, k in zip(lines, senses)]
        self.word = W.Text(value=word, description="word", continuous_update=False)
        self.sentences = W.Textarea(value="\n".join(lines), description="sentences",
                                    placeholder="one sentence per line; optionally end with | sense",
                                    continuous_update=False, layout=W.Layout(width="95%", height="8em"))
        self.layer = W.IntSlider(value=0, min=0, max=0, description="layer")
        self.show = W.ToggleButtons(options=self.VIEWS, value=self.VIEWS[0], style=dict(button_width="auto"))
        self.vectors = self.distances = None
        self.contexts: list[str] = []
        self.senses: list[str] | None = None
        self._keys = {}
        if self.model is not None:
            self._model_changed()
            with self._hold():
                self.layer.value = layer % (self.layer.max + 1)
        self.view = W.VBox([_controls_row(self.model_select, self.word), self.sentences,
                            _controls_row(self.show, self.layer), self.message, self.out])
        self._watch(self.word, self.sentences, self.layer, self.show)
        self._run(self._update_checked)

    def _model_changed(self) -> None:
        L = self.config.num_hidden_layers
        at_end = self.layer.value == self.layer.max
        self.layer.max = L
        if at_end:
            self.layer.value = L

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self._keys = {}
        self.vectors = self.distances = None

    def _forget(self) -> None:
        super()._forget()
        self._keys = {}

    def _parse(self) -> tuple[list[str], list[str] | None]:
        texts, senses = [], []
        for line in self.sentences.value.splitlines():
            if not line.strip():
                continue
            text, _, sense = line.partition("|")
            texts.append(text.strip())
            senses.append(sense.strip())
        if not texts:
            raise ValueError("no sentences: write one sentence per line, each using the word")
        return texts, senses if any(senses) else None

    def _update(self) -> None:
        word = self.word.value.strip()
        if not word:
            raise ValueError("the word is empty: type the word to follow, e.g. bank")
        texts, senses = self._parse()
        for i, t in enumerate(texts):
            n = len(self.tok(t))
            if n > self._limit():
                raise ValueError(f"sentence {i + 1} is {n} tokens; {self.display_name} takes at most "
                                 f"{self._limit()} — shorten it")
        key = (id(self.model), word, tuple(texts))
        if self._keys.get("vectors") != key:
            try:
                self.vectors = probe.word_vectors(self.model, self.tok, texts, word, layer="all")   # (n, L+1, H)
            except ValueError as e:
                raise ValueError(_missing_word(str(e), word, texts)) from None
            self.distances = probe.cosine_distances(self.vectors)                              # (L+1, n, n)
            self._keys = {"vectors": key}
        self.contexts, self.senses = texts, (senses and [s or "?" for s in senses])
        layer, view = self.layer.value, self.show.value
        if view == self.VIEWS[0]:
            fig_key = ("matrix", key)
            if self.figure is not None and self._keys.get("figure") == fig_key:
                self._patch_matrix(layer)
            else:
                self.figure = F.cosine_matrix(self.distances, texts, word=word, layer=layer)
        elif view == self.VIEWS[1]:
            if len(texts) < 2:
                raise ValueError("drift needs at least two sentences to compare")
            fig_key = ("drift", key)
            if self._keys.get("figure") != fig_key or self.figure is None:
                self.figure = F.drift_by_layer(self.vectors, texts, word=word)
        else:
            if len(texts) < 2:
                raise ValueError("a projection needs at least two sentences")
            fig_key = ("projection", key, layer, tuple(self.senses or ()))
            self.figure = F.projection_2d(self.vectors, texts, self.senses, word=word, layer=layer)
        self._keys["figure"] = fig_key
        _plot(self.out, self.figure)

    def _patch_matrix(self, layer: int) -> None:
        # what figures.cosine_matrix builds for another layer: only z and the colour range move
        d = self.distances[layer]
        with self.figure.batch_update():
            self.figure.data[0].z = d.numpy()
            self.figure.data[0].zmax = max(float(d.max()), 1e-6)


def _missing_word(error: str, word: str, texts: list[str]) -> str:
    """word_vectors' message is thorough (it lists every token); the widget names the sentence briefly."""
    for i, t in enumerate(texts):
        if f"sentence {i} (" in error and "is not a word of" in error:
            return (f"'{word}' is not a word of sentence {i + 1} ('{t}'): use the word as written in every "
                    "sentence (whole words: 'bank' does not match 'banks'), or drop that sentence")
    return error


# ---- head ablation -------------------------------------------------------------------------------------

class HeadAblation(Widget):
    """Switch attention heads off and watch the model's guess for [MASK] change.

    One toggle per (layer, head) (`heads[(l, h)]`; `toggle(l, h)` from Python); `ablated` is the set of
    heads switched off. Each change runs the model once with those heads' outputs zeroed
    (`probe.ablate`, hooks removed straight after). With an MLM head and a [MASK] in the text,
    `predictions` are the top-k guesses for the first [MASK] (`baseline` with every head on); otherwise
    (MiniLM, or no [MASK]) the figure shows how far each token's output vector moved (`change`, cosine
    distance). "rank heads" scores every head alone with `probe.head_importance` (`importance`).
    """

    default_model = "bertlab-mini"

    def __init__(self, text: str = "Tom went to the [MASK] to open a savings account.", model="bertlab-mini",
                 top_k: int = 5):
        super().__init__(model)
        self.text = W.Text(value=text, description="text", layout=WIDE)
        self.top_k = top_k
        self.heads: dict[tuple[int, int], W.ToggleButton] = {}
        self.grid = W.VBox()
        self.all_on = W.Button(description="all heads on", icon="undo")
        self.rank = W.Button(description="rank heads", icon="sort-amount-desc",
                             tooltip="zero each head alone and measure the change (one forward pass per head)")
        self.summary = W.HTML()
        self.importance_out = W.Output()
        self.importance: probe.HeadImportance | None = None
        self.importance_figure: go.Figure | None = None
        self.predictions: list[tuple[str, float]] | None = None
        self.baseline: list[tuple[str, float]] | None = None
        self.change: torch.Tensor | None = None
        self._base_key = None
        self._base = None
        self.all_on.on_click(lambda _: self._run(self.set_ablated, ()))
        self.rank.on_click(lambda _: self._run(self.rank_heads))
        if self.model is not None:
            self._model_changed()
        self.view = W.VBox([_controls_row(self.model_select, self.switch), self.text,
                            W.HTML("<b>heads</b> (click to switch off):"), self.grid,
                            _controls_row(self.all_on, self.rank), self.message, self.summary, self.out,
                            self.importance_out])
        self._watch(self.text)
        self._run(self._update_checked)

    @property
    def ablated(self) -> set[tuple[int, int]]:
        return {lh for lh, b in self.heads.items() if b.value}

    def toggle(self, layer: int, head: int, off: bool | None = None) -> None:
        """Switch head (layer, head) off (or back on); `off=None` flips it."""
        if (layer, head) not in self.heads:
            self._fail(f"head ({layer}, {head}) does not exist: layers 0 … {self.config.num_hidden_layers - 1}, "
                       f"heads 0 … {self.config.num_attention_heads - 1}")
            return
        b = self.heads[(layer, head)]
        b.value = (not b.value) if off is None else bool(off)

    def set_ablated(self, heads) -> None:
        """Switch off exactly `heads` (pairs (layer, head)), every other head on; one recompute.

        A head that does not exist, or an item that is not a (layer, head) pair of ints, is a ValueError
        and no head changes."""
        heads = self._check_heads(heads)
        with self._hold():
            for lh, b in self.heads.items():
                b.value = lh in heads
        self._update_checked()

    def _check_heads(self, heads) -> set[tuple[int, int]]:
        """`heads` as a set of existing (layer, head) pairs, or a ValueError that shows the expected form."""
        cfg = self.config if self.heads else None                # no heads: no model loaded
        where = (f"layers 0 … {cfg.num_hidden_layers - 1}, heads 0 … {cfg.num_attention_heads - 1}" if cfg
                 else "no model is loaded")
        if isinstance(heads, (str, bytes)) or not isinstance(heads, Iterable):
            raise ValueError(f"heads must be a list of (layer, head) pairs, e.g. [(0, 1)], got {heads!r}")
        checked = set()
        for item in heads:
            pair = tuple(item) if isinstance(item, (tuple, list)) else None
            if pair is None or len(pair) != 2 or not all(
                    isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in pair):
                raise ValueError(f"each head is a (layer, head) pair of ints, e.g. [(0, 1)], got {item!r}")
            pair = (int(pair[0]), int(pair[1]))
            if pair not in self.heads:
                raise ValueError(f"head {pair} does not exist: {where}")
            checked.add(pair)
        return checked

    def _model_changed(self) -> None:
        cfg = self.config
        self.heads = {}
        rows = []
        for l in range(cfg.num_hidden_layers):
            buttons = []
            for h in range(cfg.num_attention_heads):
                b = W.ToggleButton(value=False, description=str(h), tooltip=f"layer {l}, head {h}",
                                   layout=W.Layout(width="36px", padding="0px"))
                b.observe(self._style_button, names="value")
                self.heads[(l, h)] = b
                buttons.append(b)
            rows.append(W.HBox([W.Label(f"layer {l}", layout=W.Layout(width="60px"))] + buttons))
        self.grid.children = rows
        self._watch(*self.heads.values())
        self._base_key = self._base = None
        self.importance = self.importance_figure = None
        _plot(self.importance_out, None)

    def _forget(self) -> None:
        super()._forget()
        self._base_key = self._base = None

    @staticmethod
    def _style_button(change) -> None:
        change["owner"].button_style = "danger" if change["new"] else ""

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.predictions = self.change = None
        self.summary.value = ""

    def _mode(self, enc) -> str:
        return "mlm" if has_mlm_head(self.model) and self.tok.mask_id in enc.input_ids else "output"

    def _run_model(self, enc, heads) -> torch.Tensor:
        """Last hidden state (T, H) with `heads` zeroed; hooks live only for this call."""
        with probe._inference(self.model):
            if heads:
                with probe.ablate(self.model, sorted(heads)):
                    return self.bert(**enc).last_hidden_state[0].float()
            return self.bert(**enc).last_hidden_state[0].float()

    def _top(self, h: torch.Tensor) -> tuple[list[tuple[str, float]], torch.Tensor]:
        """The top-k guesses from one hidden state (H,), and the whole distribution (V,)."""
        with probe._inference(self.model):
            probs = self.model.cls.predictions(h).float().softmax(-1).cpu()       # (V,)
        p, ids = probs.topk(min(self.top_k, probs.shape[-1]))
        return [(self.tok.id_to_token(int(i)), float(q)) for q, i in zip(p, ids)], probs

    def _update(self) -> None:
        enc = self._encode(self.text.value)
        mode = self._mode(enc)
        key = (id(self.model), tuple(enc.input_ids))
        if self._base_key != key:
            self._base = self._run_model(enc, ())
            self._base_key = key
            self.importance = self.importance_figure = None
            _plot(self.importance_out, None)
        heads = self.ablated
        hidden = self._run_model(enc, heads) if heads else self._base
        off = ", ".join(f"L{l}H{h}" for l, h in sorted(heads)) or "none"
        if mode == "mlm":
            self._offer_switch(False)
            pos = enc.input_ids.index(self.tok.mask_id)
            self.baseline, base_probs = self._top(self._base[pos])
            self.predictions, probs = self._top(hidden[pos])
            self.change = None
            self.figure = _ablation_figure(self.baseline, self.predictions, base_probs, probs, self.tok, off)
            (b_tok, b_p), (a_tok, a_p) = self.baseline[0], self.predictions[0]
            self.summary.value = html.escape(
                f"top guess with every head on: {b_tok} ({b_p:.3f}); heads off ({off}): {a_tok} ({a_p:.3f})",
                quote=False)
            if enc.input_ids.count(self.tok.mask_id) > 1:
                self.say("the text has several [MASK]s: the guesses shown are for the first")
        else:
            self.predictions = self.baseline = None
            if heads:   # (T,) cosine distance per token; exactly 0 with every head on, not 1e-7 of rounding
                cos = torch.nn.functional.cosine_similarity(hidden, self._base, dim=-1).cpu()
                self.change = (1.0 - cos).clamp_min(0.0)
            else:
                self.change = torch.zeros(len(enc))
            self.figure = _change_figure(enc.tokens, self.change, off)
            self.summary.value = html.escape(
                f"mean cosine distance of the output vectors from the all-heads run: {float(self.change.mean()):.4f}",
                quote=False)
            if has_mlm_head(self.model):
                self.say("no [MASK] in the text, so this shows how far each token's output vector moves; "
                         "put [MASK] in the text to see the predictions change")
            else:
                self._offer_switch(True)
                self.say(f"{self.display_name} has no masked-LM head, so this measures how far each token's "
                         f"output vector moves instead of the predictions — switch to {WITH_HEADS} to see "
                         "predictions change")
        _plot(self.out, self.figure)

    def rank_heads(self) -> None:
        """Score every head alone with `probe.head_importance` (L × heads forward passes) and show it."""
        self._encode(self.text.value)
        self.importance = probe.head_importance(self.model, self.tok, self.text.value)
        self.importance_figure = F.head_importance_figure(self.importance)
        _plot(self.importance_out, self.importance_figure)


def _ablation_figure(baseline, ablated, base_probs, probs, tok, off: str) -> go.Figure:
    """Grouped bars: the union of both top-k lists, P with every head on vs with the chosen heads off."""
    tokens = list(dict.fromkeys([t for t, _ in baseline] + [t for t, _ in ablated]))
    ids = [tok.token_to_id(t) for t in tokens]
    labels = _labels(tokens)
    fig = go.Figure()
    series = (("every head on", base_probs, F.PALETTE["mlm"]), (f"off: {off}", probs, F.PALETTE["notnext"]))
    for name, p, color in series:
        values = [float(p[i]) for i in ids]
        fig.add_trace(go.Bar(x=values, y=labels, orientation="h", name=name, marker_color=color,
                             customdata=tokens, hovertemplate="%{customdata}: p = %{x:.3f}<extra>" + name + "</extra>"))
    return _finish(fig, f"the guess for [MASK] with heads switched off ({off})", barmode="group",
                     xaxis=dict(title="probability", rangemode="tozero"),
                     yaxis=dict(title="guess", autorange="reversed"),
                     legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                     margin=dict(l=120, r=30, t=80, b=60), width=600, height=160 + 28 * len(tokens))


def _change_figure(tokens, change: torch.Tensor, off: str) -> go.Figure:
    labels = _labels(tokens)
    fig = go.Figure(go.Bar(x=labels, y=change.tolist(), marker_color=F.PALETTE["notnext"], customdata=tokens,
                           hovertemplate="%{customdata}: cosine distance %{y:.4f}<extra></extra>"))
    return _finish(fig, f"how far each token's output vector moves with heads off ({off})",
                     xaxis=dict(title="token", tickangle=45),
                     yaxis=dict(title="cosine distance from all heads on", rangemode="tozero"),
                     width=max(520, 26 * len(tokens) + 160), height=420)
