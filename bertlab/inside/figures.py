"""Plotly figures for the autoencoder, the model diff and the head atlas, in bertlab.viz's look.

Each takes a result of this package and returns a `go.Figure`; none runs a model. The live views draw the
last three: `SteeringView` (bertlab/viz/views/steer.py) the guesses against their unclamped probabilities,
`HeadAtlasView` (bertlab/viz/views/atlas.py) the map of heads and one head's attention, which its module
also redraws in the page from the atlas's saved examples (js/atlas.js, the same rules as here).
`atlas_figure` is the whole atlas as one static figure with a drop-down, for a page without any view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..probe.fill_mask import Guess
from ..viz.figures.look import COLORS, SEQUENTIAL, finish, token_labels
from .atlas import HeadAtlas
from .diff import ModelDiff

__all__ = ["sae_report_figure", "trace_figure", "steering_figure", "steering_bars_figure", "diff_figure",
           "atlas_figure", "atlas_map_figure", "atlas_head_figure", "atlas_head_title"]

LABEL_COLORS = {"previous": COLORS[0], "next": COLORS[1], "self": COLORS[2], "[CLS]": COLORS[3],
                "[SEP]": COLORS[4], "punctuation": COLORS[5], "same word": COLORS[6], "broad": "#BBBBBB",
                "mixed": "#666666"}


def _get(report, key: str) -> float:
    return float(report[key] if isinstance(report, Mapping) else getattr(report, key))


def sae_report_figure(reports: Mapping) -> go.Figure:
    """MLM loss clean, with the autoencoder spliced in and with the layer zeroed, one group per report
    ({name: SAEReport or its as_dict()}), e.g. bertlab-mini beside the random-init control."""
    if not isinstance(reports, Mapping) or not reports:
        raise ValueError("reports must be a non-empty dict {name: SAEReport (or its as_dict())}")
    fig = go.Figure()
    for (label, key), color in zip((("clean", "mlm_loss_clean"), ("SAE spliced in", "mlm_loss_spliced"),
                                    ("layer zeroed", "mlm_loss_zero")), COLORS):
        ys = [_get(r, key) for r in reports.values()]
        fig.add_bar(name=label, x=list(reports), y=ys, marker_color=color, text=[f"{y:.2f}" for y in ys],
                    hovertemplate="%{x}<br>" + label + ": %{y:.3f} nats<extra></extra>")
    return finish(fig, "MLM loss on held-out prose: how much of the model survives the autoencoder",
                  barmode="group", yaxis=dict(title="masked-LM loss (nats)"), height=380)


def trace_figure(tokens: Sequence[str], values, feature: int | None = None) -> go.Figure:
    """A feature's value at every token of a sentence (`features.trace`), one bar per token."""
    v = torch.as_tensor(values, dtype=torch.float32).flatten()
    if len(v) != len(tokens):
        raise ValueError(f"got {len(tokens)} tokens but {len(v)} values: pass trace(...)'s two results as they are")
    fig = go.Figure(go.Bar(x=token_labels(tokens), y=v.tolist(), marker_color=COLORS[0],
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    name = "the feature" if feature is None else f"feature {feature}"
    return finish(fig, f"where {name} fires along the sentence", yaxis=dict(title="activation"), height=320)


def steering_figure(before: Sequence[Guess], after: Sequence[Guess], label: str = "clamped") -> go.Figure:
    """The top guesses at the [MASK] before and after clamping a feature, side by side."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("as it is", label), horizontal_spacing=0.2)
    for col, guesses in ((1, before), (2, after)):
        guesses = list(guesses)[::-1]
        fig.add_bar(x=[g.probability for g in guesses], y=[g.token for g in guesses], orientation="h",
                    marker_color=COLORS[col - 1], showlegend=False, row=1, col=col,
                    hovertemplate="%{y}: %{x:.3f}<extra></extra>")
    fig.update_xaxes(title_text="probability", range=[0, 1])
    return finish(fig, "the guesses at [MASK] before and after steering", height=340)


def diff_figure(d: ModelDiff) -> go.Figure:
    """Where two checkpoints differ: attention moved per head (left), residual change per layer (right)."""
    if not isinstance(d, ModelDiff):
        raise ValueError(f"diff_figure takes a ModelDiff (bertlab.diff(...)), got {type(d).__name__}")
    L, H = d.attention.shape
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.12,
                        subplot_titles=("share of attention moved", "residual stream change"))
    fig.add_trace(go.Heatmap(z=d.attention.numpy(), x=list(range(H)), y=list(range(L)), colorscale=SEQUENTIAL,
                             zmin=0, colorbar=dict(title="moved", x=0.52), xgap=1, ygap=1,
                             hovertemplate="layer %{y}, head %{x}<br>moved %{z:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=list(range(L + 1)), y=d.residual.tolist(), mode="lines+markers",
                             marker_color=COLORS[1], showlegend=False,
                             hovertemplate="layer %{x}: %{y:.3f}<extra></extra>"), row=1, col=2)
    fig.update_yaxes(title_text="layer", autorange="reversed", dtick=1, row=1, col=1)
    fig.update_xaxes(title_text="head", dtick=1, row=1, col=1)
    fig.update_xaxes(title_text="layer (0 = embeddings)", dtick=1, row=1, col=2)
    fig.update_yaxes(title_text="‖h_b − h_a‖ / ‖h_a‖", row=1, col=2)
    a, b = d.names
    return finish(fig, f"what changed from {a} to {b}", height=380, width=900)


def _head_points(atlas: HeadAtlas, size: int) -> list[go.Scatter]:
    """Every head at its place on the atlas's map, one trace per label (its colour), "l.h" written beside each
    point, its measures on hover and its flat index l · heads + h as customdata (what a view's click reads)."""
    L, H = atlas.shape
    traces = []
    for label in dict.fromkeys(lab for row in atlas.labels for lab in row):
        pts = [(l, h) for l in range(L) for h in range(H) if atlas.labels[l][h] == label]
        xy = atlas.coords[[l * H + h for l, h in pts]]
        hover = ["<br>".join([f"layer {l}, head {h}: {label}", f"sharpness {atlas.sharpness[l, h]:.2f}"] +
                             [f"{m} {atlas.share[m][l, h]:.2f}" for m in atlas.share]) for l, h in pts]
        traces.append(go.Scatter(x=xy[:, 0].tolist(), y=xy[:, 1].tolist(), mode="markers+text", name=label,
                                 text=[f"{l}.{h}" for l, h in pts], textposition="top center",
                                 textfont=dict(size=8), customdata=[l * H + h for l, h in pts],
                                 marker=dict(size=size, color=LABEL_COLORS.get(label, "#999")),
                                 hovertext=hover, hoverinfo="text"))
    return traces


def atlas_figure(atlas: HeadAtlas, index: int = 0) -> go.Figure:
    """Every head placed by similarity of behaviour (left; colour = its label, hover = its measures) and one
    head's attention on example sentence `index` (right), chosen with the drop-down: browsable offline."""
    if not isinstance(atlas, HeadAtlas):
        raise ValueError(f"atlas_figure takes a HeadAtlas (bertlab.head_atlas(...)), got {type(atlas).__name__}")
    tokens, _ = atlas.example(0, 0, index)
    L, H = atlas.shape
    fig = make_subplots(rows=1, cols=2, column_widths=[0.5, 0.5], horizontal_spacing=0.12,
                        subplot_titles=("heads placed by behaviour", "a head's attention"))
    for trace in _head_points(atlas, size=9):
        fig.add_trace(trace, row=1, col=1)
    n_scatter = len(fig.data)
    labels = token_labels(tokens)
    for l in range(L):
        for h in range(H):
            _, att = atlas.example(l, h, index)
            fig.add_trace(go.Heatmap(z=att.numpy(), x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0, zmax=1,
                                     showscale=False, visible=(l == 0 and h == 0),
                                     hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"), row=1, col=2)
    buttons = []
    for l in range(L):
        for h in range(H):
            visible = [True] * n_scatter + [False] * (L * H)
            visible[n_scatter + l * H + h] = True
            buttons.append(dict(label=f"layer {l}, head {h} ({atlas.labels[l][h]})", method="update",
                                args=[{"visible": visible}]))
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_xaxes(tickangle=-60, row=1, col=2)
    return finish(fig, "head atlas: pick a head to see its attention", height=560, width=1000,
                  updatemenus=[dict(buttons=buttons, x=1.0, xanchor="right", y=1.14, yanchor="top")],
                  legend=dict(x=0.0, y=-0.15, orientation="h"))


def steering_bars_figure(tokens: Sequence[str], before: Sequence[float], after: Sequence[float],
                         title: str) -> go.Figure:
    """Each guess's probability with the feature clamped (coloured) against the model as it is (grey), one
    pair of bars per token, the first token on top: the steering view's figure."""
    before, after = [float(x) for x in before], [float(x) for x in after]
    if not (len(tokens) == len(before) == len(after)) or not tokens:
        raise ValueError(f"steering_bars_figure takes as many probabilities as tokens, got {len(tokens)} tokens, "
                         f"{len(before)} and {len(after)} probabilities")
    y = list(tokens)[::-1]
    fig = go.Figure()
    fig.add_bar(name="as it is", y=y, x=before[::-1], orientation="h", marker_color="#BBBBBB",
                hovertemplate="%{y}: %{x:.3f} as it is<extra></extra>")
    fig.add_bar(name="clamped", y=y, x=after[::-1], orientation="h", marker_color=COLORS[0],
                hovertemplate="%{y}: %{x:.3f} clamped<extra></extra>")
    return finish(fig, title, barmode="group", xaxis=dict(title="probability at [MASK]", rangemode="tozero"),
                  height=max(300, 34 * len(tokens) + 120), legend=dict(orientation="h", y=-0.2))


def _check_head(atlas, layer, head, index) -> None:
    if not isinstance(atlas, HeadAtlas):
        raise ValueError(f"takes a HeadAtlas (bertlab.head_atlas(...)), got {type(atlas).__name__}")
    atlas.example(layer, head, index)                     # the atlas's own checks of layer, head and index


def atlas_map_figure(atlas: HeadAtlas, layer: int = 0, head: int = 0) -> go.Figure:
    """Every head placed by similarity of behaviour, coloured by its label, (layer, head) ringed; each point
    carries its flat index l · heads + h as customdata (the view's click picks the head by it)."""
    _check_head(atlas, layer, head, 0)
    L, H = atlas.shape
    layer, head = layer % L, head % H
    fig = go.Figure(_head_points(atlas, size=10))
    at = atlas.coords[layer * H + head]
    fig.add_trace(go.Scatter(x=[float(at[0])], y=[float(at[1])], mode="markers", name="shown",
                             marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(color="#1f2933", width=2)),
                             hoverinfo="skip", showlegend=False))
    return finish(fig, "heads placed by behaviour (click one)", height=460, width=560,
                  xaxis=dict(showticklabels=False, zeroline=False, title="MDS 1"),
                  yaxis=dict(showticklabels=False, zeroline=False, title="MDS 2"),
                  legend=dict(orientation="h", y=-0.12), hovermode="closest")


def atlas_head_title(atlas: HeadAtlas, layer: int, head: int, index: int) -> str:
    """The head pane's title (js/atlas.js writes the same one when the book redraws the pane)."""
    return f"layer {layer}, head {head} ({atlas.labels[layer][head]}) on sentence {index + 1}"


def atlas_head_figure(atlas: HeadAtlas, layer: int = 0, head: int = 0, index: int = 0) -> go.Figure:
    """Head (layer, head)'s attention on the atlas's example sentence `index`: rows are queries."""
    _check_head(atlas, layer, head, index)
    L, H = atlas.shape
    layer, head = layer % L, head % H
    tokens, att = atlas.example(layer, head, index)
    labels = token_labels(tokens)
    T = len(tokens)
    fig = go.Figure(go.Heatmap(z=att.numpy(), x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0, zmax=1,
                               colorbar=dict(title="weight"),
                               hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>"))
    return finish(fig, atlas_head_title(atlas, layer, head, index), height=min(720, max(380, 22 * T + 160)),
                  width=min(760, max(440, 22 * T + 220)), xaxis=dict(tickangle=-60),
                  yaxis=dict(autorange="reversed"))
