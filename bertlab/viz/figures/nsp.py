"""Next-sentence prediction (lesson 05) as one bar split into P(IsNext) and P(NotNext)."""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from .look import PALETTE, finish, shorten

__all__ = ["nsp_figure"]


def _probability(p, name: str) -> float:
    try:
        p = float(p.item() if isinstance(p, torch.Tensor) else p)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be one number, got {type(p).__name__}") from None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability between 0 and 1, got {p}")
    return p


def nsp_figure(p_isnext, a: str | None = None, b: str | None = None) -> go.Figure:
    """Next-sentence prediction as one bar split into P(IsNext) and P(NotNext) = 1 − P(IsNext).

    `p_isnext` is what `probe.next_sentence(model, tokenizer, a, b)` returns; pass `a` and `b` to show them.
    """
    p = _probability(p_isnext, "p_isnext")
    pair = [str(a or ""), str(b or "")]
    fig = go.Figure()
    for name, value, color in (("IsNext", p, PALETTE["isnext"]), ("NotNext", 1.0 - p, PALETTE["notnext"])):
        fig.add_trace(go.Bar(
            x=[value], y=["B after A?"], orientation="h", name=name, marker_color=color,
            text=[f"{name} {value:.3f}"], textposition="inside", insidetextanchor="middle",
            customdata=[pair], hovertemplate=f"P({name}) = %{{x:.3f}}<br>A: %{{customdata[0]}}"
                                             "<br>B: %{customdata[1]}<extra></extra>"))
    fig.add_vline(x=0.5, line_dash="dot", line_color="#666", annotation_text="chance", annotation_position="top")
    verdict = "thinks B follows A" if p >= 0.5 else "thinks B comes from elsewhere"
    title = f"P(IsNext) = {p:.3f}: the model {verdict}"
    if a or b:
        title += f"<br><sup>A: {shorten(a or '', 60)} | B: {shorten(b or '', 60)}</sup>"
    return finish(fig, title, barmode="stack", xaxis=dict(range=[0, 1], title="probability"),
                   yaxis=dict(showticklabels=False), legend=dict(orientation="h", y=-0.35, traceorder="normal"),
                   margin=dict(l=20, r=20, t=80, b=70), width=640, height=260)
