"""The masked-LM corruption of one text (lesson 04): each token a cell, coloured by its fate.

The fate of each token (not chosen, [MASK], random, kept) is `bertlab.probe.masking_fate`'s rule; this only
draws it, after checking that the tokens, inputs and labels belong together.
"""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go
import torch

from ...model.heads import IGNORE
from ...probe.masking import FATES, masking_fate
from .look import PALETTE, check_index, check_tokens, finish

__all__ = ["masking_figure"]


def _ids(x, name: str, batch_index: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if x.is_floating_point() or x.dtype == torch.bool or x.dim() not in (1, 2):
        raise ValueError(f"{name} must be integer ids of shape (T,) or (B, T), got {x.dtype} {tuple(x.shape)}")
    if x.dim() == 2:
        x = x[check_index(batch_index, x.shape[0], "batch_index")]
    return x.detach().cpu().long()


def masking_figure(tokens: Sequence[str], inputs, labels, tokenizer, batch_index: int = 0,
                   per_row: int = 12) -> go.Figure:
    """What masked-LM corruption did to one text: each token a cell, coloured by its fate.

    `inputs, labels = mask_tokens(ids, tokenizer)`; `tokens` are the *original* tokens (`enc.tokens`). A chosen
    token is replaced by [MASK], by a random token, or kept; the model must predict every chosen one.
    (A random draw that happens to equal the original token looks, and is counted, as kept.)
    """
    inputs, labels = _ids(inputs, "inputs", batch_index), _ids(labels, "labels", batch_index)
    if inputs.shape != labels.shape:
        raise ValueError(f"inputs {tuple(inputs.shape)} and labels {tuple(labels.shape)} must have the same shape")
    tokens = check_tokens(tokens, len(inputs), "masked inputs")
    T = len(tokens)
    if (labels[T:] != IGNORE).any():
        raise ValueError(f"labels choose positions past the {T} tokens given: pass all the tokens of the text")
    inputs, labels = inputs[:T], labels[:T]
    chosen = labels != IGNORE
    fate = masking_fate(inputs, labels, tokenizer)          # 0 not chosen, 1 [MASK], 2 random, 3 kept (probe's rule)

    sees = [tokenizer.id_to_token(int(i)) for i in inputs]
    for i, t in enumerate(tokens):
        original = tokenizer.id_to_token(int(labels[i])) if chosen[i] else sees[i]
        if original != t:
            where = "labels" if chosen[i] else "inputs"
            raise ValueError(f"{where}[{i}] is {original!r} but tokens[{i}] is {t!r}: pass the tokens of the "
                             "unmasked text and the inputs/labels that mask_tokens made from it")
    names = FATES
    shown = [t if f == 0 else f"{t}→{s}" if f in (1, 2) else f"{t} (kept)"
             for t, s, f in zip(tokens, sees, fate.tolist())]

    per_row = max(1, min(int(per_row), T))
    rows = math.ceil(T / per_row)
    z = [[None] * per_row for _ in range(rows)]
    text = [[""] * per_row for _ in range(rows)]
    custom = [[["", "", "", ""]] * per_row for _ in range(rows)]
    for i in range(T):
        r, c = divmod(i, per_row)
        z[r][c], text[r][c] = int(fate[i]), shown[i]
        predict = f"; it must predict {tokens[i]!r}" if chosen[i] else ""
        custom[r][c] = [str(i), tokens[i], names[int(fate[i])], sees[i] + predict]
    colors = [PALETTE[k] for k in ("not_chosen", "mask", "random", "kept")]
    scale = [[v, colors[k]] for k in range(4) for v in (k / 4, (k + 1) / 4)]    # four flat bands
    fig = go.Figure(go.Heatmap(
        z=z, text=text, texttemplate="%{text}", customdata=custom, colorscale=scale, zmin=-0.5, zmax=3.5,
        showscale=False, xgap=3, ygap=3, hoverongaps=False, name="tokens",
        hovertemplate="position %{customdata[0]}: %{customdata[1]}<br>%{customdata[2]}"
                      "<br>the model sees %{customdata[3]}<extra></extra>"))
    for name, color in zip(names, colors):                                   # legend entries only
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, showlegend=True,
                                 marker=dict(symbol="square", size=14, color=color, line=dict(width=1, color="#999"))))
    n, m, r, k = int(chosen.sum()), int((fate == 1).sum()), int((fate == 2).sum()), int((fate == 3).sum())
    fig.update_xaxes(visible=False, range=[-0.5, per_row - 0.5])
    fig.update_yaxes(visible=False, autorange="reversed")
    return finish(fig, f"{n} of {T} tokens chosen: {m} [MASK], {r} random, {k} kept (the loss uses only these {n})",
                   legend=dict(orientation="h", y=-0.02, yanchor="top", x=0),
                   margin=dict(l=20, r=20, t=60, b=50), width=min(1000, max(480, 100 * per_row + 40)), height=48 * rows + 140)
