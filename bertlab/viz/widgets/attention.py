"""AttentionExplorer (notebook 03): text A (and optional text B) → one head's attention heatmap.

    w = AttentionExplorer("The river bank was muddy.", model="minilm")
    w.layer.value = 3                  # the heatmap now shows layer 3
    w.figure.data[0].z                 # ... and here are its numbers
    w.combine.value = "layer-mean"     # layer 3's heads averaged; "all-sum": every head of every layer summed
    w.words.value = True               # one row per word: pieces merged (keys summed, queries averaged)
    w.hide_special.value, w.threshold.value = True, 0.1    # exBERT's switches: no [CLS]/[SEP], strong links only
    w.guesses                          # with a [MASK] and a model with an MLM head: its guesses, shown beside
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
import torch

from ... import probe
from ...probe.attention_maps import AttentionMap
from .. import figures as F
from ..bertviz_views import BERTVIZ_MAX_TOKENS, head_view_html
from ..figures.look import token_labels
from ..views import controls as W
from ..views.base import typed_array
from .base import WIDE, WITH_HEADS, Widget, controls_row, show_figure, show_html, text_arg

# what the heatmap shows: (label, (layer choice, head choice, reduce)); "this" is the layer slider's layer
COMBINE = {"head": ("one head", ("this", "this", "mean")),
           "layer-mean": ("this layer's heads, mean", ("this", "all", "mean")),
           "layer-sum": ("this layer's heads, sum", ("this", "all", "sum")),
           "all-mean": ("all layers and heads, mean", ("all", "all", "mean")),
           "all-sum": ("all layers and heads, sum", ("all", "all", "sum"))}

__all__ = ["AttentionExplorer"]

OFFLINE_BYTES = 512 * 1024      # the attention (L, H, T, T) saved for the book's page is at most this large


class AttentionExplorer(Widget):
    """Text A (and optional text B) → one head's attention heatmap; layer and head sliders pick the head.

    `combine` averages or sums a layer's heads, or every head of every layer; `words` merges WordPieces
    into words; `hide_special` drops [CLS] and [SEP]; `threshold` blanks weights below it (the rules are
    `bertlab.probe.attention_map`'s). With a [MASK] in the text and a model that has an MLM head, the
    model's guesses for each mask show beside the heatmap (`guesses`, a `FillMask`). `show_grid` adds
    every layer × head at once (`grid_figure`), `show_head_view` the offline bertviz head view
    (`head_view_html`). Moving a control reuses the forward pass; `figure` is built once and then updated
    in place (the same object, new data).
    """

    module = "attention"

    def __init__(self, text: str = "The cat sat on the mat because it was warm.", text_pair: str = "",
                 model="minilm", layer: int = 0, head: int = 0):
        text, text_pair = text_arg("text", text), text_arg("text_pair", text_pair)
        if head is None:
            raise ValueError("head must be a whole number (negative counts from the end), got None")
        super().__init__(model)
        self.text = W.Text(value=text, description="text A", layout=WIDE)
        self.text_pair = W.Text(value=text_pair, description="text B", placeholder="optional second sentence",
                                layout=WIDE)
        self.combine = W.Dropdown(options=[(label, key) for key, (label, _) in COMBINE.items()], value="head",
                                  description="show")
        self.words = W.Checkbox(value=False, description="words, not WordPieces", indent=False,
                                layout=W.Layout(width="auto"))
        self.hide_special = W.Checkbox(value=False, description="hide [CLS]/[SEP]", indent=False,
                                       layout=W.Layout(width="auto"))
        self.threshold = W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01, description="threshold",
                                       readout_format=".2f")
        self.guesses_out = W.HTML(value="")
        self.guesses = None                             # the FillMask shown beside the heatmap, if any
        self.show_grid = W.ToggleButton(value=False, description="all heads (grid)", icon="th", layout=W.Layout(width="auto"))
        self.show_head_view = W.ToggleButton(value=False, description="head view (bertviz)", icon="eye", layout=W.Layout(width="auto"))
        self.grid_out, self.head_view_out = W.Output(), W.Output()
        self.grid_figure: go.Figure | None = None
        self.head_view_html: str | None = None
        self._keys = {}                                 # what each view was last built from
        self._tokens: list[str] = []                    # the tokens the heatmap shows
        self._sizes: dict[int, tuple] = {}              # T → the (width, height) attention_heatmap gives
        self._layer_sliders(layer, head)
        self._start([
            controls_row(self.model_select, self.switch), self.text, self.text_pair,
            controls_row(self.layer, self.head, self.combine),
            controls_row(self.words, self.hide_special, self.threshold),
            controls_row(self.show_grid, self.show_head_view),
            self.message, W.HBox([self.out, self.guesses_out], layout=W.Layout(flex_flow="row wrap")),
            self.grid_out, self.head_view_out],
            watch=[self.text, self.text_pair, self.layer, self.head, self.combine, self.words, self.hide_special,
                   self.threshold, self.show_grid, self.show_head_view])

    def _forget(self) -> None:
        super()._forget()
        self._keys = {}

    def view_options(self) -> dict:
        """What the controls ask `attention_map` for: layer, head, reduce, words, hide_special, threshold."""
        layer, head, reduce = COMBINE[self.combine.value][1]
        return dict(layer=self.layer.value if layer == "this" else layer,
                    head=self.head.value if head == "this" else head, reduce=reduce, words=self.words.value,
                    hide_special=self.hide_special.value, threshold=self.threshold.value)

    def _fail(self, text: str) -> None:
        super()._fail(text)
        self.guesses, self.guesses_out.value = None, ""
        self.grid_figure = self.head_view_html = None
        show_figure(self.grid_out, None)
        show_html(self.head_view_out, None)
        self._keys = {}

    def _update(self) -> None:
        enc = self._encode(self.text.value, self.text_pair.value)
        out = self._forward(enc, output_attentions=True)
        layer = self.layer.value
        self.head.disabled = self.combine.value != "head"
        self.layer.disabled = self.combine.value.startswith("all")
        amap = AttentionMap.from_output(out, enc.tokens, **self.view_options())
        self._offline(out, enc)
        if self.figure is None or (amap.tokens != self._tokens and len(amap.tokens) not in self._sizes):
            self.figure = F.attention_map_figure(amap)
            self._tokens = amap.tokens
            self._sizes[len(amap.tokens)] = (self.figure.layout.width, self.figure.layout.height)
        else:
            self._patch_heatmap(amap)
        show_figure(self.out, self.figure)
        self._show_guesses()

        if self.show_grid.value:
            if self._keys.get("grid") != self._fwd_key:
                self.grid_figure = F.attention_grid(out, enc.tokens)
                self._keys["grid"] = self._fwd_key
                show_figure(self.grid_out, self.grid_figure)
        elif not self.grid_out.empty:
            show_figure(self.grid_out, None)
            self._keys.pop("grid", None)

        if self.show_head_view.value:
            if self._keys.get("head_view") != self._fwd_key:
                try:
                    self.head_view_html = self._head_view(out, enc, layer)
                except ValueError as e:            # the heatmap stays; only the head view is missing
                    self.head_view_html = None
                    show_html(self.head_view_out, None)
                    self.say(f"head view: {e}", error=True)
                    return
                self._keys["head_view"] = self._fwd_key
                show_html(self.head_view_out, self.head_view_html, "bertviz head view")
        elif not self.head_view_out.empty:
            show_html(self.head_view_out, None)
            self._keys.pop("head_view", None)

    def _offline(self, out, enc) -> None:
        """Save what the module needs to redraw every layer / head / combine / words / hide / threshold without a
        kernel (the book's page, js/attention.js `offline`): this text's attention as one float32 buffer. A
        long text's (more than OFFLINE_BYTES) is not saved: on the page, its controls then need the model."""
        if self._keys.get("offline") == self._fwd_key:
            return
        self._keys["offline"] = self._fwd_key
        L, (_, H, T, _) = len(out.attentions), out.attentions[0].shape
        if L * H * T * T * 4 > OFFLINE_BYTES:
            self.view.data = {}
            return
        att = torch.stack([a[0].detach().float().cpu() for a in out.attentions])           # (L, H, T, T)
        names = ("layer", "head", "combine", "words", "hide_special", "threshold")
        self.view.data = {"attentions": typed_array(att.numpy()), "tokens": list(enc.tokens),
                          "controls": {n: getattr(self, n).id for n in names},
                          "combine": [list(v[1]) for v in COMBINE.values()], "figure": self.out.id}

    def _patch_heatmap(self, amap) -> None:
        """Turn the current figure into what `figures.attention_map_figure(amap)` would build, without building it.

        A new figure costs ~20 ms of plotly validation and template copying; changing the data of this one
        costs a few. Only what differs is set; the size of a T-row figure comes from the first one built
        (`_sizes`). A test holds the result equal to attention_map_figure's.
        """
        tokens, weights = amap.tokens, amap.weights
        fig, trace = self.figure, self.figure.data[0]
        with fig.batch_update():
            trace.z = weights                   # numpy: it goes to the browser as a float32 buffer
            trace.zmax = float(weights.max())
            fig.layout.title.text = f"{amap.title}: where each token looks"
            if tokens != self._tokens:
                labels = token_labels(tokens)
                trace.x = trace.y = labels
                F.sparse_ticks(fig, labels)
                fig.layout.width, fig.layout.height = self._sizes[len(tokens)]
                self._tokens = tokens

    def _show_guesses(self) -> None:
        """The model's top 5 for each [MASK], beside the heatmap (`probe.fill_mask` on the same texts)."""
        texts = self.text.value + " " + self.text_pair.value
        if "[MASK]" not in texts:
            self.guesses, self.guesses_out.value = None, ""
            return
        if not probe.has_mlm_head(self.model):
            self.guesses = None
            self.guesses_out.value = (f'<div style="padding:8px;color:#33475b">{self.display_name} has no MLM head, '
                                      f"so it guesses nothing at [MASK]: {WITH_HEADS} does</div>")
            self._offer_switch(True)
            return
        self._offer_switch(False)
        key = (self._fwd_key, "guesses")
        if self._keys.get("guesses") != key:
            pair = self.text_pair.value.strip() or None
            self.guesses = probe.fill_mask(self.model, self.tokenizer, self.text.value, top_k=5, text_pair=pair)
            self._keys["guesses"] = key
            rows = []
            for n, (pos, guesses) in enumerate(zip(self.guesses.mask_positions, self.guesses.guesses), 1):
                words = ", ".join(f"<b>{html.escape(g.token)}</b> {g.probability:.2f}" for g in guesses)
                rows.append(f"<div>[MASK] {n} (token {pos}): {words}</div>")
            self.guesses_out.value = ('<div style="padding:8px;min-width:220px"><div style="color:#33475b">'
                                      f"{html.escape(self.display_name)} guesses</div>{''.join(rows)}</div>")

    def _head_view(self, out, enc, layer: int) -> str:
        """bertviz's head view of the cached forward pass, offline (bertlab.viz.bertviz_views), opening at
        `layer`. Without bertviz installed this is the message its ImportError gives, not a traceback."""
        if len(enc) > BERTVIZ_MAX_TOKENS:
            raise ValueError(f"bertviz draws at most {BERTVIZ_MAX_TOKENS} tokens and this text has {len(enc)}; "
                             "the heatmap and the grid still work")
        b_start = enc.token_type_ids.index(1) if 1 in enc.token_type_ids else None
        try:
            return head_view_html(attentions=out, tokens=enc.tokens, sentence_b_start=b_start, layer=layer)
        except ImportError as e:                    # bertviz is optional: bertviz_views.bertviz says how to get it
            raise ValueError(f"not available in this installation ({e})") from None
