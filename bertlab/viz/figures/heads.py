"""How much each attention head matters (lesson 10): an importance score per head, and what switching heads off did.

Both take a probe's result (`probe.head_importance`, `probe.Ablation(...).effect(heads)`); none runs a model.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ...probe.fill_mask import GuessChange
from .look import DIVERGING, PALETTE, SEQUENTIAL, as_float, finish, token_labels

__all__ = ["head_importance_figure", "ablation_figure"]


def head_importance_figure(scores) -> go.Figure:
    """A score per attention head, (layers, heads), e.g. `probe.head_importance(...)` or its `.scores`."""
    s = as_float(getattr(scores, "scores", scores), "scores", (2,))
    L, A = s.shape
    signed = bool((s < 0).any())
    big = max(float(s.abs().max()), 1e-12)
    fig = go.Figure(go.Heatmap(
        z=s.numpy(), x=list(range(A)), y=list(range(L)), texttemplate="%{z:.2f}" if L * A <= 256 else None,
        colorscale=DIVERGING if signed else SEQUENTIAL, zmin=-big if signed else 0.0, zmax=big, xgap=1, ygap=1,
        colorbar=dict(title="score"), hovertemplate="layer %{y}, head %{x}<br>importance %{z:.3f}<extra></extra>"))
    return finish(fig, "head importance: the darker the cell, the more that head matters",
                   xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1, autorange="reversed"),
                   width=min(1000, max(420, 44 * A + 180)), height=max(300, 36 * L + 150))


def ablation_figure(effect) -> go.Figure:
    """What switching heads off did (a `probe.AblationEffect`): with metric "prediction", grouped bars of the
    guesses for [MASK] with every head on and with the heads off (every token of either top-k); with
    metric "output", how far each token's output vector moved (cosine distance)."""
    if not hasattr(effect, "metric") or not hasattr(effect, "heads"):
        raise ValueError(f"expected an AblationEffect from probe.Ablation(...).effect(heads), "
                         f"got {type(effect).__name__}")
    off = ", ".join(f"L{l}H{h}" for l, h in effect.heads) or "none"
    if effect.metric == "output":
        change = as_float(effect.change, "change", (1,))
        labels = token_labels(effect.tokens)
        fig = go.Figure(go.Bar(x=labels, y=change.tolist(), marker_color=PALETTE["notnext"],
                               customdata=list(effect.tokens),
                               hovertemplate="%{customdata}: cosine distance %{y:.3e}<extra></extra>"))
        return finish(fig, f"how far each token's output vector moves with heads off ({off})",
                      xaxis=dict(title="token", tickangle=45),
                      yaxis=dict(title="cosine distance from all heads on", rangemode="tozero"),
                      width=min(1000, max(520, 26 * len(labels) + 160)), height=420)
    rows = [GuessChange(*row) for row in effect.compared]             # (token, before, after) triples work too
    tokens = [row.token for row in rows]
    labels = token_labels(tokens)
    fig = go.Figure()
    series = (("every head on", "before", PALETTE["mlm"]), (f"off: {off}", "after", PALETTE["notnext"]))
    for name, column, color in series:
        fig.add_trace(go.Bar(x=[getattr(row, column) for row in rows], y=labels, orientation="h", name=name,
                             marker_color=color, customdata=tokens,
                             hovertemplate=f"%{{customdata}}, {name}: p = %{{x:.3f}}<extra></extra>"))
    return finish(fig, f"the guess for [MASK] with heads switched off ({off})", barmode="group",
                  xaxis=dict(title="probability", rangemode="tozero"),
                  yaxis=dict(title="guess", autorange="reversed"),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                  margin=dict(l=120, r=30, t=80, b=60), width=600, height=160 + 28 * len(tokens))
