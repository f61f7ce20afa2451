"""What a masked LM puts in a [MASK] (lessons 04 and 10): its top guesses, and each layer's (the logit lens).

Both take a `probe.FillMask`; none runs a model.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .look import PALETTE, SEQUENTIAL, check_index, finish, shorten, token_labels

__all__ = ["fill_mask_figure", "fill_mask_layers_figure"]


def _mask_guesses(result, mask_index: int):
    if not hasattr(result, "guesses") or not hasattr(result, "mask_positions"):
        raise ValueError(f"expected a FillMask from probe.fill_mask, got {type(result).__name__}")
    return check_index(mask_index, len(result.guesses), "mask_index")


def fill_mask_figure(result, mask_index: int = 0) -> go.Figure:
    """The top-k guesses for one [MASK] (a `probe.FillMask`), most likely on top."""
    i = _mask_guesses(result, mask_index)
    guesses = result.guesses[i]
    labels = token_labels([g.token for g in guesses])    # unique even if two pieces print alike
    probs = [g.probability for g in guesses]
    fig = go.Figure(go.Bar(
        x=probs, y=labels, orientation="h", marker_color=PALETTE["mlm"], text=[f"{p:.3f}" for p in probs],
        textposition="outside", customdata=[g.token for g in guesses],
        hovertemplate="%{customdata}: p = %{x:.3f}<extra></extra>"))
    which = f"[MASK] #{i + 1} of {len(result.guesses)}" if len(result.guesses) > 1 else "[MASK]"
    return finish(fig, f"what the model puts in {which}: top {len(guesses)}"
                        f"<br><sup>{shorten(result.text, 80)}</sup>",
                   xaxis=dict(title="probability", range=[0, min(1.0, max(probs) * 1.2 + 0.02)]),
                   yaxis=dict(title="guess (rank)", autorange="reversed"),
                   margin=dict(l=120, r=30, t=80, b=60), width=560, height=140 + 34 * len(guesses))


def fill_mask_layers_figure(result, mask_index: int = 0) -> go.Figure:
    """What each layer would predict for one [MASK] (the logit lens): rows = layers, columns = rank,
    text = the token, colour = its probability. Needs `fill_mask(..., by_layer=True)`."""
    i = _mask_guesses(result, mask_index)
    if not getattr(result, "by_layer", None):
        raise ValueError("this FillMask has no per-layer guesses: call fill_mask(model, tokenizer, text, by_layer=True)")
    rows = [layer[i] for layer in result.by_layer]                         # L of top-k guesses
    k = len(rows[0])
    layer_names = [f"layer {l}" for l in range(1, len(rows) + 1)]
    fig = go.Figure(go.Heatmap(
        z=[[g.probability for g in r] for r in rows], text=[[g.token for g in r] for r in rows],
        x=[f"#{j}" for j in range(1, k + 1)], y=layer_names, texttemplate="%{text}<br>%{z:.2f}",
        colorscale=SEQUENTIAL, zmin=0.0, zmax=max(g.probability for r in rows for g in r), xgap=2, ygap=2,
        colorbar=dict(title="p"),
        hovertemplate="%{y}, guess %{x}: %{text}<br>p = %{z:.3f}<extra></extra>"))
    return finish(fig, "what each layer would put in the [MASK]: read upward as the guess forms"
                        f"<br><sup>{shorten(result.text, 80)}</sup>",
                   xaxis=dict(title="rank"),
                   margin=dict(l=80, r=30, t=80, b=60), width=max(460, 90 * k + 200), height=140 + 40 * len(rows))
