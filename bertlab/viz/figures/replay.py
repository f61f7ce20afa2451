"""A pre-training run's snapshots as figures: the heads and the [MASK] guesses of one step, and how alike the
token vectors are at every step.

`pretrain(..., snapshot_every=N, snapshot_text=...)` records what the model makes of one sentence every N
steps (`bertlab.pretraining.snapshots`). This module draws one snapshot; bertlab.viz.replay's SnapshotReplay
replays them with a slider:

    shots = read_snapshots("runs/tiny")
    snapshot_figure(shots[-1], layer=1, head=0)   # one head's attention beside the top-5 [MASK] guesses
    snapshot_figure(shots[-1], layer=1)           # every head of layer 1 as small multiples
    w = SnapshotReplay("runs/tiny")               # step slider (▶ plays it), layer and head menus
    w.step.value = 100                            # the figure now shows step 100 ...
    w.figure.data[0].z                            # ... and here are its weights

Why every axis is fixed: a replay is read by comparing frames, so nothing may move but the data. The colour
scale is always 0 to 1 (an attention weight's whole range, so a head that sharpens gets darker instead of
the scale stretching to follow it); the guesses sit on a rank axis (1 to 5) with the token written on its
bar, and the widget gives every frame the same probability axis, wide enough for the largest guess of the
whole run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...pretraining.snapshots import Snapshot, read_snapshots
from .look import COLORS, PALETTE, SEQUENTIAL, check_index, finish, token_labels

__all__ = ["snapshot_figure", "intra_similarity_figure", "largest_guess", "ALL_HEADS"]

ALL_HEADS = "all"       # the head menu's value for "every head of the layer"


# ---- checks --------------------------------------------------------------------------------------------

def _check_snapshot(snapshot) -> Snapshot:
    if not isinstance(snapshot, Snapshot):
        raise ValueError(f"expected a Snapshot (one item of bertlab.pretraining.read_snapshots(out)), "
                         f"got {type(snapshot).__name__}")
    return snapshot


def snapshot_list(source) -> list[Snapshot]:
    """A run folder (read with read_snapshots) or a list of snapshots → a non-empty list in step order."""
    if isinstance(source, (str, os.PathLike)):
        shots = read_snapshots(source)
    elif isinstance(source, Snapshot):
        shots = [source]
    elif isinstance(source, Sequence):
        shots = [_check_snapshot(s) for s in source]
    else:
        raise ValueError(f"SnapshotReplay takes a run folder or a list of Snapshots (read_snapshots(out)), "
                         f"got {type(source).__name__}")
    if not shots:
        raise ValueError("there are no snapshots to replay: pre-train with snapshot_every=N to record some")
    return sorted(shots, key=lambda s: s.step)


def largest_guess(snapshots: Sequence[Snapshot], mask_index: int = 0) -> float:
    """The highest probability any snapshot gives a guess at [MASK] `mask_index`: a shared axis for a replay."""
    return max((p for s in snapshots if len(s.guesses) > mask_index for _, p in s.guesses[mask_index]),
               default=0.0)


# ---- figures -------------------------------------------------------------------------------------------

def snapshot_figure(snapshot: Snapshot, layer: int = 0, head: int | str | None = 0, mask_index: int = 0,
                    p_max: float | None = None) -> go.Figure:
    """One snapshot: the attention of `head` in `layer` (or, with head=None or "all", every head of the
    layer side by side) beside the top-5 guesses at the `mask_index`-th [MASK], titled with the step.

    Heatmaps share one colour scale fixed at 0 to 1. The guesses' probability axis runs to `p_max` (the
    widget passes the largest guess of the whole run, so the axis stays put while the slider moves);
    without it, to this snapshot's largest guess. Trace order: the heatmaps (head order), then the bars.
    """
    s = _check_snapshot(snapshot)
    attention = s.attention                                                   # (L, heads, T, T)
    L, A = attention.shape[:2]
    has = "the snapshot has"
    layer = check_index(layer, L, "layer", "layers", there=has)
    heads = (list(range(A)) if head is None or head == ALL_HEADS
             else [check_index(head, A, "head", "heads per layer", there=has)])
    n_masks = len(s.guesses)
    if n_masks:
        mask_index = check_index(mask_index, n_masks, "mask_index", "[MASK] positions", there=has)
    guesses = s.guesses[mask_index] if n_masks else []
    if p_max is not None and (isinstance(p_max, bool) or not isinstance(p_max, (int, float)) or not 0 < p_max <= 1):
        raise ValueError(f"p_max must be a probability in (0, 1], got {p_max!r}")
    top = p_max if p_max is not None else max([p for _, p in guesses], default=0.0)

    labels = token_labels(s.tokens)
    T = len(labels)
    # pixels per heatmap side: the whole figure stays within 1,000 px (a notebook's width), however many heads
    cell = max(90, min(200, 580 // len(heads) - 20)) if len(heads) > 1 else min(560, max(260, 22 * T))
    widths = [1.0] * len(heads) + [0.9 if len(heads) == 1 else 1.4]
    which = f"[MASK] #{mask_index + 1} of {n_masks}" if n_masks > 1 else "[MASK]"
    titles = [f"head {h}" for h in heads] + [f"top {len(guesses)} guesses at {which}" if guesses
                                             else "no [MASK] in the sentence"]
    fig = make_subplots(rows=1, cols=len(heads) + 1, column_widths=widths, subplot_titles=titles,
                        horizontal_spacing=0.03 if len(heads) > 1 else 0.12)
    for col, h in enumerate(heads, start=1):
        fig.add_trace(go.Heatmap(
            z=attention[layer, h].tolist(), x=labels, y=labels, coloraxis="coloraxis",
            name=f"layer {layer}, head {h}",
            hovertemplate=f"layer {layer}, head {h}<br>%{{y}} → %{{x}}<br>weight %{{z:.3f}}<extra></extra>"),
            row=1, col=col)
        fig.update_yaxes(autorange="reversed", showticklabels=col == 1, row=1, col=col)
        fig.update_xaxes(showticklabels=len(heads) == 1, tickangle=-60, row=1, col=col)
    ranks = [str(r) for r in range(1, len(guesses) + 1)]
    bar_col = len(heads) + 1
    fig.add_trace(go.Bar(
        x=[p for _, p in guesses], y=ranks, orientation="h", marker_color=PALETTE["mlm"], name="guesses",
        text=[f"{t}  {p:.3f}" for t, p in guesses], textposition="outside", cliponaxis=False,
        customdata=[t for t, _ in guesses], hovertemplate="%{customdata}: p = %{x:.3f}<extra></extra>"),
        row=1, col=bar_col)
    fig.update_xaxes(title_text="probability", range=[0, max(top, 1e-3) * 1.6], row=1, col=bar_col)
    fig.update_yaxes(title_text="rank", title_standoff=4, autorange="reversed", type="category", row=1, col=bar_col)

    what = f"head {heads[0]}" if len(heads) == 1 else f"all {A} heads"
    return finish(fig, f"step {s.step}: layer {layer}, {what}, and the [MASK] guesses<br><sup>{s.text}</sup>",
                  margin=dict(l=90, r=30, t=90, b=90 if len(heads) == 1 else 40),
                  coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=1.0,
                                 colorbar=dict(title="weight", thickness=12)),
                  showlegend=False, width=len(heads) * (cell + 20) + 420, height=cell + 190)


def intra_similarity_figure(snapshots: Sequence[Snapshot], step: int | None = None) -> go.Figure:
    """Intra-sentence similarity (mean cosine of each token vector to the sentence's mean) at every layer,
    across the recorded steps: one line per layer, the embeddings first. A dotted line marks `step`.

    Near 1, every token vector points the same way (the representations have collapsed); a contextual
    model keeps them apart. The y axis is fixed at -0.1 to 1 so runs and steps compare at a glance.
    """
    shots = snapshot_list(snapshots)
    steps = [s.step for s in shots]
    n = len(shots[0].intra_similarity)
    fig = go.Figure()
    for layer in range(n):
        name = "embeddings" if layer == 0 else f"after layer {layer - 1}"
        fig.add_trace(go.Scatter(
            x=steps, y=[s.intra_similarity[layer] for s in shots], mode="lines+markers", name=name,
            line=dict(color=COLORS[layer % len(COLORS)]),
            hovertemplate=f"{name}<br>step %{{x}}: %{{y:.3f}}<extra></extra>"))
    if step is not None:
        fig.add_vline(x=step, line_dash="dot", line_color="#333333")
    return finish(fig, "intra-sentence similarity by layer: near 1 = every token vector alike",
                  xaxis_title="step", yaxis=dict(title="mean cosine to the sentence mean", range=[-0.1, 1.0]),
                  width=720, height=340)
