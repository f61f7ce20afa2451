"""Attention figures (lessons 03 and 10): one map as a heatmap, or every layer × head at a glance.

`out` is a model output run with `output_attentions=True`; which weights are drawn (a head, a mean of heads,
words instead of pieces) is `bertlab.probe.attention_map`'s decision, and these only draw it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ...model.bert import BertOutput
from ...probe.attention_maps import AttentionMap
from .look import SEQUENTIAL, check_index, check_tokens, finish, token_labels

__all__ = ["attention_heatmap", "attention_map_figure", "attention_grid", "sparse_ticks", "MAX_TICKS"]


def _attentions(out) -> tuple[torch.Tensor, ...]:
    if not isinstance(out, BertOutput) and not hasattr(out, "attentions"):
        raise ValueError(f"expected a BertOutput (the result of model(...)), got {type(out).__name__}")
    if not out.attentions:
        raise ValueError("this output has no attention weights: run the model with output_attentions=True")
    return out.attentions


def attention_heatmap(out: BertOutput, tokens: Sequence[str], layer=0, head=0, batch_index: int = 0,
                      reduce: str = "mean", words: bool = False, hide_special: bool = False,
                      threshold: float = 0.0) -> go.Figure:
    """Attention as a heatmap: row i is where token i looks, and (for one head) the row sums to 1.

    `out` must come from a forward pass with `output_attentions=True`. `layer` and `head` may also be a
    list or "all" (combined by `reduce`); `words`, `hide_special` and `threshold` are
    `bertlab.probe.attention_map`'s, which chooses what is drawn (its docstring states the rules).
    """
    amap = AttentionMap.from_output(_attentions(out), tokens, layer=layer, head=head, reduce=reduce, words=words,
                                    hide_special=hide_special, threshold=threshold, batch_index=batch_index)
    return attention_map_figure(amap)


MAX_TICKS = 64          # more token labels than this on an axis are unreadable and slow to draw (512 × 2 texts)


def sparse_ticks(fig: go.Figure, labels: list[str]) -> None:
    """Label every token up to MAX_TICKS; beyond, every k-th (hover still names each cell's tokens)."""
    step = -(-len(labels) // MAX_TICKS)
    ticks = labels[::step] if step > 1 else None
    fig.update_xaxes(tickvals=ticks)
    fig.update_yaxes(tickvals=ticks)


def attention_map_figure(amap: AttentionMap) -> go.Figure:
    """An `AttentionMap` (bertlab.probe.attention_map) as a heatmap, one row per query, one column per key."""
    weights, tokens = amap.weights, amap.tokens
    T = len(tokens)
    labels = token_labels(tokens)
    fig = go.Figure(go.Heatmap(
        z=weights, x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=float(weights.max()),
        # the axis labels name both tokens on hover: no per-cell custom data (T² strings at 512 tokens is MBs)
        hovertemplate="%{y} → %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title="weight"),
    ))
    sparse_ticks(fig, labels)
    return finish(fig, f"{amap.title}: where each token looks",
                  xaxis_title="attends to (key)", yaxis_title="token (query)",
                  yaxis_autorange="reversed", width=min(1000, max(420, 28 * T + 160)),
                  height=min(1000, max(380, 24 * T + 140)))     # ≤ 1,000 px: a long text gets smaller cells


def attention_grid(out: BertOutput, tokens: Sequence[str], batch_index: int = 0, max_tokens: int = 128,
                   cell_px: int = 120) -> go.Figure:
    """Every head of every layer at a glance: rows = layers, columns = heads, one shared colour scale.

    Cells have no tick labels (at 128 tokens they could not be read anyway): hover for the layer, head,
    query token, key token and weight. Texts longer than `max_tokens` show their first `max_tokens`.
    Trace order is layer-major: `fig.data[layer * heads + head]`.
    """
    attentions = _attentions(out)
    L = len(attentions)
    B, A, T, _ = attentions[0].shape
    b = check_index(batch_index, B, "batch_index")
    tokens = check_tokens(tokens, T, "attention maps")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    n = min(len(tokens), max_tokens)
    labels = token_labels(tokens[:n])
    weights = torch.stack([a[b, :, :n, :n].detach().float().cpu() for a in attentions])    # (L, A, n, n)

    gap = 6                                                                  # pixels between cells
    cell_px = min(cell_px, max(24, (840 - (A - 1) * gap) // A))              # the whole grid ≤ 1,000 px wide
    width, height = A * cell_px + (A - 1) * gap, L * cell_px + (L - 1) * gap
    fig = make_subplots(rows=L, cols=A, horizontal_spacing=gap / width if A > 1 else 0.0,
                        vertical_spacing=gap / height if L > 1 else 0.0,
                        column_titles=[f"head {h}" for h in range(A)])
    for layer in range(L):
        for head in range(A):
            fig.add_trace(go.Heatmap(
                z=weights[layer, head].numpy(), x=labels, y=labels, coloraxis="coloraxis",
                name=f"layer {layer}, head {head}",
                hovertemplate=f"layer {layer}, head {head}<br>%{{y}} → %{{x}}<br>weight %{{z:.3f}}<extra></extra>"),
                row=layer + 1, col=head + 1)
        fig.update_yaxes(title_text=f"layer {layer}", title_standoff=2, row=layer + 1, col=1)
    fig.update_xaxes(showticklabels=False, ticks="", showgrid=False)
    fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, autorange="reversed")
    shown = f" (first {n} of {len(tokens)} tokens)" if n < len(tokens) else ""
    return finish(
        fig, f"all {L} layers × {A} heads{shown}: look for diagonals (next/previous token), "
             "columns ([CLS], [SEP]) and broad rows",
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=float(weights.max()),
                       colorbar=dict(title="weight", thickness=12)),
        margin=dict(l=70, r=90, t=80, b=20), width=width + 160, height=height + 100)
