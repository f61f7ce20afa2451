"""Figures for looking inside a BERT beyond attention maps: one function per inspection probe.

Each takes a probe's result (bertlab.probe.neurons, .saliency, .head_types, .contextuality, .nearest,
.layers) and returns a `plotly.graph_objects.Figure` in the shared look of `bertlab.viz.figures`; none runs
a model. What each figure is for:

    neuron_figure(attention_neurons(...), query=3)     why a head attends where it does: q × k per dimension
    saliency_figure(saliency(...), out.attentions)     attribution beside attention: they disagree, often
    head_types_figure(head_types(...))                 every head coloured by what it attends to (Clark 2019)
    contextuality_figure(contextuality(...))           how contextual each layer is (Ethayarajh 2019)
    probe_layers_figure(probe_layers(...), ...)        which layer knows what (Tenney 2019)
    nearest_contexts_figure(nearest_contexts(...))     exBERT's corpus search, as a table
    nearest_contexts_html(nearest_contexts(...))       ... or as HTML with the word highlighted
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ...probe import attention_rollout
from ...probe.attention_maps import AttentionMap
from .look import COLORS, DIVERGING, SEQUENTIAL, finish, token_labels

__all__ = ["neuron_figure", "saliency_figure", "head_types_figure", "contextuality_figure",
           "probe_layers_figure", "nearest_contexts_figure", "nearest_contexts_html"]


def _need(result, fields: Sequence[str], made_by: str):
    missing = [f for f in fields if not hasattr(result, f)]
    if missing:
        raise ValueError(f"expected the result of {made_by}, got {type(result).__name__} (no "
                         f"{', '.join(missing)})")


def _query_index(query, tokens: Sequence[str]) -> int:
    """A query position, or a token string (its first occurrence), → a position in 0 … T - 1."""
    T = len(tokens)
    if isinstance(query, str):
        if query not in tokens:
            raise ValueError(f"{query!r} is not one of the tokens {list(tokens)}: pass a token or a position")
        return list(tokens).index(query)
    if isinstance(query, bool) or not isinstance(query, int) or not -T <= query < T:
        raise ValueError(f"query must be a token position in 0 … {T - 1} (or a token string), got {query!r}")
    return query % T


# ---- one head's computation ---------------------------------------------------------------------------

def neuron_figure(neurons, query=0) -> go.Figure:
    """One query token's pass through a head (bertlab.probe.neurons.attention_neurons), left to right:
    q × k for every key, dimension by dimension (the cells of a row sum to q·k); q·k / √Dh, the score
    the softmax sees; and the softmax itself, the attention weight. `query`: a position or a token.
    """
    _need(neurons, ("tokens", "queries", "keys", "scores", "weights", "layer", "head"), "attention_neurons")
    tokens = list(neurons.tokens)
    i = _query_index(query, tokens)
    products = neurons.products(i).float()                             # (T, Dh)
    scores, weights = neurons.scores[i].float(), neurons.weights[i].float()
    T, Dh = products.shape
    labels = token_labels(tokens)
    big = max(float(products.abs().max()), 1e-6)
    fig = make_subplots(rows=1, cols=3, shared_yaxes=True, column_widths=[0.6, 0.2, 0.2], horizontal_spacing=0.03,
                        subplot_titles=(f"q × k, per dimension (Dh = {Dh})", "q·k / √Dh", "softmax = weight"))
    fig.add_trace(go.Heatmap(z=products.tolist(), x=list(range(Dh)), y=labels, colorscale=DIVERGING,
                             zmin=-big, zmax=big,
                             colorbar=dict(title="q×k", x=1.01, xanchor="left", len=0.8, thickness=10),
                             hovertemplate="key %{y}<br>dimension %{x}: q×k %{z:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=scores.tolist(), y=labels, orientation="h", marker_color=COLORS[0], name="score",
                         hovertemplate="key %{y}<br>q·k / √Dh %{x:.3f}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Bar(x=weights.tolist(), y=labels, orientation="h", marker_color=COLORS[1], name="weight",
                         hovertemplate="key %{y}<br>weight %{x:.3f}<extra></extra>"), row=1, col=3)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text="dimension of q and k", row=1, col=1)
    fig.update_xaxes(range=[0, 1], row=1, col=3)
    return finish(fig, f"layer {neurons.layer}, head {neurons.head}: how {tokens[i]!r} ({i}) picks where to look",
                   showlegend=False, height=max(360, 22 * T + 160), width=1000, margin=dict(l=110, r=80, t=80, b=60))


# ---- attribution beside attention ---------------------------------------------------------------------

def _saliency_position(result, tokens: list[str], position) -> int:
    if position is None:
        position = getattr(result, "mask_position", None)
    if position is None:
        if "[MASK]" not in tokens:
            raise ValueError("which token's attention should go beside the attribution? pass position=… "
                             "(the text has no [MASK] to default to)")
        position = tokens.index("[MASK]")
    return _query_index(int(position) if not isinstance(position, str) else position, tokens)


def saliency_rows(result, attentions, position=None) -> dict[str, torch.Tensor]:
    """The three rows `saliency_figure` draws, as (T,) tensors: the attribution of every input token, the
    last layer's attention from `position` averaged over heads, and attention rollout from `position`
    (Abnar & Zuidema 2020, bertlab.probe.attention_rollout). `attentions`: BertOutput.attentions of the
    same text (L tensors of (1, heads, T, T)), or the BertOutput.
    """
    _need(result, ("tokens", "scores"), "saliency")
    tokens = list(result.tokens)
    T = len(tokens)
    layers = getattr(attentions, "attentions", attentions)
    if not layers or layers[-1].shape[-1] != T:
        got = "nothing" if not layers else f"{layers[-1].shape[-1]} positions"
        raise ValueError(f"attentions must be the model's attention weights for the same {T} tokens as the "
                         f"saliency result, got {got}: run the model on the same text with output_attentions=True")
    i = _saliency_position(result, tokens, position)
    scores = torch.as_tensor(result.scores).detach().float().cpu().reshape(-1)
    # (T,): the last layer's heads averaged, by probe's one attention normaliser (AttentionMap)
    last = AttentionMap.from_output(list(layers), tokens, layer=len(layers) - 1, head="all", reduce="mean").weights[i]
    rollout = attention_rollout([a[:1] for a in layers])[0, i]                 # (T,)
    method = getattr(result, "method", "attribution").replace("_", " ")
    return {method: scores, "attention, last layer (mean of heads)": last, "attention rollout": rollout}


def saliency_figure(result, attentions, position=None) -> go.Figure:
    """Attribution (bertlab.probe.saliency) and attention for the same prediction, one row each, the same
    tokens in the same columns: does the model's output depend on the tokens it attends to?

    Row 1 is the attribution (signed: blue lowers the prediction, red raises it); rows 2 and 3 the attention
    from the predicted position (`position`, default the result's own or the first [MASK]) in the last
    layer and rolled out through every layer. Each row is scaled to its own largest magnitude, and the
    cells print the raw numbers. Jain & Wallace (2019), "Attention is not Explanation", found the two often
    disagree; this figure lets you see it on your own sentence.
    """
    rows = saliency_rows(result, attentions, position)
    tokens = list(result.tokens)
    i = _saliency_position(result, tokens, position)
    labels = token_labels(tokens)
    fig = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=list(rows))
    for r, (name, values) in enumerate(rows.items()):
        signed = r == 0
        big = max(float(values.abs().max()), 1e-12)
        fig.add_trace(go.Heatmap(
            z=[values.tolist()], x=labels, y=[name], zmin=-big if signed else 0.0, zmax=big,
            colorscale=DIVERGING if signed else SEQUENTIAL, showscale=False, texttemplate="%{z:.2f}",
            hovertemplate=f"{name}<br>%{{x}}: %{{z:.4f}}<extra></extra>"), row=r + 1, col=1)
    fig.update_yaxes(showticklabels=False)
    fig.update_xaxes(tickangle=-45)
    target = getattr(result, "target", None)
    what = f"the prediction {target!r} at {tokens[i]} ({i})" if target else f"{tokens[i]} ({i})"
    return finish(fig, f"what {what} depends on, and what it attends to",
                   width=min(1000, max(560, 62 * len(tokens) + 120)), height=120 + 110 * len(rows),
                   margin=dict(l=30, r=20, t=80, b=90))


# ---- head types ---------------------------------------------------------------------------------------

#: one colour per head type, the same in every figure; "broad" and "mixed" are greys
HEAD_TYPE_COLORS = {"[CLS]": COLORS[0], "[SEP]": COLORS[1], "punctuation": COLORS[5], "previous": COLORS[4],
                    "next": COLORS[3], "self": COLORS[6], "broad": "#BAB0AC", "mixed": "#E5E5E5"}


def head_types_figure(result) -> go.Figure:
    """Every head (rows = layers, columns = heads) coloured by its type (bertlab.probe.head_types: what it
    mostly attends to, Clark et al. 2019); hover a cell for all its shares and its entropy.
    """
    _need(result, ("share", "entropy", "uniform_entropy", "labels"), "head_types")
    labels = result.labels
    L, H = len(labels), len(labels[0])
    kinds = [k for k in HEAD_TYPE_COLORS if any(k in row for row in labels)]
    kinds += sorted({l for row in labels for l in row} - set(kinds))
    index = {k: i for i, k in enumerate(kinds)}
    n = len(kinds)
    # a discrete colour scale: kind i owns the band [i / n, (i + 1) / n]
    scale = []
    for i, k in enumerate(kinds):
        color = HEAD_TYPE_COLORS.get(k, COLORS[(i + 2) % len(COLORS)])
        scale += [[i / n, color], [(i + 1) / n, color]]
    measures = list(result.share)
    hover = [["<br>".join([f"layer {l}, head {h}: <b>{labels[l][h]}</b>"]
                          + [f"{m}: {float(result.share[m][l, h]):.2f}" for m in measures]
                          + [f"entropy {float(result.entropy[l, h]):.2f} of "
                             f"{float(result.uniform_entropy[l, h]):.2f} (uniform)"])
              for h in range(H)] for l in range(L)]
    short = {"[CLS]": "CLS", "[SEP]": "SEP", "punctuation": "punct", "previous": "prev"}
    fig = go.Figure(go.Heatmap(
        z=[[index[labels[l][h]] + 0.5 for h in range(H)] for l in range(L)], x=list(range(H)), y=list(range(L)),
        zmin=0, zmax=n, colorscale=scale, xgap=2, ygap=2, customdata=hover,
        hovertemplate="%{customdata}<extra></extra>",
        text=[[short.get(labels[l][h], labels[l][h]) for h in range(H)] for l in range(L)], texttemplate="%{text}",
        colorbar=dict(title="type", tickvals=[i + 0.5 for i in range(n)], ticktext=kinds, thickness=12)))
    return finish(fig, "head types: what each head mostly attends to (hover for the shares)",
                   xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1, autorange="reversed"),
                   width=max(480, 52 * H + 200), height=max(320, 44 * L + 150))


# ---- contextuality ------------------------------------------------------------------------------------

def contextuality_figure(result) -> go.Figure:
    """Ethayarajh (2019)'s three measures per layer (bertlab.probe.contextuality), one panel each: the measure,
    its random-words baseline (dashed) and the adjusted value (measure − baseline, dotted).
    """
    _need(result, ("layers", "self_similarity", "intra_similarity", "mev", "baseline_cosine", "baseline_mev"),
          "contextuality")
    panels = (("self_similarity", "self-similarity", result.baseline_cosine),
              ("intra_similarity", "intra-sentence similarity", result.baseline_cosine),
              ("mev", "max explainable variance", result.baseline_mev))
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t, _ in panels], horizontal_spacing=0.07)
    x = list(result.layers)
    for c, (name, title, base) in enumerate(panels):
        values = getattr(result, name)
        for y, label, dash, color in ((values, title, "solid", COLORS[0]),
                                      (base, "baseline (random words)", "dash", COLORS[7 if c else 1]),
                                      (result.adjusted(name), "adjusted (measure − baseline)", "dot", COLORS[4])):
            fig.add_trace(go.Scatter(x=x, y=list(y), mode="lines+markers", name=label, legendgroup=label,
                                     showlegend=c == 0 or label == title,
                                     line=dict(dash=dash, color=color),
                                     hovertemplate=f"{label}<br>layer %{{x}}: %{{y:.3f}}<extra>{title}</extra>"),
                          row=1, col=c + 1)
        fig.update_xaxes(title_text="layer (0 = embeddings)", dtick=1, row=1, col=c + 1)
    return finish(fig, "how contextual is each layer? lower self-similarity and MEV = more context-specific",
                   width=1000, height=420, legend=dict(orientation="h", y=-0.25))


# ---- which layer knows what ---------------------------------------------------------------------------

def probe_layers_figure(*results, names: Sequence[str] | None = None) -> go.Figure:
    """Held-out accuracy of a linear probe per layer (bertlab.probe.layers.probe_layers), one line per task,
    each with its majority-class baseline dashed in the same colour: Tenney et al. 2019's picture of where a
    kind of information becomes linearly readable.
    """
    if not results:
        raise ValueError("pass at least one probe_layers result, e.g. probe_layers_figure(pos, senses)")
    for r in results:
        _need(r, ("layer_names", "accuracy", "majority_baseline"), "probe_layers")
    if names is not None and (isinstance(names, str) or len(names) != len(results)):
        raise ValueError(f"names must give one name per result: {len(results)} results")
    names = list(names) if names is not None else [r.task or f"probe {k}" for k, r in enumerate(results)]
    fig = go.Figure()
    for k, (r, name) in enumerate(zip(results, names)):
        color = COLORS[k % len(COLORS)]
        x = list(range(len(r.accuracy)))
        best = max(x, key=lambda l: (r.accuracy[l], -l))
        fig.add_trace(go.Scatter(x=x, y=r.accuracy, mode="lines+markers", name=name, line=dict(color=color),
                                 customdata=r.layer_names,
                                 hovertemplate=f"{name}<br>%{{customdata}}: accuracy %{{y:.3f}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[r.majority_baseline] * 2, mode="lines",
                                 name=f"{name}: majority baseline", line=dict(color=color, dash="dash"),
                                 hovertemplate=f"always the most frequent label: %{{y:.3f}}<extra>{name}</extra>"))
        fig.add_trace(go.Scatter(x=[best], y=[r.accuracy[best]], mode="markers", showlegend=False,
                                 marker=dict(color=color, size=14, symbol="star"),
                                 hovertemplate=f"{name}: best layer {r.layer_names[best]}<extra></extra>"))
    ticks = results[0].layer_names
    return finish(fig, "which layer knows what: a linear probe per layer (dashed: majority-class baseline)",
                   xaxis=dict(title="layer", tickmode="array", tickvals=list(range(len(ticks))), ticktext=ticks),
                   yaxis=dict(title="held-out accuracy", range=[0, 1.02]), width=720, height=420)


# ---- exBERT's corpus search ---------------------------------------------------------------------------

def _marked(sentence: str, span: tuple[int, int], left: str, right: str) -> str:
    a, b = span
    return html.escape(sentence[:a]) + left + html.escape(sentence[a:b]) + right + html.escape(sentence[b:])


def _layer_name(result) -> str:
    return "the embedding output" if result.layer == 0 else f"layer {result.layer} of {result.num_layers}"


def nearest_contexts_figure(result) -> go.Figure:
    """The hits of bertlab.probe.nearest.nearest_contexts as a table: rank, cosine, sentence with the word
    in bold. The title names the query and the layer.
    """
    _need(result, ("hits", "text", "word", "layer", "query_char_span"), "nearest_contexts")
    rows = [(str(k + 1), f"{h.cosine:.3f}", _marked(h.sentence, h.char_span, "<b>", "</b>"))
            for k, h in enumerate(result.hits)]
    ranks, cosines, sentences = (list(c) for c in zip(*rows)) if rows else ([], [], [])
    fig = go.Figure(go.Table(
        columnwidth=[40, 70, 700],
        header=dict(values=["rank", "cosine", "sentence"], fill_color="#EEF3F8", align="left"),
        cells=dict(values=[ranks, cosines, sentences], align="left", height=26)))
    query = _marked(result.text, result.query_char_span, "<b>", "</b>")
    return finish(fig, f"nearest uses of “{html.escape(result.word)}” at {_layer_name(result)} to: {query}",
                   width=960, height=120 + 30 * max(1, len(rows)), margin=dict(l=10, r=10, t=60, b=10))


def nearest_contexts_html(result) -> str:
    """The hits as a small self-contained HTML table (no script, no URL), the word marked with <mark>."""
    _need(result, ("hits", "text", "word", "layer", "query_char_span"), "nearest_contexts")
    style = "border-collapse:collapse;font-family:sans-serif;font-size:13px"
    cell = "padding:3px 8px;border-bottom:1px solid #ddd;text-align:left"
    rows = "".join(f'<tr><td style="{cell}">{k + 1}</td><td style="{cell}">{h.cosine:.3f}</td>'
                   f'<td style="{cell}">{_marked(h.sentence, h.char_span, "<mark>", "</mark>")}</td></tr>'
                   for k, h in enumerate(result.hits))
    query = _marked(result.text, result.query_char_span, "<mark>", "</mark>")
    return (f'<div><div style="margin:4px 0">nearest uses of <b>{html.escape(result.word)}</b> at '
            f"{_layer_name(result)} ({result.searched} occurrences searched) to: {query}</div>"
            f'<table style="{style}"><tr><th style="{cell}">rank</th><th style="{cell}">cosine</th>'
            f'<th style="{cell}">sentence</th></tr>{rows}</table></div>')
