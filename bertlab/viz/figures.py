"""Plotly figures. Each takes what the model returned and gives back a `go.Figure` with one consistent look.

Every function here is a pure function of tensors, model outputs or probe results: none runs a model. The
look is shared: `LAYOUT` (template, font, margins, colour cycle), `PALETTE` (one colour per concept, the same
in every figure: the token part is always blue, NSP always orange, a [MASK] always light blue), the
`SEQUENTIAL` scale for weights and distances and the `DIVERGING` one for signed values. Titles say what to
look for; hovering a cell or point names the token (or position, layer, head) and its number to 3 decimals.

    out = model(**enc, output_attentions=True)
    attention_grid(out, enc.tokens)                      # every layer × head at a glance
    embedding_sum(out, enc.tokens)                       # token + segment + position → LayerNorm
"""

from __future__ import annotations

import json
import math
import os
from typing import Iterable, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn.functional as F
from plotly.subplots import make_subplots

from ..model.bert import BertOutput
from ..pretraining.schedule import lr_at

__all__ = ["LAYOUT", "PALETTE", "COLORS", "attention_heatmap", "attention_grid", "embedding_sum",
           "sinusoidal_positions", "position_similarity", "masking_figure", "nsp_figure", "fill_mask_figure",
           "fill_mask_layers_figure", "cosine_matrix", "drift_by_layer", "projection_2d", "training_curves",
           "lr_schedule", "head_importance_figure"]

# a colour-blind-friendly categorical cycle (Tableau 10): senses, contexts, anything without a fixed colour
COLORS = ["#4C78A8", "#F58518", "#E45756", "#72B7B2", "#54A24B", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D",
          "#BAB0AC"]
PALETTE = dict(
    token="#4C78A8", segment="#F58518", position="#54A24B", sum="#B279A2", normed="#E45756",   # embeddings
    total="#333333", mlm="#4C78A8", nsp="#F58518", lr="#72B7B2",                                # training
    isnext="#54A24B", notnext="#E45756",                                                        # NSP
    not_chosen="#EEEEEE", mask="#9ECAE9", random="#FF9DA6", kept="#F2CF5B",                     # MLM masking
)
SEQUENTIAL = "Blues"      # weights, probabilities, distances: 0 is white
DIVERGING = "RdBu_r"      # signed values and cosine similarity: 0 is white, negative blue, positive red

LAYOUT = dict(template="plotly_white", font=dict(size=12), margin=dict(l=60, r=20, t=50, b=60), colorway=COLORS)

_PARTS = (("token", "token"), ("segment", "segment"), ("position", "position"), ("sum", "sum"),
          ("normed", "LayerNorm(sum)"))
IGNORE_INDEX = -100


# ---- shared helpers ------------------------------------------------------------------------------------

def _finish(fig: go.Figure, title: str, **layout) -> go.Figure:
    """Apply the shared look and a title; `layout` may override any of LAYOUT's keys (say, the margin)."""
    fig.update_layout(**{**LAYOUT, **layout}, title=dict(text=title, x=0.01, xanchor="left"))
    return fig


