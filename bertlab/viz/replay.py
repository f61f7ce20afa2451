"""Replay a pre-training run's snapshots: watch the heads and the [MASK] guesses form, step by step.

`pretrain(..., snapshot_every=N, snapshot_text=...)` records what the model makes of one sentence every N
steps (`bertlab.pretraining.snapshots`). This module draws one snapshot and replays them with a slider:

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

from ..pretraining.snapshots import Snapshot, read_snapshots
from .look import COLORS, PALETTE, SEQUENTIAL, check_index, finish, token_labels
from .views import View, show_figure
from .views import controls as W

__all__ = ["snapshot_figure", "intra_similarity_figure", "SnapshotReplay", "ALL_HEADS"]

ALL_HEADS = "all"       # the head menu's value for "every head of the layer"


# ---- checks --------------------------------------------------------------------------------------------

def _check_snapshot(snapshot) -> Snapshot:
    if not isinstance(snapshot, Snapshot):
        raise ValueError(f"expected a Snapshot (one item of bertlab.pretraining.read_snapshots(out)), "
                         f"got {type(snapshot).__name__}")
    return snapshot


def _snapshots(source) -> list[Snapshot]:
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
    shots = _snapshots(snapshots)
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


# ---- the widget ----------------------------------------------------------------------------------------

class SnapshotReplay:
    """A step slider over a run's snapshots, with layer, head and [MASK] menus, and ▶ to play the run.

    `source` is a run folder or a list of Snapshots. It shows as a view (bertlab.viz.views: one anywidget,
    drawn by the same module in every front end); its controls are observed on their `value`, so Python drives
    it as a person does: set `w.step.value = 40` (a recorded step), `w.layer.value`, `w.head.value` (a head, or
    ALL_HEADS), `w.mask.value`, or `w.play.value` (the index of a step: what ▶ sends, one step at a time), then
    read `w.figure` (the attention and guesses of that step) and `w.similarity` (intra-sentence similarity, the
    step marked). `w.snapshot` is the snapshot shown. The replay needs no model: everything comes from what
    the run recorded.
    """

    def __init__(self, source, layer: int = 0, head: int | str = 0, mask_index: int = 0):
        self.snapshots = _snapshots(source)
        first = self.snapshots[0]
        L, A = first.attention.shape[:2]
        head = ALL_HEADS if head is None else head
        # check the starting view now, with the figure's own messages, before any control exists
        snapshot_figure(first, layer, head, mask_index)
        self.p_max = largest_guess(self.snapshots, mask_index) or None

        steps = [s.step for s in self.snapshots]
        self.step = W.SelectionSlider(options=steps, value=steps[0], description="step",
                                      layout=W.Layout(width="60%"))
        self.play = W.Play(min=0, max=len(steps) - 1, value=0, interval=600, description="play the run")
        self.layer = W.Dropdown(options=[(f"layer {i}", i) for i in range(L)], value=layer % L,
                                description="layer", layout=W.Layout(width="160px"))
        self.head = W.Dropdown(options=[("all heads", ALL_HEADS)] + [(f"head {h}", h) for h in range(A)],
                               value=head if head == ALL_HEADS else head % A, description="head",
                               layout=W.Layout(width="180px"))
        n_masks = max(1, len(first.guesses))
        self.mask = W.Dropdown(options=[(f"[MASK] #{m + 1}", m) for m in range(n_masks)],
                               value=mask_index % n_masks, description="guesses at",
                               layout=W.Layout(width="200px", display="" if n_masks > 1 else "none"))
        self.out, self.similarity_out = W.Output(), W.Output()
        self.figure: go.Figure | None = None
        self.similarity: go.Figure | None = None
        # ▶ and the slider are one position: the play button's value is the slider's index (ipywidgets linked
        # them in the browser; a view links them here, so Python and the page agree on every frame)
        self.play.observe(lambda change: setattr(self.step, "value", steps[change.new]), names="value")
        self.step.observe(lambda change: setattr(self.play, "value", self.step.index), names="value")
        for control in (self.step, self.layer, self.head, self.mask):
            control.observe(self._update, names="value")
        self.view = View(W.VBox([W.HBox([self.play, self.step]), W.HBox([self.layer, self.head, self.mask]),
                                 self.out, self.similarity_out]))
        self._update()

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot the slider points at."""
        return self.snapshots[self.step.index]

    def _update(self, change=None) -> None:
        if change is not None and change.owner is self.mask:
            self.p_max = largest_guess(self.snapshots, self.mask.value) or None
        self.figure = snapshot_figure(self.snapshot, self.layer.value, self.head.value,
                                      self.mask.value if self.snapshot.guesses else 0, self.p_max)
        self.similarity = intra_similarity_figure(self.snapshots, step=self.snapshot.step)
        show_figure(self.out, self.figure)
        show_figure(self.similarity_out, self.similarity)

    # -- display: the replay shows as its view
    def _repr_mimebundle_(self, **kwargs):
        return self.view._repr_mimebundle_(**kwargs)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.view)

    def __repr__(self) -> str:
        steps = [s.step for s in self.snapshots]
        return f"SnapshotReplay({len(steps)} snapshots, steps {steps[0]} … {steps[-1]})"
