"""Plotly figures. Each takes what the model returned and gives back a `go.Figure` with one consistent look.

Every function here is a pure function of tensors, model outputs or probe results: none runs a model. The
look is shared (bertlab.viz.look): `LAYOUT` (template, font, margins, colour cycle), `PALETTE` (one colour
per concept, the same in every figure: the token part is always blue, NSP always orange, a [MASK] always
light blue), the `SEQUENTIAL` scale for weights and distances and the `DIVERGING` one for signed values.
Titles say what to look for; hovering a cell or point names the token (or position, layer, head) and its
number to 3 decimals.

    out = model(**enc, output_attentions=True)
    attention_grid(out, enc.tokens)                      # every layer × head at a glance
    embedding_sum(out, enc.tokens)                       # token + segment + position → LayerNorm

This module holds the figures of the input, attention, pre-training and masked-LM lessons (02 to 05, 10);
the contextual-vector figures (07) are in context_figures.py and the training curves (06) in
training_figures.py, and every one of them can be imported from here.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..model.bert import BertOutput
from ..model.heads import IGNORE
from ..probe.attention_maps import AttentionMap
from ..probe.cosine import cosine_similarity
from ..probe.fill_mask import GuessChange
from ..probe.masking import FATES, masking_fate
from .context_figures import cosine_matrix, drift_by_layer, projection_2d
from .look import (
    COLORS,
    DIVERGING,
    EMBEDDING_PARTS,
    LAYOUT,
    PALETTE,
    SEQUENTIAL,
    as_float,
    check_index,
    check_tokens,
    finish,
    shorten,
    token_labels,
)
from .training_figures import lr_schedule, training_curves

__all__ = ["LAYOUT", "PALETTE", "COLORS", "SEQUENTIAL", "DIVERGING", "attention_heatmap", "attention_map_figure",
           "attention_grid",
           "embedding_sum", "sinusoidal_positions", "position_similarity", "masking_figure", "nsp_figure",
           "fill_mask_figure", "fill_mask_layers_figure", "cosine_matrix", "drift_by_layer", "projection_2d",
           "training_curves", "lr_schedule", "head_importance_figure", "ablation_figure"]


def _attentions(out) -> tuple[torch.Tensor, ...]:
    if not isinstance(out, BertOutput) and not hasattr(out, "attentions"):
        raise ValueError(f"expected a BertOutput (the result of model(...)), got {type(out).__name__}")
    if not out.attentions:
        raise ValueError("this output has no attention weights: run the model with output_attentions=True")
    return out.attentions


# ---- embeddings ----------------------------------------------------------------------------------------

def embedding_sum(out: BertOutput, tokens: Sequence[str], batch_index: int = 0, dims: int = 32) -> go.Figure:
    """BERT's input, token by token: the token, segment and position parts, their sum, and LayerNorm(sum).

    Top: the L2 norm of each part per token (grouped bars). Bottom: the first `dims` dimensions of each part
    as heatmaps; the raw parts share one colour scale, LayerNorm(sum) has its own, because LayerNorm rescales
    every token to mean 0 and variance 1 (about ten times the raw parts of a trained BERT).
    """
    parts = getattr(out, "embeddings", None)
    if parts is None or not hasattr(parts, "token"):
        raise ValueError("this output has no embedding parts: pass the BertOutput returned by model(...)")
    B, T, H = parts.token.shape
    b = check_index(batch_index, B, "batch_index")
    tokens = check_tokens(tokens, T, "embeddings")
    n, k = len(tokens), min(int(dims), H)
    if k < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    labels = token_labels(tokens)
    values = {name: getattr(parts, name)[b, :n].detach().float().cpu() for name, _ in EMBEDDING_PARTS}   # each (n, H)

    fig = make_subplots(rows=2, cols=5, specs=[[{"colspan": 5}, None, None, None, None], [{}] * 5],
                        row_heights=[0.4, 0.6], vertical_spacing=0.16, horizontal_spacing=0.02,
                        subplot_titles=[""] + [title for _, title in EMBEDDING_PARTS])
    for name, title in EMBEDDING_PARTS:
        fig.add_trace(go.Bar(
            x=labels, y=values[name].norm(dim=-1).numpy(), name=title, marker_color=PALETTE[name],
            hovertemplate=f"%{{x}}<br>{title}: ‖·‖ = %{{y:.3f}}<extra></extra>"), row=1, col=1)
    raw = max(float(values[name][:, :k].abs().max()) for name in ("token", "segment", "position", "sum"))
    normed = float(values["normed"][:, :k].abs().max())
    for c, (name, title) in enumerate(EMBEDDING_PARTS, start=1):
        fig.add_trace(go.Heatmap(
            z=values[name][:, :k].numpy(), x=list(range(k)), y=labels,
            coloraxis="coloraxis2" if name == "normed" else "coloraxis",
            hovertemplate=f"%{{y}}<br>{title}, dim %{{x}}: %{{z:.3f}}<extra></extra>"), row=2, col=c)
        fig.update_yaxes(autorange="reversed", showticklabels=c == 1, dtick=1, row=2, col=c)
        fig.update_xaxes(title_text=f"dims 0…{k - 1}", row=2, col=c)
    fig.update_yaxes(title_text="L2 norm", row=1, col=1)
    bar = dict(thickness=12, len=0.5, y=0.0, yanchor="bottom")
    return finish(
        fig, "embedding = token + segment + position, then LayerNorm: compare the sizes of the parts",
        barmode="group", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        coloraxis=dict(colorscale=DIVERGING, cmin=-raw, cmax=raw, colorbar=dict(title="raw", x=1.01, **bar)),
        coloraxis2=dict(colorscale=DIVERGING, cmin=-normed, cmax=normed,
                        colorbar=dict(title="normed", x=1.08, **bar)),
        margin=dict(l=90, r=110, t=100, b=60),
        width=min(1000, max(640, 30 * n + 260)), height=360 + max(260, 16 * n))   # ≤ 1,000 px (issue 30)


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """The Transformer's fixed position encoding, (n, d): PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). BERT learns its positions instead; this is for comparison."""
    for name, v in (("n", n), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    pos = torch.arange(n, dtype=torch.float64)[:, None]                     # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)                       # (ceil(d/2),)
    angle = pos / 10000.0 ** (two_i / d)                                     # (n, ceil(d/2))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.float()


def position_similarity(position_weight, n: int | None = None, compare_sinusoidal: bool = True) -> go.Figure:
    """Cosine similarity between the first `n` learned position vectors, beside the sinusoidal encoding's.

    `position_weight` is (max_positions, H), e.g. `model.embeddings.position_embeddings.weight` (or that
    `nn.Embedding` itself). A bright band along the diagonal means nearby positions get similar vectors.
    """
    if isinstance(position_weight, torch.nn.Embedding):
        position_weight = position_weight.weight
    w = as_float(position_weight, "position_weight", (2,))
    P, H = w.shape
    n = P if n is None else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= P:
        raise ValueError(f"n must be an int between 1 and {P} (the learned positions), got {n!r}")
    mats = [("learned (BERT)", cosine_similarity(w[:n]))]
    if compare_sinusoidal:
        mats.append(("sinusoidal (Transformer)", cosine_similarity(sinusoidal_positions(n, H))))
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=[t for t, _ in mats], horizontal_spacing=0.08)
    for c, (title, sim) in enumerate(mats, start=1):
        fig.add_trace(go.Heatmap(
            z=sim.numpy(), coloraxis="coloraxis", name=title,
            hovertemplate=f"{title}<br>position %{{y}} · position %{{x}}<br>cosine %{{z:.3f}}<extra></extra>"),
            row=1, col=c)
        fig.update_xaxes(title_text="position", constrain="domain", row=1, col=c)
        fig.update_yaxes(title_text="position" if c == 1 else None, autorange="reversed",
                         scaleanchor=f"x{'' if c == 1 else c}", constrain="domain", row=1, col=c)
    return finish(fig, f"cosine similarity of the first {n} position vectors: nearby positions look alike",
                   coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, colorbar=dict(title="cosine")),
                   margin=dict(l=60, r=20, t=90, b=60), width=440 * len(mats) + 120, height=520)