def _float(x, name: str, dims: tuple[int, ...]) -> torch.Tensor:
    """Any tensor / array / nested list → a detached float32 CPU tensor with one of the allowed ranks."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a tensor or an array of numbers, got {type(x).__name__}") from None
    if x.dim() not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{name} must be {want}, got shape {tuple(x.shape)}")
    x = x.detach().float().cpu()
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return x


def _index(i, n: int, what: str) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
        raise ValueError(f"{what} {i!r} does not exist: there are {n} (0 … {n - 1})")
    return int(i) % n


def _labels(tokens: Sequence[str]) -> list[str]:
    # unique labels: plotly merges equal category names, so repeated tokens ("the", "the") get their position
    return [f"{t} ({i})" for i, t in enumerate(tokens)]


def _tokens(tokens, T: int, what: str) -> list[str]:
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of token strings, e.g. enc.tokens")
    tokens = list(tokens)
    if not tokens:
        raise ValueError("tokens is empty: pass the tokens of the text, e.g. enc.tokens")
    if len(tokens) > T:
        raise ValueError(f"{len(tokens)} tokens given for {what} over {T} positions: "
                         "pass the tokens of the same text the model ran on")
    return tokens


def _short(text: str, n: int = 40) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _context_labels(labels, n: int) -> list[str]:
    if isinstance(labels, str) or len(labels) != n:
        got = "a string" if isinstance(labels, str) else f"{len(labels)} labels"
        raise ValueError(f"{got} for {n} vectors: pass one label (the sentence) per context")
    return [str(s) for s in labels]


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
    b = _index(batch_index, B, "batch_index")
    tokens = _tokens(tokens, T, "embeddings")
    n, k = len(tokens), min(int(dims), H)
    if k < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    labels = _labels(tokens)
    values = {name: getattr(parts, name)[b, :n].detach().float().cpu() for name, _ in _PARTS}   # each (n, H)

    fig = make_subplots(rows=2, cols=5, specs=[[{"colspan": 5}, None, None, None, None], [{}] * 5],
                        row_heights=[0.4, 0.6], vertical_spacing=0.16, horizontal_spacing=0.02,
                        subplot_titles=[""] + [title for _, title in _PARTS])
    for name, title in _PARTS:
        fig.add_trace(go.Bar(
            x=labels, y=values[name].norm(dim=-1).numpy(), name=title, marker_color=PALETTE[name],
            hovertemplate=f"%{{x}}<br>{title}: ‖·‖ = %{{y:.3f}}<extra></extra>"), row=1, col=1)
    raw = max(float(values[name][:, :k].abs().max()) for name in ("token", "segment", "position", "sum"))
    normed = float(values["normed"][:, :k].abs().max())
    for c, (name, title) in enumerate(_PARTS, start=1):
        fig.add_trace(go.Heatmap(
            z=values[name][:, :k].numpy(), x=list(range(k)), y=labels,
            coloraxis="coloraxis2" if name == "normed" else "coloraxis",
            hovertemplate=f"%{{y}}<br>{title}, dim %{{x}}: %{{z:.3f}}<extra></extra>"), row=2, col=c)
        fig.update_yaxes(autorange="reversed", showticklabels=c == 1, dtick=1, row=2, col=c)
        fig.update_xaxes(title_text=f"dims 0…{k - 1}", row=2, col=c)
    fig.update_yaxes(title_text="L2 norm", row=1, col=1)
    bar = dict(thickness=12, len=0.5, y=0.0, yanchor="bottom")
    return _finish(
        fig, "embedding = token + segment + position, then LayerNorm: compare the sizes of the parts",
        barmode="group", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        coloraxis=dict(colorscale=DIVERGING, cmin=-raw, cmax=raw, colorbar=dict(title="raw", x=1.01, **bar)),
        coloraxis2=dict(colorscale=DIVERGING, cmin=-normed, cmax=normed,
                        colorbar=dict(title="normed", x=1.08, **bar)),
        margin=dict(l=90, r=110, t=100, b=60),
        width=min(1500, max(1000, 30 * n + 260)), height=360 + max(260, 16 * n))


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


def _cosine_similarity(x: torch.Tensor) -> torch.Tensor:
    x = F.normalize(x.double(), dim=-1)
    return (x @ x.T).float()                                                 # (n, n)


def position_similarity(position_weight, n: int | None = None, compare_sinusoidal: bool = True) -> go.Figure:
    """Cosine similarity between the first `n` learned position vectors, beside the sinusoidal encoding's.

    `position_weight` is (max_positions, H), e.g. `model.embeddings.position_embeddings.weight` (or that
    `nn.Embedding` itself). A bright band along the diagonal means nearby positions get similar vectors.
    """
    if isinstance(position_weight, torch.nn.Embedding):
        position_weight = position_weight.weight
    w = _float(position_weight, "position_weight", (2,))
    P, H = w.shape
    n = P if n is None else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= P:
        raise ValueError(f"n must be an int between 1 and {P} (the learned positions), got {n!r}")
    mats = [("learned (BERT)", _cosine_similarity(w[:n]))]
    if compare_sinusoidal:
        mats.append(("sinusoidal (Transformer)", _cosine_similarity(sinusoidal_positions(n, H))))
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=[t for t, _ in mats], horizontal_spacing=0.08)
    for c, (title, sim) in enumerate(mats, start=1):
        fig.add_trace(go.Heatmap(
            z=sim.numpy(), coloraxis="coloraxis", name=title,
            hovertemplate=f"{title}<br>position %{{y}} · position %{{x}}<br>cosine %{{z:.3f}}<extra></extra>"),
            row=1, col=c)
        fig.update_xaxes(title_text="position", constrain="domain", row=1, col=c)
        fig.update_yaxes(title_text="position" if c == 1 else None, autorange="reversed",
                         scaleanchor=f"x{'' if c == 1 else c}", constrain="domain", row=1, col=c)
    return _finish(fig, f"cosine similarity of the first {n} position vectors: nearby positions look alike",
                   coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, colorbar=dict(title="cosine")),
                   margin=dict(l=60, r=20, t=90, b=60), width=440 * len(mats) + 120, height=520)


# ---- attention -----------------------------------------------------------------------------------------

def attention_heatmap(out: BertOutput, tokens: Sequence[str], layer: int = 0, head: int = 0,
                      batch_index: int = 0) -> go.Figure:
    """One head's attention as a heatmap: row i is where token i looks, and the row sums to 1.

    `out` must come from a forward pass with `output_attentions=True`.
    """
    attentions = _attentions(out)
    L = len(attentions)
    B, n_heads = attentions[0].shape[:2]
    if not isinstance(layer, (int, np.integer)) or not -L <= layer < L:
        raise ValueError(f"layer {layer} does not exist: the model has {L} layers (0 … {L - 1})")
    if not isinstance(head, (int, np.integer)) or not -n_heads <= head < n_heads:
        raise ValueError(f"head {head} does not exist: each layer has {n_heads} heads (0 … {n_heads - 1})")
    b = _index(batch_index, B, "batch_index")
    pattern = attentions[layer][b, head]                                   # (T, T)
    tokens = _tokens(tokens, pattern.shape[-1], "an attention map")
    T = len(tokens)
    weights = pattern[:T, :T].detach().float().cpu()
    labels = _labels(tokens)
    fig = go.Figure(go.Heatmap(
        z=weights.tolist(), x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=float(weights.max()),
        customdata=[[[q, k] for k in tokens] for q in tokens],
        hovertemplate="%{customdata[0]} → %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
        colorbar=dict(title="weight"),
    ))
    return _finish(fig, f"layer {layer % L}, head {head % n_heads}: where each token looks",
                   xaxis_title="attends to (key)", yaxis_title="token (query)",
                   yaxis_autorange="reversed", width=max(420, 28 * T + 160), height=max(380, 24 * T + 140))


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
    b = _index(batch_index, B, "batch_index")
    tokens = _tokens(tokens, T, "attention maps")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    n = min(len(tokens), max_tokens)
    labels = _labels(tokens[:n])
    weights = torch.stack([a[b, :, :n, :n].detach().float().cpu() for a in attentions])    # (L, A, n, n)

    gap = 6                                                                  # pixels between cells
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
    return _finish(
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
        x = x[_index(batch_index, x.shape[0], "batch_index")]
    return x.detach().cpu().long()


def masking_figure(tokens: Sequence[str], inputs, labels, tok, batch_index: int = 0,
                   per_row: int = 12) -> go.Figure:
    """What masked-LM corruption did to one text: each token a cell, coloured by its fate.

    `inputs, labels = mask_tokens(ids, tok)`; `tokens` are the *original* tokens (`enc.tokens`). A chosen
    token is replaced by [MASK], by a random token, or kept; the model must predict every chosen one.
    (A random draw that happens to equal the original token looks, and is counted, as kept.)
    """
    inputs, labels = _ids(inputs, "inputs", batch_index), _ids(labels, "labels", batch_index)
    if inputs.shape != labels.shape:
        raise ValueError(f"inputs {tuple(inputs.shape)} and labels {tuple(labels.shape)} must have the same shape")
    tokens = _tokens(tokens, len(inputs), "masked inputs")
    T = len(tokens)
    if (labels[T:] != IGNORE_INDEX).any():
        raise ValueError(f"labels choose positions past the {T} tokens given: pass all the tokens of the text")
    inputs, labels = inputs[:T], labels[:T]
    chosen = labels != IGNORE_INDEX
    masked = chosen & (inputs == tok.mask_id)
    kept = chosen & (inputs == labels)
    rand = chosen & ~masked & ~kept
    fate = masked.long() + 2 * rand.long() + 3 * kept.long()               # 0 not chosen, 1 [MASK], 2 random, 3 kept

    sees = [tok.id_to_token(int(i)) for i in inputs]
    for i, t in enumerate(tokens):
        original = tok.id_to_token(int(labels[i])) if chosen[i] else sees[i]
        if original != t:
            where = "labels" if chosen[i] else "inputs"
            raise ValueError(f"{where}[{i}] is {original!r} but tokens[{i}] is {t!r}: pass the tokens of the "
                             "unmasked text and the inputs/labels that mask_tokens made from it")
    names = ("not chosen", "chosen → [MASK]", "chosen → random token", "chosen → kept")
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
    n, m, r, k = int(chosen.sum()), int(masked.sum()), int(rand.sum()), int(kept.sum())
    fig.update_xaxes(visible=False, range=[-0.5, per_row - 0.5])
    fig.update_yaxes(visible=False, autorange="reversed")
    return _finish(fig, f"{n} of {T} tokens chosen: {m} [MASK], {r} random, {k} kept (the loss uses only these {n})",
                   legend=dict(orientation="h", y=-0.02, yanchor="top", x=0),
                   margin=dict(l=20, r=20, t=60, b=50), width=max(480, 100 * per_row + 40), height=48 * rows + 140)


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

    `p_isnext` is what `probe.next_sentence(model, tok, a, b)` returns; pass `a` and `b` to show them.
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
        title += f"<br><sup>A: {_short(a or '', 60)} | B: {_short(b or '', 60)}</sup>"
    return _finish(fig, title, barmode="stack", xaxis=dict(range=[0, 1], title="probability"),
                   yaxis=dict(showticklabels=False), legend=dict(orientation="h", y=-0.35, traceorder="normal"),
                   margin=dict(l=20, r=20, t=80, b=70), width=640, height=260)


# ---- probes: fill-mask, contextual vectors ---------------------------------------------------------------------

def _mask_guesses(result, mask_index: int):
    if not hasattr(result, "guesses") or not hasattr(result, "mask_positions"):
        raise ValueError(f"expected a FillMask from probe.fill_mask, got {type(result).__name__}")
    return _index(mask_index, len(result.guesses), "mask_index")


def fill_mask_figure(result, mask_index: int = 0) -> go.Figure:
    """The top-k guesses for one [MASK] (a `probe.FillMask`), most likely on top."""
    i = _mask_guesses(result, mask_index)
    guesses = result.guesses[i]
    labels = _labels([g.token for g in guesses])    # unique even if two pieces print alike
    probs = [g.probability for g in guesses]
    fig = go.Figure(go.Bar(
        x=probs, y=labels, orientation="h", marker_color=PALETTE["mlm"], text=[f"{p:.3f}" for p in probs],
        textposition="outside", customdata=[g.token for g in guesses],
        hovertemplate="%{customdata}: p = %{x:.3f}<extra></extra>"))
    which = f"[MASK] #{i + 1} of {len(result.guesses)}" if len(result.guesses) > 1 else "[MASK]"
    return _finish(fig, f"what the model puts in {which}: top {len(guesses)}"
                        f"<br><sup>{_short(result.text, 80)}</sup>",
                   xaxis=dict(title="probability", range=[0, min(1.0, max(probs) * 1.2 + 0.02)]),
                   yaxis=dict(title="guess (rank)", autorange="reversed"),
                   margin=dict(l=120, r=30, t=80, b=60), width=560, height=140 + 34 * len(guesses))


def fill_mask_layers_figure(result, mask_index: int = 0) -> go.Figure:
    """What each layer would predict for one [MASK] (the logit lens): rows = layers, columns = rank,
    text = the token, colour = its probability. Needs `fill_mask(..., by_layer=True)`."""
    i = _mask_guesses(result, mask_index)
    if not getattr(result, "by_layer", None):
        raise ValueError("this FillMask has no per-layer guesses: call fill_mask(model, tok, text, by_layer=True)")
    rows = [layer[i] for layer in result.by_layer]                         # L of top-k guesses
    k = len(rows[0])
    layer_names = [f"layer {l}" for l in range(1, len(rows) + 1)]
    fig = go.Figure(go.Heatmap(
        z=[[g.probability for g in r] for r in rows], text=[[g.token for g in r] for r in rows],
        x=[f"#{j}" for j in range(1, k + 1)], y=layer_names, texttemplate="%{text}<br>%{z:.2f}",
        colorscale=SEQUENTIAL, zmin=0.0, zmax=max(g.probability for r in rows for g in r), xgap=2, ygap=2,
        colorbar=dict(title="p"),
        hovertemplate="%{y}, guess %{x}: %{text}<br>p = %{z:.3f}<extra></extra>"))
    return _finish(fig, "what each layer would put in the [MASK]: read upward as the guess forms"
                        f"<br><sup>{_short(result.text, 80)}</sup>",
                   xaxis=dict(title="rank"),
                   margin=dict(l=80, r=30, t=80, b=60), width=max(460, 90 * k + 200), height=140 + 40 * len(rows))


def _pick_layer(vectors: torch.Tensor, layer: int) -> torch.Tensor:
    if vectors.dim() == 3:
        return vectors[:, _index(layer, vectors.shape[1], "layer")]
    return vectors


def cosine_matrix(distances, labels: Sequence[str], word: str | None = None, layer: int = -1) -> go.Figure:
    """A word's cosine distances between its contexts (n, n), annotated to 2 decimals.

    `labels` are the sentences (shortened on the axes, whole on hover). A per-layer stack (L, n, n) is
    accepted too: `layer` picks one.
    """
    d = _float(distances, "distances", (2, 3))
    if d.dim() == 3:
        d = d[_index(layer, d.shape[0], "layer")]
    n = d.shape[0]
    if d.shape != (n, n):
        raise ValueError(f"distances must be square (n, n), got {tuple(d.shape)}")
    labels = _context_labels(labels, n)
    short = [f"{i + 1}: {_short(s, 32)}" for i, s in enumerate(labels)]
    fig = go.Figure(go.Heatmap(
        z=d.numpy(), x=short, y=short, texttemplate="%{z:.2f}", colorscale=SEQUENTIAL, zmin=0.0,
        zmax=max(float(d.max()), 1e-6), colorbar=dict(title="distance"),
        customdata=[[[a, b] for b in labels] for a in labels],
        hovertemplate="%{customdata[0]}<br>vs %{customdata[1]}<br>cosine distance %{z:.3f}<extra></extra>"))
    what = f"'{word}'" if word else "the word"
    return _finish(fig, f"cosine distance of {what} between contexts: 0 = the same vector, same senses sit close",
                   yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=30),
                   margin=dict(l=220, r=30, t=60, b=160), width=max(520, 70 * n + 320), height=max(420, 60 * n + 240))


def drift_by_layer(vectors_all_layers, labels: Sequence[str], reference: int | None = 0,
                   word: str | None = None) -> go.Figure:
    """How a word's vector in each context moves away from its vector in the `reference` context, layer by
    layer (x = layer, 0 = the embedding output). `vectors_all_layers` is (n, L+1, H); `reference=None`
    draws every pair instead."""
    v = _float(vectors_all_layers, "vectors_all_layers", (3,))
    n, L1, _ = v.shape
    labels = _context_labels(labels, n)
    if n < 2:
        raise ValueError("need at least two contexts to measure a distance")
    unit = F.normalize(v.double(), dim=-1)                                  # (n, L+1, H)
    layers = list(range(L1))
    if reference is None:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        ytitle = "cosine distance between the two contexts"
    else:
        ref = _index(reference, n, "reference")
        pairs = [(ref, j) for j in range(n) if j != ref]
        ytitle = f"cosine distance to context {ref + 1}"
    fig = go.Figure()
    for c, (i, j) in enumerate(pairs):
        dist = 1.0 - (unit[i] * unit[j]).sum(-1)                            # (L+1,)
        name = (f"{i + 1} ↔ {j + 1}: {_short(labels[j], 30)}" if reference is None
                else f"{j + 1}: {_short(labels[j], 36)}")
        fig.add_trace(go.Scatter(
            x=layers, y=dist.float().numpy(), mode="lines+markers", name=name, line_color=COLORS[c % len(COLORS)],
            customdata=[[labels[i], labels[j]]] * L1,
            hovertemplate="layer %{x}<br>cosine distance %{y:.3f}<br>%{customdata[1]}"
                          "<br>vs %{customdata[0]}<extra></extra>"))
    what = f"'{word}'" if word else "the word"
    return _finish(fig, f"{what} layer by layer: nearly the same vector at the embeddings, pulled apart by context",
                   xaxis=dict(title="layer (0 = embedding output)", dtick=1),
                   yaxis=dict(title=ytitle, rangemode="tozero"),
                   width=760, height=440)


def _pca_2d(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Project (n, H) onto its two principal axes: ((n, 2) coordinates, (2,) fraction of variance).

    Each axis's sign is fixed so that the point farthest along it lies on the positive side (sklearn's
    convention), so the same vectors always give the same picture.
    """
    xc = x.double() - x.double().mean(dim=0)                               # (n, H) centred
    U, S, Vh = torch.linalg.svd(xc, full_matrices=False)
    coords = xc @ Vh[:2].T                                                 # (n, ≤2)
    var = S ** 2 / (S ** 2).sum().clamp_min(1e-300)
    if coords.shape[1] < 2:                                                # H == 1: a line, drawn flat
        coords = torch.cat([coords, torch.zeros(len(x), 2 - coords.shape[1], dtype=coords.dtype)], dim=1)
        var = torch.cat([var, torch.zeros(2 - len(var), dtype=var.dtype)])
    far = coords.abs().argmax(dim=0)                                       # (2,)
    sign = torch.sign(coords[far, torch.arange(2)])
    coords = coords * torch.where(sign == 0, 1.0, sign)
    return coords.float(), var[:2].float()


