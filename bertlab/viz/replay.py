"""Replay a pre-training run's snapshots: watch the heads and the [MASK] guesses form, step by step.

`pretrain(..., snapshot_every=N, snapshot_text=...)` records what the model makes of one sentence every N
steps (`bertlab.pretraining.snapshots`); bertlab.viz.figures.replay draws one of them, and this view replays
them with a slider:

    w = SnapshotReplay("runs/tiny")               # step slider (▶ plays it), layer and head menus
    w.step.value = 100                            # the figure now shows step 100 ...
    w.figure.data[0].z                            # ... and here are its weights

Every axis stays put while the slider moves (the figures' docstring says why): the guesses' probability
axis is the largest guess of the whole run.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..pretraining.snapshots import Snapshot
from .figures.replay import ALL_HEADS, intra_similarity_figure, largest_guess, snapshot_figure, snapshot_list
from .views import View, show_figure
from .views import controls as W

__all__ = ["SnapshotReplay", "ALL_HEADS"]


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
        self.snapshots = snapshot_list(source)
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