# ---- attention -----------------------------------------------------------------------------------------

def attention_heatmap(out: BertOutput, tokens: Sequence[str], layer=0, head=0, batch_index: int = 0,
                      reduce: str = "mean", words: bool = False, hide_special: bool = False,
                      threshold: float = 0.0) -> go.Figure:
    """Attention as a heatmap: row i is where token i looks, and (for one head) the row sums to 1.

    `out` must come from a forward pass with `output_attentions=True`. `layer` and `head` may also be a
    list or "all" (combined by `reduce`); `words`, `hide_special` and `threshold` are
    `bertlab.probe.attention_map`'s, which chooses what is drawn (its docstring states the rules).
    """
    amap = AttentionMap.from_output(_attentions(out), tokens, layer=layer, head=head, reduce=reduce, words=words,
                                    hide_special=hide_special, threshold=threshold, batch_index=batch_index)
    return attention_map_figure(amap)


MAX_TICKS = 64          # more token labels than this on an axis are unreadable and slow to draw (512 × 2 texts)


def sparse_ticks(fig: go.Figure, labels: list[str]) -> None:
    """Label every token up to MAX_TICKS; beyond, every k-th (hover still names each cell's tokens)."""
    step = -(-len(labels) // MAX_TICKS)
    ticks = labels[::step] if step > 1 else None
    fig.update_xaxes(tickvals=ticks)
    fig.update_yaxes(tickvals=ticks)


def attention_map_figure(amap: AttentionMap) -> go.Figure:
    """An `AttentionMap` (bertlab.probe.attention_map) as a heatmap, one row per query, one column per key."""
    weights, tokens = amap.weights, amap.tokens
    T = len(tokens)
    labels = token_labels(tokens)
    fig = go.Figure(go.Heatmap(
        z=weights, x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=float(weights.max()),
        # the axis labels name both tokens on hover: no per-cell custom data (T² strings at 512 tokens is MBs)
        hovertemplate="%{y} → %{x}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title="weight"),
    ))
    sparse_ticks(fig, labels)
    return finish(fig, f"{amap.title}: where each token looks",
                  xaxis_title="attends to (key)", yaxis_title="token (query)",
                  yaxis_autorange="reversed", width=min(1000, max(420, 28 * T + 160)),
                  height=min(1000, max(380, 24 * T + 140)))     # ≤ 1,000 px: a long text gets smaller cells


def attention_grid(out: BertOutput, tokens: Sequence[str], batch_index: int = 0, max_tokens: int = 128,
                   cell_px: int = 120) -> go.Figure:
    """Every head of every layer at a glance: rows = layers, columns = heads, one shared colour scale.

    Cells have no tick labels (at 128 tokens they could not be read anyway): hover for the layer, head,
    query token, key token and weight. Texts longer than `max_tokens` show their first `max_tokens`.
    Trace order is layer-major: `fig.data[layer * heads + head]`.
    """
    attentions = _attentions(out)
    L = len(attentions)
    B, A, T, _ = attentions[0].shape
    b = check_index(batch_index, B, "batch_index")
    tokens = check_tokens(tokens, T, "attention maps")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    n = min(len(tokens), max_tokens)
    labels = token_labels(tokens[:n])
    weights = torch.stack([a[b, :, :n, :n].detach().float().cpu() for a in attentions])    # (L, A, n, n)

    gap = 6                                                                  # pixels between cells
    cell_px = min(cell_px, max(24, (840 - (A - 1) * gap) // A))              # the whole grid ≤ 1,000 px wide
    width, height = A * cell_px + (A - 1) * gap, L * cell_px + (L - 1) * gap
    fig = make_subplots(rows=L, cols=A, horizontal_spacing=gap / width if A > 1 else 0.0,
                        vertical_spacing=gap / height if L > 1 else 0.0,
                        column_titles=[f"head {h}" for h in range(A)])
    for layer in range(L):
        for head in range(A):
            fig.add_trace(go.Heatmap(
                z=weights[layer, head].numpy(), x=labels, y=labels, coloraxis="coloraxis",
                name=f"layer {layer}, head {head}",
                hovertemplate=f"layer {layer}, head {head}<br>%{{y}} → %{{x}}<br>weight %{{z:.3f}}<extra></extra>"),
                row=layer + 1, col=head + 1)
        fig.update_yaxes(title_text=f"layer {layer}", title_standoff=2, row=layer + 1, col=1)
    fig.update_xaxes(showticklabels=False, ticks="", showgrid=False)
    fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, autorange="reversed")
    shown = f" (first {n} of {len(tokens)} tokens)" if n < len(tokens) else ""
    return finish(
        fig, f"all {L} layers × {A} heads{shown}: look for diagonals (next/previous token), "
             "columns ([CLS], [SEP]) and broad rows",
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=float(weights.max()),
                       colorbar=dict(title="weight", thickness=12)),
        margin=dict(l=70, r=90, t=80, b=20), width=width + 160, height=height + 100)


# ---- pre-training: masking and NSP -----------------------------------------------------------------------

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


# ---- probes: fill-mask, contextual vectors ---------------------------------------------------------------------

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


def head_importance_figure(scores) -> go.Figure:
    """A score per attention head, (layers, heads), e.g. `probe.head_importance(...)` or its `.scores`."""
    s = as_float(getattr(scores, "scores", scores), "scores", (2,))
    L, A = s.shape
    signed = bool((s < 0).any())
    big = max(float(s.abs().max()), 1e-12)
    fig = go.Figure(go.Heatmap(
        z=s.numpy(), x=list(range(A)), y=list(range(L)), texttemplate="%{z:.2f}" if L * A <= 256 else None,
        colorscale=DIVERGING if signed else SEQUENTIAL, zmin=-big if signed else 0.0, zmax=big, xgap=1, ygap=1,
        colorbar=dict(title="score"), hovertemplate="layer %{y}, head %{x}<br>importance %{z:.3f}<extra></extra>"))
    return finish(fig, "head importance: the darker the cell, the more that head matters",
                   xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1, autorange="reversed"),
                   width=min(1000, max(420, 44 * A + 180)), height=max(300, 36 * L + 150))