def projection_2d(vectors, labels: Sequence[str], senses: Sequence[str] | None = None, method: str = "pca",
                  word: str | None = None, layer: int = -1) -> go.Figure:
    """Contextual vectors (n, H) projected to 2-D by PCA, one colour per sense; hover shows the sentence.

    A per-layer stack (n, L+1, H) is accepted too: `layer` picks one. Points are numbered as `labels`.
    """
    if method != "pca":
        raise ValueError(f"method must be 'pca', got {method!r}")
    v = _pick_layer(_float(vectors, "vectors", (2, 3)), layer)
    n = v.shape[0]
    labels = _context_labels(labels, n)
    if n < 2:
        raise ValueError("need at least two vectors to project")
    if senses is None:
        senses = ["context"] * n
    if isinstance(senses, str) or len(senses) != n:
        got = "a string" if isinstance(senses, str) else len(senses)
        raise ValueError(f"senses must give one sense per vector ({n}), got {got}")
    coords, var = _pca_2d(v)
    fig = go.Figure()
    for c, sense in enumerate(dict.fromkeys(senses)):                      # in order of first appearance
        idx = [i for i, s in enumerate(senses) if s == sense]
        fig.add_trace(go.Scatter(
            x=coords[idx, 0].numpy(), y=coords[idx, 1].numpy(), mode="markers+text", name=str(sense),
            text=[str(i + 1) for i in idx], textposition="top center",
            marker=dict(size=12, color=COLORS[c % len(COLORS)], line=dict(width=1, color="white")),
            customdata=[[labels[i], str(sense)] for i in idx],
            hovertemplate="%{customdata[0]}<br>sense: %{customdata[1]}<br>PC1 %{x:.3f}, PC2 %{y:.3f}<extra></extra>"))
    what = f"'{word}'" if word else "a word"
    return _finish(fig, f"2-D PCA of {what} in {n} contexts: the same sense should cluster",
                   xaxis=dict(title=f"PC1 ({100 * float(var[0]):.0f} % of variance)", zeroline=False),
                   yaxis=dict(title=f"PC2 ({100 * float(var[1]):.0f} % of variance)", zeroline=False),
                   width=640, height=520)


