"""Figures for cause and effect: patching heatmaps, minimal-pair shifts, context mixing and its scoreboard.

Each takes a result of bertlab.probe (patching, minimal_pairs, mixing) and returns a plotly Figure in the
shared look; none runs a model.

    patching_figure(patch(...))                      layer × position (or layer × head): what restores it
    fill_shift_figure(compare_fill(...))             which words one changed word makes likelier
    mixing_figure(context_mixing(...))               each measure's view of which tokens feed the [MASK]
    scoreboard_figure(mixing_scoreboard(...))        how well each measure agrees with the intervention
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .look import COLORS, PALETTE, finish, shorten, token_labels

__all__ = ["patching_figure", "fill_shift_figure", "mixing_figure", "scoreboard_figure", "note_figure"]

SITE_NAMES = {"resid": "residual stream", "attn": "attention output", "mlp": "feed-forward output",
              "head": "attention heads"}


def _need(result, fields, made_by: str):
    missing = [f for f in fields if not hasattr(result, f)]
    if missing:
        raise ValueError(f"expected the result of {made_by}, got {type(result).__name__} (no {', '.join(missing)})")


def patching_figure(p) -> go.Figure:
    """The effect of patching each cell (bertlab.probe.patching.patch): rows are layers (the embedding output
    at the bottom), columns positions ("clean/corrupt" where the texts differ) or heads. 0 (white) is the
    corrupt run, 1 (red) the clean run; blue means the patch pushed the other way."""
    _need(p, ("effect", "rows", "columns", "site", "direction", "clean_metric", "corrupt_metric"), "patch")
    z = p.effect.tolist()
    x = p.columns if p.site == "head" else token_labels(p.columns)
    hover = "%{y}, %{x}<br>effect %{z:.2f}<br>metric %{customdata:.3f}<extra></extra>"
    fig = go.Figure(go.Heatmap(z=z, x=x, y=p.rows, customdata=p.patched.tolist(), colorscale="RdBu_r",
                               zmid=0, zmin=min(-1.0, float(p.effect.min())), zmax=max(1.0, float(p.effect.max())),
                               hovertemplate=hover, colorbar=dict(title="effect")))
    what = {"denoise": "clean activations into the corrupt run",
            "noise": "corrupt activations into the clean run"}[p.direction]
    metric = p.metric.replace("P(target)", f"P({p.target})") if p.target else p.metric
    title = (f"Patching the {SITE_NAMES[p.site]}: {what}<br><sup>{metric}: {p.corrupt_metric:.2f} corrupt, "
             f"{p.clean_metric:.2f} clean · effect 0 = the corrupt run, 1 = the clean run</sup>")
    fig.update_xaxes(tickangle=-45, title="head" if p.site == "head" else "position (clean/corrupt)")
    fig.update_yaxes(title="layer", autorange=True)
    width = max(700, 60 + 42 * len(p.columns))
    return finish(fig, title, height=150 + 36 * len(p.rows), width=min(width, 1000),
                  margin=dict(l=110, r=20, t=75, b=110))


def fill_shift_figure(c) -> go.Figure:
    """P at the [MASK] in text a and in text b for the words that moved most (bertlab.probe.minimal_pairs)."""
    _need(c, ("shifts", "text_a", "text_b"), "compare_fill")
    words = [s.token for s in c.shifts]
    fig = go.Figure([
        go.Bar(name=f"a: {shorten(c.text_a, 50)}", y=words, x=[s.p_a for s in c.shifts], orientation="h",
               marker_color=COLORS[0], hovertemplate="%{y}: P = %{x:.3f}<extra>a</extra>"),
        go.Bar(name=f"b: {shorten(c.text_b, 50)}", y=words, x=[s.p_b for s in c.shifts], orientation="h",
               marker_color=COLORS[1], hovertemplate="%{y}: P = %{x:.3f}<extra>b</extra>",
               text=[f"×{math.exp(s.log_ratio):.2g}" for s in c.shifts], textposition="outside"),
    ])
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="P(word at [MASK])")
    return finish(fig, "What the changed word does to the [MASK]: the words that moved most", barmode="group",
                  width=760, height=140 + 34 * len(words), legend=dict(orientation="h", y=-0.2))


def mixing_figure(mix) -> go.Figure:
    """Every context-mixing measure (bertlab.probe.mixing.context_mixing) for one position, each scaled to
    its largest |score| so their shapes compare: one row of bars per measure."""
    _need(mix, ("tokens", "position", "scores"), "context_mixing")
    names = list(mix.scores)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.03,
                        subplot_titles=names)
    x = token_labels(mix.tokens)
    for r, name in enumerate(names, start=1):
        s = mix.scores[name].float()
        s = s / s.abs().max().clamp_min(1e-12)
        fig.add_trace(go.Bar(x=x, y=s.tolist(), marker_color=COLORS[(r - 1) % len(COLORS)], showlegend=False,
                             hovertemplate="%{x}: %{y:.2f}<extra>" + name + "</extra>"), row=r, col=1)
    fig.update_xaxes(tickangle=-45)
    return finish(fig, f"Which tokens feed {mix.tokens[mix.position]} ({mix.position}), by six measures "
                       "(each scaled to its largest)", height=130 + 110 * len(names),
                  margin=dict(l=60, r=20, t=70, b=110))


def scoreboard_figure(board) -> go.Figure:
    """Spearman's ρ between each measure's token ranking and the intervention's (mean ± std over texts)."""
    _need(board, ("summary", "per_text"), "mixing_scoreboard")
    names = list(board.summary)
    means = [board.summary[n][0] for n in names]
    stds = [board.summary[n][1] for n in names]
    fig = go.Figure(go.Bar(x=means, y=names, orientation="h", error_x=dict(type="data", array=stds),
                           marker_color=[PALETTE["isnext"] if m == max(means) else COLORS[0] for m in means],
                           text=[f"{m:.2f} ± {s:.2f}" for m, s in zip(means, stds)], textposition="outside",
                           hovertemplate="%{y}: ρ = %{x:.2f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="Spearman ρ with the intervention (1 = same ranking)", range=[-0.3, 1.1])
    return finish(fig, f"Which measure ranks tokens as the intervention does ({len(board.texts)} sentences)",
                  height=120 + 45 * len(names), margin=dict(l=150, r=40, t=50, b=60))


def note_figure(text: str, title: str = "Patching") -> go.Figure:
    """An empty plot that says why there is nothing to draw (a widget keeps its layout; the reader sees why)."""
    fig = go.Figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=13, color="#33475b"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return finish(fig, title, height=160)

