"""Figures for pre-training (notebook 06): the losses and accuracies a run logged, and its learning rate.

    training_curves("runs/tiny/metrics.jsonl")      # MLM and NSP loss and accuracy over the steps
    lr_schedule(steps=300, warmup=0.1, peak=1e-3)    # warm-up (a share) then linear decay, as the trainer runs it

Pure functions of the logged rows, in the shared look of bertlab.viz.figures.look; none runs a model.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Iterable

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...optim import warmup_count
from ...pretraining.args import PretrainArgs
from ...pretraining.schedule import lr_at
from ...settings import check_value
from .look import PALETTE, finish

__all__ = ["training_curves", "lr_schedule"]


def _rows(rows) -> list[dict]:
    if isinstance(rows, (str, os.PathLike)):
        with open(rows, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    if isinstance(rows, dict):
        raise ValueError("rows must be a list of dicts (one per logged step), got a single dict")
    rows = list(rows)
    if not all(isinstance(r, dict) for r in rows):
        raise ValueError("rows must be dicts, as the lines of metrics.jsonl")
    return rows


def training_curves(rows: Iterable[dict] | str | os.PathLike) -> go.Figure:
    """Pre-training losses (total, MLM, NSP) and accuracies (MLM, NSP) over the steps.

    `rows` are the records of metrics.jsonl (or its path); rows without "loss" (say, the eval line) are skipped.
    """
    train = [r for r in _rows(rows) if "loss" in r]
    if not train:
        raise ValueError("no training rows: expected dicts with 'step' and 'loss', as metrics.jsonl holds")
    if any("step" not in r for r in train):
        raise ValueError("every training row needs a 'step'")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, subplot_titles=("loss", "accuracy"))
    series = [(1, "loss", "total loss", PALETTE["total"]), (1, "mlm_loss", "MLM loss", PALETTE["mlm"]),
              (1, "nsp_loss", "NSP loss", PALETTE["nsp"]), (2, "mlm_acc", "MLM accuracy", PALETTE["mlm"]),
              (2, "nsp_acc", "NSP accuracy", PALETTE["nsp"])]
    for row, key, name, color in series:
        have = [r for r in train if r.get(key) is not None]
        if not have:
            continue
        fig.add_trace(go.Scatter(
            x=[r["step"] for r in have], y=[float(r[key]) for r in have], mode="lines", name=name,
            line=dict(color=color, dash="dot" if key == "loss" else "solid"), meta=key,
            hovertemplate=f"step %{{x}}<br>{name} %{{y:.3f}}<extra></extra>"), row=row, col=1)
    fig.add_hline(y=math.log(2), line_dash="dot", line_color="#999", row=1, col=1,
                  annotation_text="NSP chance: ln 2", annotation_position="top right")
    fig.add_hline(y=0.5, line_dash="dot", line_color="#999", row=2, col=1,
                  annotation_text="NSP chance: 0.5", annotation_position="top right")
    fig.update_xaxes(title_text="step", row=2, col=1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(range=[0, 1], row=2, col=1)
    return finish(fig, "pre-training: MLM loss starts near ln(vocab) and falls slowly; NSP starts near ln 2",
                   margin=dict(l=60, r=20, t=90, b=60), width=760, height=580)


def lr_schedule(steps: int, warmup: float, peak: float, rows: Iterable[dict] | None = None) -> go.Figure:
    """The learning rate `schedule.lr_at` gives at each step: linear warm-up to `peak`, then linear decay to 0.

    `warmup` is the share of the steps spent warming up, spelled as `pretrain`'s and `finetune`'s (0.1: the
    first 10 %, at least one step). Pass metrics.jsonl `rows` to overlay the learning rates the trainer logged.
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a whole number ≥ 1, got {steps!r}")
    if isinstance(warmup, (int, np.integer)) and not isinstance(warmup, bool) and warmup >= 1:
        raise ValueError(f"warmup is the share of the steps spent warming up, as pretrain's and finetune's, not a "
                         f"count of steps: for {warmup} of {steps} steps pass warmup={warmup / steps:g}")
    check_value(PretrainArgs, "warmup", warmup, flags=False)     # a share in [0, 1), the trainer's own check
    share, warmup = warmup, warmup_count(steps, warmup)          # the share → the steps it covers
    if isinstance(peak, bool) or not isinstance(peak, numbers.Real) or not 0 < peak < math.inf:
        raise ValueError(f"peak must be a positive learning rate, got {peak!r}")
    peak = float(peak)                                           # a numpy float32 (np.float32(1e-4)) is one too
    # the schedule is piecewise linear, so ~500 points plus its corners draw it exactly
    xs = set(np.linspace(0, steps, min(steps + 1, 501)).round().astype(int).tolist())
    xs |= {s for s in (warmup - 1, warmup, steps) if 0 <= s <= steps}
    xs = sorted(xs)
    fig = go.Figure(go.Scatter(
        x=xs, y=[lr_at(s, steps, warmup, peak) for s in xs], mode="lines", name="lr_at(step)",
        line_color=PALETTE["lr"], hovertemplate="step %{x}<br>lr %{y:.3e}<extra></extra>"))
    if rows is not None:
        logged = [r for r in _rows(rows) if "lr" in r and "step" in r]
        fig.add_trace(go.Scatter(
            x=[r["step"] for r in logged], y=[float(r["lr"]) for r in logged], mode="markers", name="logged",
            marker=dict(color=PALETTE["total"], size=5),
            hovertemplate="step %{x}<br>logged lr %{y:.3e}<extra></extra>"))
    if warmup > 0:
        fig.add_vline(x=warmup, line_dash="dot", line_color="#999", annotation_text="end of warm-up")
    return finish(fig, f"learning rate: linear warm-up over {warmup} steps ({share:.0%}) to {peak:g}, "
                        f"then linear decay to 0 at {steps}",
                   xaxis_title="step", yaxis=dict(title="learning rate", rangemode="tozero", exponentformat="e"),
                   width=720, height=380)
