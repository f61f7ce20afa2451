"""Figures for contextual vectors (notebook 07): one word in several sentences, compared layer by layer.

    vectors = probe.word_vectors(model, tokenizer, sentences, "bank", layer="all")     # (n, L + 1, H)
    cosine_matrix(probe.cosine_distances(vectors), sentences, word="bank")      # one layer's distances
    drift_by_layer(vectors, sentences, word="bank")                             # how they move apart
    projection_2d(vectors, sentences, senses, word="bank")                      # a 2-D PCA, coloured by sense

Pure functions of the probe's numbers, in the shared look of bertlab.viz.figures.look; none runs a model.
"""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go
import torch

from ...probe.cosine import cosine_distances
from ...probe.projection import pca_2d
from .look import COLORS, SEQUENTIAL, as_float, check_index, finish, shorten

__all__ = ["cosine_matrix", "drift_by_layer", "projection_2d"]


def _context_labels(labels, n: int) -> list[str]:
    if isinstance(labels, str) or len(labels) != n:
        got = "a string" if isinstance(labels, str) else f"{len(labels)} labels"
        raise ValueError(f"{got} for {n} vectors: pass one label (the sentence) per context")
    return [str(s) for s in labels]



def _pick_layer(vectors: torch.Tensor, layer: int) -> torch.Tensor:
    if vectors.dim() == 3:
        return vectors[:, check_index(layer, vectors.shape[1], "layer")]
    return vectors


def cosine_matrix(distances, labels: Sequence[str], word: str | None = None, layer: int = -1) -> go.Figure:
    """A word's cosine distances between its contexts (n, n), annotated to 2 decimals.

    `labels` are the sentences (shortened on the axes, whole on hover). A per-layer stack (L, n, n) is
    accepted too: `layer` picks one.
    """
    d = as_float(distances, "distances", (2, 3))
    if d.dim() == 3:
        d = d[check_index(layer, d.shape[0], "layer")]
    n = d.shape[0]
    if d.shape != (n, n):
        raise ValueError(f"distances must be square (n, n), got {tuple(d.shape)}")
    labels = _context_labels(labels, n)
    short = [f"{i + 1}: {shorten(s, 32)}" for i, s in enumerate(labels)]
    fig = go.Figure(go.Heatmap(
        z=d.numpy(), x=short, y=short, texttemplate="%{z:.2f}", colorscale=SEQUENTIAL, zmin=0.0,
        zmax=max(float(d.max()), 1e-6), colorbar=dict(title="distance"),
        customdata=[[[a, b] for b in labels] for a in labels],
        hovertemplate="%{customdata[0]}<br>vs %{customdata[1]}<br>cosine distance %{z:.3f}<extra></extra>"))
    what = f"'{word}'" if word else "the word"
    return finish(fig, f"cosine distance of {what} between contexts: 0 = the same vector, same senses sit close",
                   yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=30),
                   margin=dict(l=220, r=30, t=60, b=160), width=min(1000, max(520, 70 * n + 320)), height=max(420, 60 * n + 240))


def drift_by_layer(vectors_all_layers, labels: Sequence[str], reference: int | None = 0,
                   word: str | None = None) -> go.Figure:
    """How a word's vector in each context moves away from its vector in the `reference` context, layer by
    layer (x = layer, 0 = the embedding output). `vectors_all_layers` is (n, L+1, H); `reference=None`
    draws every pair instead."""
    v = as_float(vectors_all_layers, "vectors_all_layers", (3,))
    n, L1, _ = v.shape
    labels = _context_labels(labels, n)
    if n < 2:
        raise ValueError("need at least two contexts to measure a distance")
    dists = cosine_distances(v)                                             # (L+1, n, n): probe computes
    layers = list(range(L1))
    if reference is None:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        ytitle = "cosine distance between the two contexts"
    else:
        ref = check_index(reference, n, "reference")
        pairs = [(ref, j) for j in range(n) if j != ref]
        ytitle = f"cosine distance to context {ref + 1}"
    fig = go.Figure()
    for c, (i, j) in enumerate(pairs):
        dist = dists[:, i, j]                                                # (L+1,)
        name = (f"{i + 1} ↔ {j + 1}: {shorten(labels[j], 30)}" if reference is None
                else f"{j + 1}: {shorten(labels[j], 36)}")
        fig.add_trace(go.Scatter(
            x=layers, y=dist.float().numpy(), mode="lines+markers", name=name, line_color=COLORS[c % len(COLORS)],
            customdata=[[labels[i], labels[j]]] * L1,
            hovertemplate="layer %{x}<br>cosine distance %{y:.3f}<br>%{customdata[1]}"
                          "<br>vs %{customdata[0]}<extra></extra>"))
    what = f"'{word}'" if word else "the word"
    return finish(fig, f"{what} layer by layer: nearly the same vector at the embeddings, pulled apart by context",
                   xaxis=dict(title="layer (0 = embedding output)", dtick=1),
                   yaxis=dict(title=ytitle, rangemode="tozero"),
                   width=760, height=440)


def projection_2d(vectors, labels: Sequence[str], senses: Sequence[str] | None = None, method: str = "pca",
                  word: str | None = None, layer: int = -1) -> go.Figure:
    """Contextual vectors (n, H) projected to 2-D by PCA, one colour per sense; hover shows the sentence.

    A per-layer stack (n, L+1, H) is accepted too: `layer` picks one. Points are numbered as `labels`.
    """
    if method != "pca":
        raise ValueError(f"method must be 'pca', got {method!r}")
    v = _pick_layer(as_float(vectors, "vectors", (2, 3)), layer)
    n = v.shape[0]
    labels = _context_labels(labels, n)
    if n < 2:
        raise ValueError("need at least two vectors to project")
    if senses is None:
        senses = ["context"] * n
    if isinstance(senses, str) or len(senses) != n:
        got = "a string" if isinstance(senses, str) else len(senses)
        raise ValueError(f"senses must give one sense per vector ({n}), got {got}")
    coords, var = pca_2d(v)                                                # probe computes, viz draws
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
    return finish(fig, f"2-D PCA of {what} in {n} contexts: the same sense should cluster",
                   xaxis=dict(title=f"PC1 ({100 * float(var[0]):.0f} % of variance)", zeroline=False),
                   yaxis=dict(title=f"PC2 ({100 * float(var[1]):.0f} % of variance)", zeroline=False),
                   width=640, height=520)
