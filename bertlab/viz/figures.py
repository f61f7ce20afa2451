"""Plotly figures. Each takes what the model returned and gives back a `go.Figure` with one consistent look."""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go


from ..model.bert import BertOutput

LAYOUT = dict(template="plotly_white", font=dict(size=12), margin=dict(l=60, r=20, t=50, b=60))


def attention_heatmap(out: BertOutput, tokens: Sequence[str], layer: int = 0, head: int = 0,
                      batch_index: int = 0) -> go.Figure:
    """One head's attention as a heatmap: row i is where token i looks, and the row sums to 1.

    `out` must come from a forward pass with `output_attentions=True`.
    """
    if out.attentions is None:
        raise ValueError("this output has no attention weights: run the model with output_attentions=True")
    L = len(out.attentions)
    n_heads = out.attentions[0].shape[1]
    if not -L <= layer < L:
        raise ValueError(f"layer {layer} does not exist: the model has {L} layers (0 … {L - 1})")
    if not -n_heads <= head < n_heads:
        raise ValueError(f"head {head} does not exist: each layer has {n_heads} heads (0 … {n_heads - 1})")
    pattern = out.attentions[layer][batch_index, head]                     # (T, T)
    T = len(tokens)
    if pattern.shape[-1] < T:
        raise ValueError(f"{T} tokens given for an attention map over {pattern.shape[-1]} positions")
    weights = pattern[:T, :T].detach().float().cpu()
    # unique labels: plotly merges equal category names, so repeated tokens ("the", "the") get their position
    labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(
        z=weights.tolist(), x=labels, y=labels, colorscale="Blues", zmin=0.0, zmax=float(weights.max()),
        customdata=[[[q, k] for k in tokens] for q in tokens],
        hovertemplate="%{customdata[0]} → %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title="weight"),
    ))
    fig.update_layout(**LAYOUT, title=f"layer {layer % L}, head {head % n_heads}: where each token looks",
                      xaxis_title="attends to (key)", yaxis_title="token (query)",
                      yaxis_autorange="reversed", width=max(420, 28 * T + 160), height=max(380, 24 * T + 140))
    return fig