# ---- training ------------------------------------------------------------------------------------------

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
    return _finish(fig, "pre-training: MLM loss starts near ln(vocab) and falls slowly; NSP starts near ln 2",
                   margin=dict(l=60, r=20, t=90, b=60), width=760, height=580)


def lr_schedule(steps: int, warmup: int, peak: float, rows: Iterable[dict] | None = None) -> go.Figure:
    """The learning rate `schedule.lr_at` gives at each step: linear warm-up to `peak`, then linear decay to 0.

    Pass metrics.jsonl `rows` to overlay the learning rates the trainer actually logged.
    """
    for name, v in (("steps", steps), ("warmup", warmup)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{name} must be an int, got {v!r}")
    if steps < 1 or not 0 <= warmup <= steps:
        raise ValueError(f"need steps ≥ 1 and 0 ≤ warmup ≤ steps, got steps={steps}, warmup={warmup}")
    if isinstance(peak, bool) or not isinstance(peak, (int, float)) or not 0 < peak < math.inf:
        raise ValueError(f"peak must be a positive learning rate, got {peak!r}")
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
    return _finish(fig, f"learning rate: linear warm-up over {warmup} steps to {peak:g}, "
                        f"then linear decay to 0 at {steps}",
                   xaxis_title="step", yaxis=dict(title="learning rate", rangemode="tozero", exponentformat="e"),
                   width=720, height=380)


def head_importance_figure(scores) -> go.Figure:
    """A score per attention head, (layers, heads), e.g. `probe.head_importance(...)` or its `.scores`."""
    s = _float(getattr(scores, "scores", scores), "scores", (2,))
    L, A = s.shape
    signed = bool((s < 0).any())
    big = max(float(s.abs().max()), 1e-12)
    fig = go.Figure(go.Heatmap(
        z=s.numpy(), x=list(range(A)), y=list(range(L)), texttemplate="%{z:.2f}" if L * A <= 256 else None,
        colorscale=DIVERGING if signed else SEQUENTIAL, zmin=-big if signed else 0.0, zmax=big, xgap=1, ygap=1,
        colorbar=dict(title="score"), hovertemplate="layer %{y}, head %{x}<br>importance %{z:.3f}<extra></extra>"))
    return _finish(fig, "head importance: the darker the cell, the more that head matters",
                   xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1, autorange="reversed"),
                   width=max(420, 44 * A + 180), height=max(300, 36 * L + 150))