# ---- head ablation -------------------------------------------------------------------------------------

def ablation_figure(effect) -> go.Figure:
    """What switching heads off did (a `probe.AblationEffect`): with metric "prediction", grouped bars of the
    guesses for [MASK] with every head on and with the heads off (every token of either top-k); with
    metric "output", how far each token's output vector moved (cosine distance)."""
    if not hasattr(effect, "metric") or not hasattr(effect, "heads"):
        raise ValueError(f"expected an AblationEffect from probe.Ablation(...).effect(heads), "
                         f"got {type(effect).__name__}")
    off = ", ".join(f"L{l}H{h}" for l, h in effect.heads) or "none"
    if effect.metric == "output":
        change = as_float(effect.change, "change", (1,))
        labels = token_labels(effect.tokens)
        fig = go.Figure(go.Bar(x=labels, y=change.tolist(), marker_color=PALETTE["notnext"],
                               customdata=list(effect.tokens),
                               hovertemplate="%{customdata}: cosine distance %{y:.3e}<extra></extra>"))
        return finish(fig, f"how far each token's output vector moves with heads off ({off})",
                      xaxis=dict(title="token", tickangle=45),
                      yaxis=dict(title="cosine distance from all heads on", rangemode="tozero"),
                      width=min(1000, max(520, 26 * len(labels) + 160)), height=420)
    rows = [GuessChange(*row) for row in effect.compared]             # (token, before, after) triples work too
    tokens = [row.token for row in rows]
    labels = token_labels(tokens)
    fig = go.Figure()
    series = (("every head on", "before", PALETTE["mlm"]), (f"off: {off}", "after", PALETTE["notnext"]))
    for name, column, color in series:
        fig.add_trace(go.Bar(x=[getattr(row, column) for row in rows], y=labels, orientation="h", name=name,
                             marker_color=color, customdata=tokens,
                             hovertemplate=f"%{{customdata}}, {name}: p = %{{x:.3f}}<extra></extra>"))
    return finish(fig, f"the guess for [MASK] with heads switched off ({off})", barmode="group",
                  xaxis=dict(title="probability", rangemode="tozero"),
                  yaxis=dict(title="guess", autorange="reversed"),
                  legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                  margin=dict(l=120, r=30, t=80, b=60), width=600, height=160 + 28 * len(tokens))
