"""`AttentionView`: the attention of long inputs and of batches, as plotly figures and standalone files.

bertviz (bertviz_views.py) draws every token as an SVG row and every weight as a line, which gets hard to
read past ~60 tokens. `AttentionView` is for what bertviz lacks: long inputs (up to the model's 512
positions), a batch of texts, and export to a standalone HTML file (plotly.js inlined, layer and head
chosen in the page) or a PNG. Its heatmaps have the look of every other figure (bertlab.viz.figures.look).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from ..inputs import check_vocabularies
from ..probe import attention_weights
from .figures.look import SEQUENTIAL, check_index, check_indices, finish, token_labels

__all__ = ["AttentionView", "check_texts", "TOKEN_TICKS_MAX"]

# Up to this many tokens a figure labels every token on its axes; beyond, it labels positions (hover shows tokens).
TOKEN_TICKS_MAX = 64


def _check_text(value, name: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} is empty: pass a sentence to look at"
                         + (" (or text_pair=None for a single sentence)" if name.startswith("text_pair") else ""))


def check_texts(text, text_pair, where: str = "") -> None:
    """A ValueError that teaches unless `text` is a non-empty str and `text_pair` is None or one too."""
    if (text is None or (isinstance(text, str) and not text.strip())) and text_pair is not None:
        raise ValueError(f"text_pair{where} given without text{where}: the pair is (text, text_pair); "
                         "for one sentence pass it as text")
    _check_text(text, "text" + where)
    if text_pair is not None:
        _check_text(text_pair, "text_pair" + where)


def _position_ticks(labels: list[str], n: int) -> dict:
    """Axis ticks at every ~n/10 positions (1, 2, 5 × 10^k), labelled with the position, not the token."""
    raw = n / 10
    step = next(s * 10 ** e for e in range(6) for s in (1, 2, 5) if s * 10 ** e >= raw)
    at = list(range(0, n, step))
    return dict(tickmode="array", tickvals=[labels[i] for i in at], ticktext=[str(i) for i in at])


class AttentionView:
    """Attention weights of a batch of texts (or pairs), long ones included, as plotly figures.

    `AttentionView(model, tokenizer, texts, text_pairs=None, max_length=512)` runs the model once (padded batches,
    eval mode, no grad) and keeps each example's weights without its padding. Texts longer than `max_length`
    (capped at the model's maximum) are truncated, and the figure says so. Then:

    - `figure(index, layer, head)`: one head's heatmap; without layer/head a grid of every layer × head
      (a long input is max-pooled to at most 64 × 64 cells per head, so sharp patterns stay visible);
    - `to_html(path, index)`: a standalone page (plotly.js inlined) with a layer menu and a head slider;
    - `to_png(path, index, layer, head)`: a PNG via kaleido and a local Chrome/Chromium.

    In a notebook the view shows the first example's grid. Up to 64 tokens the axes name every token;
    beyond, they give positions and hovering shows the tokens.
    """

    def __init__(self, model, tokenizer, texts, text_pairs=None, max_length: int = 512, batch_size: int = 8):
        texts = [texts] if isinstance(texts, str) else texts
        if texts is None or not isinstance(texts, Sequence) or len(texts) == 0:
            raise ValueError("texts must be a str or a non-empty list of str")
        if text_pairs is not None:
            text_pairs = [text_pairs] if isinstance(text_pairs, str) else text_pairs
            if not isinstance(text_pairs, Sequence) or len(text_pairs) != len(texts):
                raise ValueError(f"text_pairs must give one pair (or None) per text: {len(texts)} texts, "
                                 f"{len(text_pairs) if isinstance(text_pairs, Sequence) else text_pairs!r} pairs")
        pairs = list(text_pairs) if text_pairs is not None else [None] * len(texts)
        for i, (text, pair) in enumerate(zip(texts, pairs)):
            check_texts(text, pair, f"[{i}]" if len(texts) > 1 else "")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3:
            raise ValueError(f"max_length must be an int of at least 3 ([CLS], a token, [SEP]), got {max_length!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        vocab = getattr(getattr(model, "config", None), "vocab_size", None)
        if isinstance(vocab, int):                 # any model with a config (a transformers one too)
            check_vocabularies(vocab, tokenizer)
        model_max = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self.max_length = min(max_length, model_max) if model_max else max_length

        encodings: list = []
        self._attentions: list[torch.Tensor] = []          # per example: (L, heads, n, n), padding cut off
        for lo in range(0, len(texts), batch_size):
            chunk = pairs[lo:lo + batch_size]
            batch = tokenizer.batch(texts[lo:lo + batch_size], None if all(p is None for p in chunk) else chunk,
                              max_length=self.max_length)  # right-padded, each text cut to max_length
            stacked = torch.stack(attention_weights(model, batch), dim=1)   # (b, L, heads, T, T)
            for b, e in enumerate(batch.encodings):
                n = len(e)
                self._attentions.append(stacked[b, :, :, :n, :n].clone())
            encodings += batch.encodings
        # an encoding that fills max_length may have been cut: only then is the text encoded again to see
        self.truncated: list[bool] = [len(e) == self.max_length and len(tokenizer(t, p)) > self.max_length
                                      for e, t, p in zip(encodings, texts, pairs)]
        self.tokens: list[list[str]] = [list(e.tokens) for e in encodings]
        self.lengths: list[int] = [len(t) for t in self.tokens]
        self.sentence_b_starts: list[int | None] = [
            e.token_type_ids.index(1) if p is not None and 1 in e.token_type_ids else None
            for e, p in zip(encodings, pairs)]
        self.num_layers, self.num_heads = self._attentions[0].shape[:2]

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        lengths = ", ".join(map(str, self.lengths))
        return (f"AttentionView({len(self)} example{'s' * (len(self) != 1)} of {lengths} tokens, "
                f"{self.num_layers} layers × {self.num_heads} heads)")

    def attentions(self, index: int = 0) -> torch.Tensor:
        """Example `index`'s weights, (layers, heads, n, n) without padding: row i is where token i looks."""
        return self._attentions[self._index(index)]

    # -- figures ------------------------------------------------------------------------------------------

    def figure(self, index: int = 0, layer: int | None = None, head: int | None = None, grid_max: int = 64):
        """One head's heatmap when `layer` and `head` are given; otherwise a grid (rows = layers, columns = heads)
        of every head, or of one layer's heads (`layer` only), or of one head across layers (`head` only).

        In the grid, an input longer than `grid_max` tokens is max-pooled over blocks of k × k tokens.
        """
        index = self._index(index)
        if layer is not None and head is not None:
            return self._head_figure(index, self._layer(layer), self._head(head))
        layers = [self._layer(layer)] if layer is not None else list(range(self.num_layers))
        heads = [self._head(head)] if head is not None else list(range(self.num_heads))
        return self._grid_figure(index, layers, heads, grid_max)

    def _head_trace(self, index: int, layer: int, head: int, visible: bool = True):
        import plotly.graph_objects as go

        labels = token_labels(self.tokens[index])
        z = self._attentions[index][layer, head].numpy()      # (n, n)
        return go.Heatmap(z=z, x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=float(z.max()),
                          visible=visible, colorbar=dict(title="weight"), name=f"layer {layer}, head {head}",
                          hovertemplate="%{y} → %{x}<br>weight %{z:.4f}<extra></extra>")

    def _title(self, index: int, layer: int, head: int) -> str:
        return f"{self._example_name(index)} · layer {layer}, head {head}: where each token looks"

    def _example_name(self, index: int) -> str:
        name = f"example {index} ({self.lengths[index]} tokens"
        return name + (f", truncated to max_length {self.max_length})" if self.truncated[index] else ")")

    def _head_layout(self, index: int) -> dict:
        tokens, n = self.tokens[index], self.lengths[index]
        labels = token_labels(tokens)
        if n <= TOKEN_TICKS_MAX:
            x_ticks = y_ticks = dict(tickmode="array", tickvals=labels, ticktext=tokens)
            x_title, y_title = "attends to (key)", "token (query)"
        else:
            x_ticks = y_ticks = _position_ticks(labels, n)
            x_title, y_title = "attends to (key position; hover for tokens)", "token (query position)"
        side = min(820, max(320, 18 * n))                     # plot area in px; cells square
        b = self.sentence_b_starts[index]
        line = dict(color="gray", width=1, dash="dot")
        shapes = [] if b is None else [                       # the boundary between sentence A and sentence B
            dict(type="line", x0=b - 0.5, x1=b - 0.5, y0=-0.5, y1=n - 0.5, line=line),
            dict(type="line", y0=b - 0.5, y1=b - 0.5, x0=-0.5, x1=n - 0.5, line=line)]
        return dict(
            shapes=shapes, margin=dict(l=110, r=40, t=70, b=110),
            width=side + 150 + 60, height=side + 180,
            xaxis=dict(title=x_title, tickangle=-90 if n <= TOKEN_TICKS_MAX else 0, **x_ticks),
            yaxis=dict(title=y_title, autorange="reversed", scaleanchor="x", **y_ticks),
        )

    def _head_figure(self, index: int, layer: int, head: int):
        import plotly.graph_objects as go

        return finish(go.Figure(self._head_trace(index, layer, head)), self._title(index, layer, head),
                      **self._head_layout(index))

    def _grid_figure(self, index: int, layers: list[int], heads: list[int], grid_max: int):
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        if isinstance(grid_max, bool) or not isinstance(grid_max, int) or grid_max < 1:
            raise ValueError(f"grid_max must be a positive int, got {grid_max!r}")
        tokens, n = self.tokens[index], self.lengths[index]
        k = math.ceil(n / grid_max)                           # block size; 1 = every token its own cell
        attn = self._attentions[index][layers][:, heads]      # (rows, cols, n, n)
        if k > 1:
            # max, not mean: a head that puts all its weight on one token in a block still shows
            attn = F.max_pool2d(attn, kernel_size=k, stride=k, ceil_mode=True)
            labels = [f"tokens {i}–{min(i + k, n) - 1}" for i in range(0, n, k)]
            hover = "%{y} → %{x}<br>max weight %{z:.4f}<extra>layer %{meta[0]}, head %{meta[1]}</extra>"
        else:
            labels = token_labels(tokens)
            hover = "%{y} → %{x}<br>weight %{z:.4f}<extra>layer %{meta[0]}, head %{meta[1]}</extra>"
        rows, cols = len(layers), len(heads)
        fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.02 / max(1, cols / 4),
                            vertical_spacing=0.02 / max(1, rows / 4),
                            row_titles=[f"layer {l}" for l in layers], column_titles=[f"head {h}" for h in heads])
        for r, l in enumerate(layers):
            for c, h in enumerate(heads):
                fig.add_trace(go.Heatmap(z=attn[r, c].numpy(), x=labels, y=labels, coloraxis="coloraxis",
                                         meta=[l, h], hovertemplate=hover), row=r + 1, col=c + 1)
        cell = max(40, min(110, 1000 // cols))
        pooled = f"; each cell the max over {k} × {k} tokens" if k > 1 else ""
        fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")
        fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="", autorange="reversed")
        fig.update_annotations(font_size=11)
        return finish(fig, f"{self._example_name(index)}: attention of every head (row: query, column: key)" + pooled,
                      margin=dict(l=30, r=90, t=90, b=30), width=cols * cell + 160, height=rows * cell + 130,
                      coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=float(attn.max()),
                                     colorbar=dict(title="weight")))

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return self.figure(0)._repr_mimebundle_(include, exclude, **kwargs)

    # -- files --------------------------------------------------------------------------------------------

    def html_figure(self, index: int = 0, layers=None, heads=None):
        """The figure `to_html` writes: one head at a time, a layer menu and a head slider, all in the page."""
        import plotly.graph_objects as go

        index = self._index(index)
        layers = check_indices(layers, self.num_layers, "layer", "layers") or list(range(self.num_layers))
        heads = check_indices(heads, self.num_heads, "head", "heads per layer") or list(range(self.num_heads))
        nh, count = len(heads), len(layers) * len(heads)

        def visible(li: int, hi: int) -> list[bool]:
            return [i == li * nh + hi for i in range(count)]

        fig = go.Figure([self._head_trace(index, l, h, visible=(li == 0 and hi == 0))
                         for li, l in enumerate(layers) for hi, h in enumerate(heads)])
        # one head slider per layer, only the chosen layer's shown: a pure-plotly way to pick (layer, head)
        sliders = [dict(
            active=0, visible=li == 0, x=0.0, len=1.0, y=-0.02, yanchor="top", pad=dict(t=60),
            currentvalue=dict(prefix=f"layer {l}, head "),
            steps=[dict(label=str(h), method="update",
                        args=[{"visible": visible(li, hi)}, {"title.text": self._title(index, l, h)}])
                   for hi, h in enumerate(heads)],
        ) for li, l in enumerate(layers)]
        buttons = [dict(label=f"layer {l}", method="update",
                        args=[{"visible": visible(li, 0)},
                              {"title.text": self._title(index, l, heads[0]), f"sliders[{li}].active": 0,
                               **{f"sliders[{k}].visible": k == li for k in range(len(layers))}}])
                   for li, l in enumerate(layers)]
        layout = self._head_layout(index)
        layout["margin"] = dict(l=110, r=40, t=110, b=200)
        layout["height"] += 90
        return finish(fig, self._title(index, layers[0], heads[0]), sliders=sliders,
                      updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right",
                                        y=1.0, yanchor="bottom", pad=dict(b=12), showactive=True)],
                      **layout)

    def to_html(self, path, index: int = 0, layers=None, heads=None) -> Path:
        """Write example `index` as a standalone HTML page: plotly.js inlined, so it opens with no network.

        Every head's full heatmap is in the file (a 300-token input with 72 heads is ~30 MB); `layers` and
        `heads` keep only some.
        """
        fig = self.html_figure(index, layers, heads)
        path = Path(path)
        fig.write_html(path, include_plotlyjs=True, include_mathjax=False, full_html=True,
                       config={"displaylogo": False, "responsive": True})
        return path

    def to_png(self, path, index: int = 0, layer: int | None = None, head: int | None = None,
               scale: float = 1.0) -> Path:
        """Write `figure(index, layer, head)` as a PNG with kaleido, which drives a local Chrome/Chromium.

        MathJax is off, so the page kaleido renders loads only the plotly.js inside the plotly package.
        """
        import kaleido
        from kaleido.errors import ChromeNotFoundError

        fig = self.figure(index, layer, head)
        try:
            png = kaleido.calc_fig_sync(
                fig, opts=dict(format="png", width=fig.layout.width, height=fig.layout.height, scale=scale),
                kopts={"mathjax": False})
        except ChromeNotFoundError as err:
            raise RuntimeError("PNG export needs Chrome or Chromium: install it (Debian: apt install chromium) "
                               "or point BROWSER_PATH at one; bertlab never downloads a browser") from err
        path = Path(path)
        path.write_bytes(png)
        return path

    # -- checks -------------------------------------------------------------------------------------------

    def _index(self, index) -> int:
        return check_index(index, len(self), "example", "examples")

    def _layer(self, layer) -> int:
        return check_index(layer, self.num_layers, "layer", "layers")

    def _head(self, head) -> int:
        return check_index(head, self.num_heads, "head", "heads per layer")
