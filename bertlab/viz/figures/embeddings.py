"""Figures of BERT's input (lesson 02): the token + segment + position sum, and what positions learn.

Pure functions of a model output or a weight matrix, in the shared look (figures.look); none runs a model.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ...model.bert import BertOutput
from ...probe.cosine import cosine_similarity
from .look import DIVERGING, EMBEDDING_PARTS, PALETTE, as_float, check_index, check_tokens, finish, token_labels

__all__ = ["embedding_sum", "sinusoidal_positions", "position_similarity"]


def embedding_sum(out: BertOutput, tokens: Sequence[str], batch_index: int = 0, dims: int = 32) -> go.Figure:
    """BERT's input, token by token: the token, segment and position parts, their sum, and LayerNorm(sum).

    Top: the L2 norm of each part per token (grouped bars). Bottom: the first `dims` dimensions of each part
    as heatmaps; the raw parts share one colour scale, LayerNorm(sum) has its own, because LayerNorm rescales
    every token to mean 0 and variance 1 (about ten times the raw parts of a trained BERT).
    """
    parts = getattr(out, "embeddings", None)
    if parts is None or not hasattr(parts, "token"):
        raise ValueError("this output has no embedding parts: pass the BertOutput returned by model(...)")
    B, T, H = parts.token.shape
    b = check_index(batch_index, B, "batch_index")
    tokens = check_tokens(tokens, T, "embeddings")
    n, k = len(tokens), min(int(dims), H)
    if k < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    labels = token_labels(tokens)
    values = {name: getattr(parts, name)[b, :n].detach().float().cpu() for name, _ in EMBEDDING_PARTS}   # each (n, H)

    fig = make_subplots(rows=2, cols=5, specs=[[{"colspan": 5}, None, None, None, None], [{}] * 5],
                        row_heights=[0.4, 0.6], vertical_spacing=0.16, horizontal_spacing=0.02,
                        subplot_titles=[""] + [title for _, title in EMBEDDING_PARTS])
    for name, title in EMBEDDING_PARTS:
        fig.add_trace(go.Bar(
            x=labels, y=values[name].norm(dim=-1).numpy(), name=title, marker_color=PALETTE[name],
            hovertemplate=f"%{{x}}<br>{title}: ‖·‖ = %{{y:.3f}}<extra></extra>"), row=1, col=1)
    raw = max(float(values[name][:, :k].abs().max()) for name in ("token", "segment", "position", "sum"))
    normed = float(values["normed"][:, :k].abs().max())
    for c, (name, title) in enumerate(EMBEDDING_PARTS, start=1):
        fig.add_trace(go.Heatmap(
            z=values[name][:, :k].numpy(), x=list(range(k)), y=labels,
            coloraxis="coloraxis2" if name == "normed" else "coloraxis",
            hovertemplate=f"%{{y}}<br>{title}, dim %{{x}}: %{{z:.3f}}<extra></extra>"), row=2, col=c)
        fig.update_yaxes(autorange="reversed", showticklabels=c == 1, dtick=1, row=2, col=c)
        fig.update_xaxes(title_text=f"dims 0…{k - 1}", row=2, col=c)
    fig.update_yaxes(title_text="L2 norm", row=1, col=1)
    bar = dict(thickness=12, len=0.5, y=0.0, yanchor="bottom")
    return finish(
        fig, "embedding = token + segment + position, then LayerNorm: compare the sizes of the parts",
        barmode="group", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        coloraxis=dict(colorscale=DIVERGING, cmin=-raw, cmax=raw, colorbar=dict(title="raw", x=1.01, **bar)),
        coloraxis2=dict(colorscale=DIVERGING, cmin=-normed, cmax=normed,
                        colorbar=dict(title="normed", x=1.08, **bar)),
        margin=dict(l=90, r=110, t=100, b=60),
        width=min(1000, max(640, 30 * n + 260)), height=360 + max(260, 16 * n))   # ≤ 1,000 px (issue 30)


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """The Transformer's fixed position encoding, (n, d): PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). BERT learns its positions instead; this is for comparison."""
    for name, v in (("n", n), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    pos = torch.arange(n, dtype=torch.float64)[:, None]                     # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)                       # (ceil(d/2),)
    angle = pos / 10000.0 ** (two_i / d)                                     # (n, ceil(d/2))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.float()


def position_similarity(position_weight, n: int | None = None, compare_sinusoidal: bool = True) -> go.Figure:
    """Cosine similarity between the first `n` learned position vectors, beside the sinusoidal encoding's.

    `position_weight` is (max_positions, H), e.g. `model.embeddings.position_embeddings.weight` (or that
    `nn.Embedding` itself). A bright band along the diagonal means nearby positions get similar vectors.
    """
    if isinstance(position_weight, torch.nn.Embedding):
        position_weight = position_weight.weight
    w = as_float(position_weight, "position_weight", (2,))
    P, H = w.shape
    n = P if n is None else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= P:
        raise ValueError(f"n must be an int between 1 and {P} (the learned positions), got {n!r}")
    mats = [("learned (BERT)", cosine_similarity(w[:n]))]
    if compare_sinusoidal:
        mats.append(("sinusoidal (Transformer)", cosine_similarity(sinusoidal_positions(n, H))))
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=[t for t, _ in mats], horizontal_spacing=0.08)
    for c, (title, sim) in enumerate(mats, start=1):
        fig.add_trace(go.Heatmap(
            z=sim.numpy(), coloraxis="coloraxis", name=title,
            hovertemplate=f"{title}<br>position %{{y}} · position %{{x}}<br>cosine %{{z:.3f}}<extra></extra>"),
            row=1, col=c)
        fig.update_xaxes(title_text="position", constrain="domain", row=1, col=c)
        fig.update_yaxes(title_text="position" if c == 1 else None, autorange="reversed",
                         scaleanchor=f"x{'' if c == 1 else c}", constrain="domain", row=1, col=c)
    return finish(fig, f"cosine similarity of the first {n} position vectors: nearby positions look alike",
                   coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, colorbar=dict(title="cosine")),
                   margin=dict(l=60, r=20, t=90, b=60), width=440 * len(mats) + 120, height=520)
