"""EmbeddingSumExplorer (notebook 02): BERT's input, token by token: token + segment + position → LayerNorm.

    w = EmbeddingSumExplorer("The cat sat on the mat.", "It was warm there.")
    w.parts.normed                     # (1, T, H): what the first encoder layer reads
    w.show_positions.value = True      # the learned position vectors' similarity beside the sinusoidal ones
"""

from __future__ import annotations

from types import SimpleNamespace

import plotly.graph_objects as go

from ... import probe
from .. import figures as F
from ..figures.look import EMBEDDING_PARTS, token_labels
from ..views import controls as W
from .base import WIDE, Widget, controls_row, show_figure, text_arg

__all__ = ["EmbeddingSumExplorer"]


class EmbeddingSumExplorer(Widget):
    """BERT's input, token by token: token + segment + position → LayerNorm (`embedding_sum`).

    Only the embedding layer runs (the encoder is not needed for this picture). `show_positions` adds the
    cosine similarity of the learned position vectors beside the sinusoidal ones (`positions_figure`).
    """

    module = "view"

    def __init__(self, text: str = "The cat sat on the mat.", text_pair: str = "It was warm there.",
                 model="minilm"):
        text, text_pair = text_arg("text", text), text_arg("text_pair", text_pair)
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
        self._start([controls_row(self.model_select, self.show_positions), self.text, self.text_pair,
                    self.message, self.out, self.positions_out],
                    watch=[self.text, self.text_pair, self.show_positions])

    def _update(self) -> None:
        enc = self._encode(self.text.value, self.text_pair.value)
        key = (id(self.model), tuple(enc.input_ids), tuple(enc.token_type_ids))
        if key != self._fig_key or self.figure is None:
            self.parts = probe.embedding_parts(self.model, enc)
            n = len(enc)
            if self._fig_key is None or self._fig_key[0] != key[0]:
                self._sizes = {}
            if self.figure is None or n not in self._sizes:
                self.figure = F.embedding_sum(SimpleNamespace(embeddings=self.parts), enc.tokens)
                self._sizes[n] = (self.figure.layout.width, self.figure.layout.height)
            else:
                self._patch(self.parts, enc.tokens)
            self._fig_key = key
            show_figure(self.out, self.figure)
        if self.show_positions.value:
            if self._pos_key != id(self.model):
                weight = self.bert.embeddings.position_embeddings.weight
                self.positions_figure = F.position_similarity(weight, n=min(len(weight), 128))
                self._pos_key = id(self.model)
                show_figure(self.positions_out, self.positions_figure)
        elif not self.positions_out.empty:
            show_figure(self.positions_out, None)
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
        labels = token_labels(tokens)
        names = [name for name, _ in EMBEDDING_PARTS]
        values = {name: getattr(parts, name)[0, :n].detach().float().cpu() for name in names}      # (n, H)
        fig = self.figure
        bars, maps = fig.data[:len(names)], fig.data[len(names):]
        with fig.batch_update():
            for name, bar, heat in zip(names, bars, maps):
                bar.x = labels
                bar.y = values[name].norm(dim=-1).numpy()
                heat.z = values[name][:, :k].numpy()
                heat.y = labels
            raw = max(float(values[name][:, :k].abs().max()) for name in ("token", "segment", "position", "sum"))
            normed = float(values["normed"][:, :k].abs().max())
            fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax = -raw, raw
            fig.layout.coloraxis2.cmin, fig.layout.coloraxis2.cmax = -normed, normed
            fig.layout.width, fig.layout.height = self._sizes[n]
