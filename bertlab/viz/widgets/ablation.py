"""HeadAblation (notebook 10): switch attention heads off and watch the model's guess for [MASK] change.

    w = HeadAblation("Tom went to the [MASK] to open a savings account.")
    w.toggle(0, 3)                     # head 3 of layer 0 off: w.predictions, w.figure follow
    w.rank.click()                     # every head alone, scored (probe.head_importance)

The numbers are probe.Ablation's: the widget keeps one per text, so each click costs one forward pass.
"""

from __future__ import annotations

import contextlib
import html
import numbers
from collections.abc import Iterable

import plotly.graph_objects as go
import torch

from ... import probe
from .. import figures as F
from ..views import controls as W
from .base import WIDE, WITH_HEADS, Widget, controls_row, show_figure, text_arg, whole_arg

__all__ = ["HeadAblation"]


class HeadAblation(Widget):
    """Switch attention heads off and watch the model's guess for [MASK] change.

    One toggle per (layer, head) (`heads[(l, h)]`; `toggle(l, h)` from Python); `ablated` is the set of
    heads switched off. Each change runs the model once with those heads' outputs zeroed
    (`probe.Ablation`, hooks removed straight after). With an MLM head and a [MASK] in the text,
    `predictions` are the top-k guesses for the first [MASK] (`baseline` with every head on); otherwise
    (MiniLM, or no [MASK]) the figure shows how far each token's output vector moved (`change`, cosine
    distance). "rank heads" scores every head alone with `probe.head_importance` (`importance`).
    """

    default_model = "bertlab-mini"
    module = "view"

    def __init__(self, text: str = "Tom went to the [MASK] to open a savings account.", model="bertlab-mini",
                 top_k: int = 5):
        text, top_k = text_arg("text", text), whole_arg("top_k", top_k, 1, 50, " (guesses compared)")
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
        self.predictions: list[probe.Guess] | None = None
        self.baseline: list[probe.Guess] | None = None
        self.change: torch.Tensor | None = None
        self.effect: probe.AblationEffect | None = None
        self._ablation: probe.Ablation | None = None     # the text's run with every head on, kept
        self.all_on.on_click(lambda _: self._run(self.set_ablated, ()))
        self.rank.on_click(lambda _: self._run(self.rank_heads))
        if self.model is not None:
            self._model_changed()
        self._start([controls_row(self.model_select, self.switch), self.text,
                    W.HTML("<b>heads</b> (click to switch off):"), self.grid,
                    controls_row(self.all_on, self.rank), self.message, self.summary, self.out,
                    self.importance_out],
                    watch=[self.text])

    @property
    def ablated(self) -> set[tuple[int, int]]:
        return {lh for lh, b in self.heads.items() if b.value}

    def toggle(self, layer: int, head: int, off: bool | None = None) -> None:
        """Switch head (layer, head) off (or back on); `off=None` flips it. Negative indexes count from the end."""
        try:
            (layer, head), = self._check_heads([(layer, head)])
        except ValueError as e:
            self._fail(str(e))
            return
        b = self.heads[(layer, head)]
        b.value = (not b.value) if off is None else bool(off)

    def set_ablated(self, heads) -> None:
        """Switch off exactly `heads` (pairs (layer, head)), every other head on; one recompute.

        A head that does not exist, or an item that is not a (layer, head) pair of ints, is a ValueError
        and no head changes."""
        heads = self._check_heads(heads)
        # one message to the page for the whole grid, not one per button (a 12 × 12 grid is 144 buttons)
        with self.view.hold_sync() if hasattr(self, "view") else contextlib.nullcontext(), self._hold():
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
            if cfg:                                   # negative indexes count from the end, as in Python
                pair = tuple(i % n if -n <= i < 0 else i
                             for i, n in zip(pair, (cfg.num_hidden_layers, cfg.num_attention_heads)))
            if pair not in self.heads:
                raise ValueError(f"head {pair} does not exist: {where} (negative indexes count from the end)")
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
        self._ablation = None
        self.importance = self.importance_figure = None
        show_figure(self.importance_out, None)

    def _forget(self) -> None:
        super()._forget()
        self._ablation = None

    @staticmethod
    def _style_button(change) -> None:
        change["owner"].button_style = "danger" if change["new"] else ""

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.predictions = self.change = self.effect = None
        self.summary.value = ""

    def _update(self) -> None:
        enc = self._encode(self.text.value)
        ablation = self._ablation
        if ablation is None or ablation.model is not self.model or ablation.enc.input_ids != enc.input_ids:
            ablation = self._ablation = probe.Ablation(self.model, self.tokenizer, self.text.value)
            self.importance = self.importance_figure = None
            show_figure(self.importance_out, None)
        self.effect = effect = ablation.effect(self.ablated, top_k=self.top_k)
        self.figure = F.ablation_figure(effect)
        off = ", ".join(f"L{l}H{h}" for l, h in effect.heads) or "none"
        if effect.metric == "prediction":
            self._offer_switch(False)
            self.baseline, self.predictions, self.change = effect.baseline, effect.guesses, None
            before, after = self.baseline[0], self.predictions[0]
            self.summary.value = html.escape(
                f"top guess with every head on: {before.token} ({before.probability:.3f}); heads off ({off}): "
                f"{after.token} ({after.probability:.3f})",
                quote=False)
            if len(effect.mask_positions) > 1:
                self.say("the text has several [MASK]s: the guesses shown are for the first")
        else:
            self.predictions = self.baseline = None
            self.change = effect.change
            self.summary.value = html.escape(
                f"mean cosine distance of the output vectors from the all-heads run: {float(self.change.mean()):.4f}",
                quote=False)
            if probe.has_mlm_head(self.model):
                self.say("no [MASK] in the text, so this shows how far each token's output vector moves; "
                         "put [MASK] in the text to see the predictions change")
            else:
                self._offer_switch(True)
                self.say(f"{self.display_name} has no masked-LM head, so this measures how far each token's "
                         f"output vector moves instead of the predictions — switch to {WITH_HEADS} to see "
                         "predictions change")
        show_figure(self.out, self.figure)

    def rank_heads(self) -> None:
        """Score every head alone with `probe.head_importance` (L × heads forward passes) and show it."""
        self._encode(self.text.value)
        self.importance = probe.head_importance(self.model, self.tokenizer, self.text.value)
        self.importance_figure = F.head_importance_figure(self.importance)
        show_figure(self.importance_out, self.importance_figure)
