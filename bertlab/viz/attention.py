"""Attention views that need no network: bertviz's head and model views, and bertlab's own `AttentionView`.

bertviz draws attention well, but its views load require.js, d3 and jQuery from a CDN when they are shown.
With no network (a firewall, a train, an air-gapped cluster) the output is an empty "Layer" box and
"require is not defined". So bertlab asks bertviz for the view's HTML (`html_action="return"`), drops the
require.js tag and the CDN paths, and puts d3 5.7.0 and jQuery 2.2.4 (package data in `viz/static/`, with
their licenses) inside the view's one `<script>`, behind a local `require` shim: no request, no global.

bertviz draws every token as an SVG row and every weight as a line, which gets hard to read past ~60 tokens.
`AttentionView` is for what bertviz lacks: long inputs (up to the model's 512 positions), a batch of texts,
and export to a standalone HTML file (plotly.js inlined, layer and head chosen in the page) or a PNG.
"""

from __future__ import annotations

import contextlib

import json
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

import torch
import torch.nn.functional as F

from ..probe import _inference

__all__ = ["head_view", "model_view", "head_view_html", "model_view_html", "AttentionView"]

# Past this many tokens head_view/model_view refuse and point to AttentionView (bertviz is unreadable well before).
BERTVIZ_MAX_TOKENS = 128
# Up to this many tokens a figure labels every token on its axes; beyond, it labels positions (hover shows tokens).
TOKEN_TICKS_MAX = 64
# Weights embedded in a bertviz view are rounded to this many decimals: 2-3x less HTML, error <= 5e-7.
DECIMALS = 6


# ---------------------------------------------------------------------------------------------------------
# Running the model

def _check_text(value, name: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} is empty: pass a sentence to look at"
                         + (" (or text_pair=None for a single sentence)" if name.startswith("text_pair") else ""))


def _check_texts(text, text_pair, where: str = "") -> None:
    if (text is None or (isinstance(text, str) and not text.strip())) and text_pair is not None:
        raise ValueError(f"text_pair{where} given without text{where}: the pair is (text, text_pair); "
                         "for one sentence pass it as text")
    _check_text(text, "text" + where)
    if text_pair is not None:
        _check_text(text_pair, "text_pair" + where)


def _max_positions(model) -> int | None:
    return getattr(getattr(model, "config", None), "max_position_embeddings", None)


def _device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


def _run(model, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The model's attention weights for `inputs`: L × (B, heads, T, T) float32 on the CPU, in eval mode, no grad."""
    # dropout off (the weights a reader should see); every module gets its own mode back afterwards
    with _inference(model) if isinstance(model, torch.nn.Module) else contextlib.nullcontext():
        out = model(**inputs, output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if attentions is None and hasattr(out, "bert"):        # bertlab's heads keep the encoder's output at .bert
        attentions = getattr(out.bert, "attentions", None)
    if not attentions:
        raise ValueError(f"the model returned no attention weights ({type(out).__name__}.attentions is empty): "
                         "it must return them for output_attentions=True, as bertlab's Bert and heads do; "
                         "a transformers model needs attn_implementation='eager'")
    return tuple(a.detach().float().cpu() for a in attentions)


def _encode_one(model, tok, text, text_pair, max_tokens, view: str):
    """Tokenize one text (or pair), check its length, run the model: (attentions, tokens, sentence_b_start)."""
    _check_texts(text, text_pair)
    enc = tok(text, text_pair)
    T, limit = len(enc.tokens), _max_positions(model)
    if limit is not None and T > limit:
        raise ValueError(f"{T} tokens is longer than the model's maximum of {limit} (max_position_embeddings): "
                         f"shorten the text, or use AttentionView(model, tok, [text], max_length={limit}), "
                         "which truncates")
    if max_tokens is not None and T > max_tokens:
        raise ValueError(f"{T} tokens is too many for bertviz's {view}: it draws a row per token and a line per "
                         f"weight, hard to read past ~60 tokens and slow past {max_tokens}. Shorten the text, or "
                         "use AttentionView(model, tok, [text]) (a heatmap per head, up to 512 tokens); "
                         "max_tokens=None forces the bertviz view")
    inputs = {k: v.to(_device(model)) for k, v in enc.to_tensors().items()}
    attentions = _run(model, inputs)
    b_start = enc.token_type_ids.index(1) if text_pair is not None and 1 in enc.token_type_ids else None
    return attentions, list(enc.tokens), b_start


# ---------------------------------------------------------------------------------------------------------
# bertviz, offline

@lru_cache(maxsize=None)
def _static(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _scripts_prelude() -> str:
    """d3 and jQuery, each run with a local CommonJS `module`, so they export into `lib` instead of onto window."""
    d3 = _static("d3.min.js").replace("// https://d3js.org", "// d3js.org", 1)   # a comment; the code is as shipped
    return (
        "// bertlab: d3 5.7.0 and jQuery 2.2.4 inlined (bertlab/viz/static, licenses beside them): no network.\n"
        "// A local `define` hides any page-wide AMD loader (classic Notebook has one) from both libraries.\n"
        "var define, module, exports, lib = {};\n"
        "module = {exports: {}}; exports = module.exports;\n"
        + _static("jquery.min.js")
        + "\n;lib.jquery = module.exports;\n"
        "module = {exports: {}}; exports = module.exports;\n"
        + d3
        + "\n;lib.d3 = module.exports;\n"
    )


# bertviz calls require.config(...) then requirejs(['jquery', 'd3'], draw). Answer from `lib`, and draw once the
# view's div is in the page: a notebook front end may run an output's script before it attaches the output.
_SHIM = """\
function requirejs(names, draw) {
  var args = names.map(function (name) { return lib[name]; });
  var tries = 0;
  (function attempt() {
    if (document.getElementById(%(root)s)) { draw.apply(null, args); }
    else if (++tries < 400) { setTimeout(attempt, 25); }
  })();
}
var require = requirejs;
require.config = function () {};
"""

_PARAMS = "const params = "


def _offline(html: str, view: str) -> str:
    """bertviz's returned HTML → the same view in one self-contained <div> + <script>, nothing fetched."""
    marker = '<script type="text/javascript">'
    at = html.find(marker)
    end = html.rfind("</script>")
    if at < 0 or end < at:
        raise RuntimeError(f"bertviz's {view} HTML has an unexpected shape: this bertviz version is not supported")
    div, js = html[:at], html[at + len(marker):end]
    div = re.sub(r"<script\s+src=[^>]*>\s*</script>", "", div)          # the require.js tag
    js = re.sub(r"require\.config\(\{.*?\}\);", "", js, count=1, flags=re.S)   # the CDN paths of d3 and jQuery
    start = js.find(_PARAMS)
    if start < 0:
        raise RuntimeError(f"bertviz's {view} script has no '{_PARAMS}': this bertviz version is not supported")
    start += len(_PARAMS)
    params, stop = json.JSONDecoder().raw_decode(js, start)
    # bertviz's header comment cites its source by URL; keep the words, drop the scheme
    head = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"https?://", "", m.group()), js[:start], flags=re.S)
    # bertviz puts the data in with a plain json.dumps; escape <, >, & so a token such as "</script>" stays data
    data = js[start:stop].replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    # bertviz's replace() also fills the "PYTHON_PARAMS" in the comment after it: a second copy of the data
    rest = re.sub(r"^;[ \t]*//[^\n]*", ";", js[stop:])
    found = re.search(r"https?://\S*|//cdn\S*", div + head + rest)   # the code, not the data (tokens)
    if found:
        raise RuntimeError(f"bertviz's {view} refers to {found.group()}, which bertlab does not ship: "
                           "this bertviz version is not supported offline")
    js = head + data + rest
    script = ("(function () {\n" + _scripts_prelude() + _SHIM % {"root": json.dumps(params["root_div_id"])}
              + js + "\n})();")
    return div.strip() + '\n<script type="text/javascript">\n' + script + "\n</script>\n"


def _as_layers(attentions) -> list[torch.Tensor]:
    """BertOutput, or L tensors of (1, heads, T, T) or (heads, T, T) → L float64 (1, heads, T, T), rounded."""
    if hasattr(attentions, "attentions"):
        if attentions.attentions is None:
            raise ValueError("this output has no attention weights: run the model with output_attentions=True")
        attentions = attentions.attentions
    if isinstance(attentions, torch.Tensor) or not isinstance(attentions, Sequence) or len(attentions) == 0:
        raise ValueError("attentions must be a BertOutput or a sequence of per-layer tensors of shape "
                         "(1, heads, T, T), as BertOutput.attentions")
    layers = []
    for i, a in enumerate(attentions):
        a = torch.as_tensor(a).detach()
        if a.dim() == 3:
            a = a[None]
        if a.dim() != 4 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attentions[{i}] has shape {tuple(a.shape)}; expected (1, heads, T, T)")
        if a.shape[0] != 1:
            raise ValueError(f"attentions[{i}] holds a batch of {a.shape[0]}: bertviz shows one example, so pass "
                             "[a[i:i+1] for a in out.attentions], or use AttentionView for a batch")
        if layers and a.shape != layers[0].shape:
            raise ValueError(f"attentions[{i}] has shape {tuple(a.shape)} but attentions[0] has "
                             f"{tuple(layers[0].shape)}: every layer must have the same shape")
        # float64 rounded: bertviz's json.dumps then writes 0.123457, not 0.12345679104328156
        layers.append(torch.round(a.cpu().double(), decimals=DECIMALS))
    return layers


def _check_tokens(tokens, T: int) -> list[str]:
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of str, one per position (Encoding.tokens)")
    tokens = list(tokens)
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens given for attention over {T} positions: pass the tokens "
                         "the model saw (Encoding.tokens), padding excluded")
    return tokens


def _check_b_start(sentence_b_start, T: int):
    if sentence_b_start is None:
        return None
    if isinstance(sentence_b_start, bool) or not isinstance(sentence_b_start, int) or not 0 < sentence_b_start < T:
        raise ValueError(f"sentence_b_start must be the index of the first sentence-B token (1 … {T - 1}), "
                         f"got {sentence_b_start!r}")
    return sentence_b_start


def _check_index(value, n: int, what: str, plural: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -n <= value < n:
        raise ValueError(f"{what} {value!r} does not exist: there are {n} {plural} (0 … {n - 1})")
    return value % n


def _check_indices(values, n: int, what: str, plural: str) -> list[int] | None:
    if values is None:
        return None
    if isinstance(values, int):
        values = [values]
    values = [_check_index(v, n, what, plural) for v in values]
    if not values:
        raise ValueError(f"no {plural} selected: pass at least one, or None for all")
    return sorted(set(values))


def head_view_html(attentions, tokens, sentence_b_start=None, layer=None, heads=None) -> str:
    """bertviz's head view of one example as self-contained HTML (no network): a <div> and one <script>.

    `attentions`: a BertOutput of one example, or its L tensors of (1, heads, T, T). `sentence_b_start`: the
    index of the first sentence-B token of a pair. `layer`, `heads`: what the view shows at first.
    """
    from bertviz import head_view as bertviz_head_view

    layers = _as_layers(attentions)
    L, H, T = len(layers), layers[0].shape[1], layers[0].shape[-1]
    tokens = _check_tokens(tokens, T)
    layer = None if layer is None else _check_index(layer, L, "layer", "layers")
    heads = _check_indices(heads, H, "head", "heads per layer")
    view = bertviz_head_view(layers, tokens, sentence_b_start=_check_b_start(sentence_b_start, T),
                             layer=layer, heads=heads, html_action="return")
    return _offline(view.data, "head_view")


def model_view_html(attentions, tokens, sentence_b_start=None, layers=None, heads=None,
                    display_mode: str = "dark") -> str:
    """bertviz's model view (every layer × head as a thumbnail) as self-contained HTML (no network).

    `layers`, `heads`: show only these (fewer thumbnails draw faster). `display_mode`: "dark" or "light".
    """
    from bertviz import model_view as bertviz_model_view

    per_layer = _as_layers(attentions)
    L, H, T = len(per_layer), per_layer[0].shape[1], per_layer[0].shape[-1]
    tokens = _check_tokens(tokens, T)
    if display_mode not in ("dark", "light"):
        raise ValueError(f"display_mode must be 'dark' or 'light', got {display_mode!r}")
    view = bertviz_model_view(per_layer, tokens, sentence_b_start=_check_b_start(sentence_b_start, T),
                              display_mode=display_mode,
                              include_layers=_check_indices(layers, L, "layer", "layers"),
                              include_heads=_check_indices(heads, H, "head", "heads per layer"),
                              html_action="return")
    return _offline(view.data, "model_view")


def head_view(model, tok, text: str, text_pair: str | None = None, layer: int | None = None, heads=None,
              max_tokens: int | None = BERTVIZ_MAX_TOKENS):
    """bertviz's head view of `model` on `text` (and `text_pair`), offline: an `IPython.display.HTML`.

    Lines join each token (left) to the tokens it attends to (right), one colour per head; hover a token,
    click or double-click a head's colour square. For a pair, a menu picks A→A, B→B, A→B or B→A.
    More than `max_tokens` tokens is a ValueError: use `AttentionView` for long inputs.
    """
    from IPython.display import HTML

    attentions, tokens, b_start = _encode_one(model, tok, text, text_pair, max_tokens, "head_view")
    return HTML(head_view_html(attentions, tokens, b_start, layer=layer, heads=heads))


def model_view(model, tok, text: str, text_pair: str | None = None, layers=None, heads=None,
               display_mode: str = "dark", max_tokens: int | None = BERTVIZ_MAX_TOKENS):
    """bertviz's model view of `model` on `text` (and `text_pair`), offline: an `IPython.display.HTML`.

    A thumbnail per layer (row) and head (column); click one to enlarge it. `layers`, `heads` keep only those.
    """
    from IPython.display import HTML

    attentions, tokens, b_start = _encode_one(model, tok, text, text_pair, max_tokens, "model_view")
    return HTML(model_view_html(attentions, tokens, b_start, layers=layers, heads=heads, display_mode=display_mode))


# ---------------------------------------------------------------------------------------------------------
# bertlab's own view: long inputs, batches, HTML and PNG files

def _position_ticks(labels: list[str], n: int) -> dict:
    """Axis ticks at every ~n/10 positions (1, 2, 5 × 10^k), labelled with the position, not the token."""
    raw = n / 10
    step = next(s * 10 ** e for e in range(6) for s in (1, 2, 5) if s * 10 ** e >= raw)
    at = list(range(0, n, step))
    return dict(tickmode="array", tickvals=[labels[i] for i in at], ticktext=[str(i) for i in at])


class AttentionView:
    """Attention weights of a batch of texts (or pairs), long ones included, as plotly figures.

    `AttentionView(model, tok, texts, text_pairs=None, max_length=512)` runs the model once (padded batches,
    eval mode, no grad) and keeps each example's weights without its padding. Texts longer than `max_length`
    (capped at the model's maximum) are truncated, and the figure says so. Then:

    - `figure(index, layer, head)`: one head's heatmap; without layer/head a grid of every layer × head
      (a long input is max-pooled to at most 64 × 64 cells per head, so sharp patterns stay visible);
    - `to_html(path, index)`: a standalone page (plotly.js inlined) with a layer menu and a head slider;
    - `to_png(path, index, layer, head)`: a PNG via kaleido and a local Chrome/Chromium.

    In a notebook the view shows the first example's grid. Up to 64 tokens the axes name every token;
    beyond, they give positions and hovering shows the tokens.
    """

    def __init__(self, model, tok, texts, text_pairs=None, max_length: int = 512, batch_size: int = 8):
        texts = [texts] if isinstance(texts, str) else texts
        if texts is None or not isinstance(texts, Sequence) or len(texts) == 0:
            raise ValueError("texts must be a str or a non-empty list of str")
        if text_pairs is not None:
            text_pairs = [text_pairs] if isinstance(text_pairs, str) else text_pairs
            if not isinstance(text_pairs, Sequence) or len(text_pairs) != len(texts):
                raise ValueError(f"text_pairs must give one pair (or None) per text: {len(texts)} texts, "
                                 f"{len(text_pairs) if isinstance(text_pairs, Sequence) else text_pairs!r} pairs")
        pairs = list(text_pairs) if text_pairs is not None else [None] * len(texts)
        for i, (text, pair) in enumerate(zip(texts, pairs)):
            _check_texts(text, pair, f"[{i}]" if len(texts) > 1 else "")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3:
            raise ValueError(f"max_length must be an int of at least 3 ([CLS], a token, [SEP]), got {max_length!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        model_max = _max_positions(model)
        self.max_length = min(max_length, model_max) if model_max else max_length

        encodings, self.truncated = [], []
        for text, pair in zip(texts, pairs):
            enc = tok(text, pair)
            self.truncated.append(len(enc.tokens) > self.max_length)
            if self.truncated[-1]:
                enc = tok(text, pair, max_length=self.max_length, truncation=True)
            encodings.append(enc)
        self.tokens: list[list[str]] = [list(e.tokens) for e in encodings]
        self.lengths: list[int] = [len(t) for t in self.tokens]
        self.sentence_b_starts: list[int | None] = [
            e.token_type_ids.index(1) if p is not None and 1 in e.token_type_ids else None
            for e, p in zip(encodings, pairs)]

        device = _device(model)
        self._attentions: list[torch.Tensor] = []          # per example: (L, heads, n, n), padding cut off
        for lo in range(0, len(encodings), batch_size):
            chunk = encodings[lo:lo + batch_size]
            T = max(len(e.input_ids) for e in chunk)
            inputs = {name: torch.zeros(len(chunk), T, dtype=torch.long)
                      for name in ("input_ids", "token_type_ids", "attention_mask")}
            for b, e in enumerate(chunk):                   # right padding: id 0, segment 0, mask 0
                n = len(e.input_ids)
                inputs["input_ids"][b, :n] = torch.tensor(e.input_ids)
                inputs["token_type_ids"][b, :n] = torch.tensor(e.token_type_ids)
                inputs["attention_mask"][b, :n] = 1
            attentions = _run(model, {k: v.to(device) for k, v in inputs.items()})  # L × (b, heads, T, T)
            stacked = torch.stack(attentions, dim=1)        # (b, L, heads, T, T)
            for b, e in enumerate(chunk):
                n = len(e.input_ids)
                self._attentions.append(stacked[b, :, :, :n, :n].clone())
        self.num_layers, self.num_heads = self._attentions[0].shape[:2]

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        lengths = ", ".join(map(str, self.lengths))
        return (f"AttentionView({len(self)} example{'s' * (len(self) != 1)} of {lengths} tokens, "
                f"{self.num_layers} layers × {self.num_heads} heads)")

    def attentions(self, index: int = 0) -> torch.Tensor:
        """Example `index`'s weights, (layers, heads, n, n) without padding: row i is where token i looks."""
        return self._attentions[self._index(index)]

    # -- figures ------------------------------------------------------------------------------------------

    def figure(self, index: int = 0, layer: int | None = None, head: int | None = None, grid_max: int = 64):
        """One head's heatmap when `layer` and `head` are given; otherwise a grid (rows = layers, columns = heads)
        of every head, or of one layer's heads (`layer` only), or of one head across layers (`head` only).

        In the grid, an input longer than `grid_max` tokens is max-pooled over blocks of k × k tokens.
        """
        index = self._index(index)
        if layer is not None and head is not None:
            return self._head_figure(index, self._layer(layer), self._head(head))
        layers = [self._layer(layer)] if layer is not None else list(range(self.num_layers))
        heads = [self._head(head)] if head is not None else list(range(self.num_heads))
        return self._grid_figure(index, layers, heads, grid_max)

    def _head_trace(self, index: int, layer: int, head: int, visible: bool = True):
        import plotly.graph_objects as go

        tokens = self.tokens[index]
        labels = [f"{t} ({i})" for i, t in enumerate(tokens)]   # unique: plotly merges equal category names
        z = self._attentions[index][layer, head].numpy()      # (n, n)
        return go.Heatmap(z=z, x=labels, y=labels, colorscale="Blues", zmin=0.0, zmax=float(z.max()),
                          visible=visible, colorbar=dict(title="weight"), name=f"layer {layer}, head {head}",
                          hovertemplate="%{y} → %{x}<br>weight %{z:.4f}<extra></extra>")

    def _title(self, index: int, layer: int, head: int) -> str:
        return f"{self._example_name(index)} · layer {layer}, head {head}: where each token looks"

    def _example_name(self, index: int) -> str:
        name = f"example {index} ({self.lengths[index]} tokens"
        return name + (f", truncated to max_length {self.max_length})" if self.truncated[index] else ")")

    def _head_layout(self, index: int) -> dict:
        tokens, n = self.tokens[index], self.lengths[index]
        labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
        if n <= TOKEN_TICKS_MAX:
            x_ticks = y_ticks = dict(tickmode="array", tickvals=labels, ticktext=tokens)
            x_title, y_title = "attends to (key)", "token (query)"
        else:
            x_ticks = y_ticks = _position_ticks(labels, n)
            x_title, y_title = "attends to (key position; hover for tokens)", "token (query position)"
        side = min(820, max(320, 18 * n))                     # plot area in px; cells square
        b = self.sentence_b_starts[index]
        line = dict(color="gray", width=1, dash="dot")
        shapes = [] if b is None else [                       # the boundary between sentence A and sentence B
            dict(type="line", x0=b - 0.5, x1=b - 0.5, y0=-0.5, y1=n - 0.5, line=line),
            dict(type="line", y0=b - 0.5, y1=b - 0.5, x0=-0.5, x1=n - 0.5, line=line)]
        return dict(
            shapes=shapes, template="plotly_white", font=dict(size=12), margin=dict(l=110, r=40, t=70, b=110),
            width=side + 150 + 60, height=side + 180,
            xaxis=dict(title=x_title, tickangle=-90 if n <= TOKEN_TICKS_MAX else 0, **x_ticks),
            yaxis=dict(title=y_title, autorange="reversed", scaleanchor="x", **y_ticks),
        )

    def _head_figure(self, index: int, layer: int, head: int):
        import plotly.graph_objects as go

        fig = go.Figure(self._head_trace(index, layer, head))
        fig.update_layout(title=self._title(index, layer, head), **self._head_layout(index))
        return fig

    def _grid_figure(self, index: int, layers: list[int], heads: list[int], grid_max: int):
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        if isinstance(grid_max, bool) or not isinstance(grid_max, int) or grid_max < 1:
            raise ValueError(f"grid_max must be a positive int, got {grid_max!r}")
        tokens, n = self.tokens[index], self.lengths[index]
        k = math.ceil(n / grid_max)                           # block size; 1 = every token its own cell
        attn = self._attentions[index][layers][:, heads]      # (rows, cols, n, n)
        if k > 1:
            # max, not mean: a head that puts all its weight on one token in a block still shows
            attn = F.max_pool2d(attn, kernel_size=k, stride=k, ceil_mode=True)
            labels = [f"tokens {i}–{min(i + k, n) - 1}" for i in range(0, n, k)]
            hover = "%{y} → %{x}<br>max weight %{z:.4f}<extra>layer %{meta[0]}, head %{meta[1]}</extra>"
        else:
            labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
            hover = "%{y} → %{x}<br>weight %{z:.4f}<extra>layer %{meta[0]}, head %{meta[1]}</extra>"
        rows, cols = len(layers), len(heads)
        fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.02 / max(1, cols / 4),
                            vertical_spacing=0.02 / max(1, rows / 4),
                            row_titles=[f"layer {l}" for l in layers], column_titles=[f"head {h}" for h in heads])
        for r, l in enumerate(layers):
            for c, h in enumerate(heads):
                fig.add_trace(go.Heatmap(z=attn[r, c].numpy(), x=labels, y=labels, coloraxis="coloraxis",
                                         meta=[l, h], hovertemplate=hover), row=r + 1, col=c + 1)
        cell = max(40, min(110, 1000 // cols))
        pooled = f"; each cell the max over {k} × {k} tokens" if k > 1 else ""
        fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="")
        fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, ticks="", autorange="reversed")
        fig.update_annotations(font_size=11)
        fig.update_layout(
            template="plotly_white", font=dict(size=12), margin=dict(l=30, r=90, t=90, b=30),
            width=cols * cell + 160, height=rows * cell + 130,
            coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=float(attn.max()), colorbar=dict(title="weight")),
            title=dict(text=f"{self._example_name(index)}: attention of every head (row: query, column: key)"
                            + pooled, font_size=13),
        )
        return fig

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return self.figure(0)._repr_mimebundle_(include, exclude, **kwargs)

    # -- files --------------------------------------------------------------------------------------------

    def html_figure(self, index: int = 0, layers=None, heads=None):
        """The figure `to_html` writes: one head at a time, a layer menu and a head slider, all in the page."""
        import plotly.graph_objects as go

        index = self._index(index)
        layers = _check_indices(layers, self.num_layers, "layer", "layers") or list(range(self.num_layers))
        heads = _check_indices(heads, self.num_heads, "head", "heads per layer") or list(range(self.num_heads))
        nh, count = len(heads), len(layers) * len(heads)

        def visible(li: int, hi: int) -> list[bool]:
            return [i == li * nh + hi for i in range(count)]

        fig = go.Figure([self._head_trace(index, l, h, visible=(li == 0 and hi == 0))
                         for li, l in enumerate(layers) for hi, h in enumerate(heads)])
        # one head slider per layer, only the chosen layer's shown: a pure-plotly way to pick (layer, head)
        sliders = [dict(
            active=0, visible=li == 0, x=0.0, len=1.0, y=-0.02, yanchor="top", pad=dict(t=60),
            currentvalue=dict(prefix=f"layer {l}, head "),
            steps=[dict(label=str(h), method="update",
                        args=[{"visible": visible(li, hi)}, {"title.text": self._title(index, l, h)}])
                   for hi, h in enumerate(heads)],
        ) for li, l in enumerate(layers)]
        buttons = [dict(label=f"layer {l}", method="update",
                        args=[{"visible": visible(li, 0)},
                              {"title.text": self._title(index, l, heads[0]), f"sliders[{li}].active": 0,
                               **{f"sliders[{k}].visible": k == li for k in range(len(layers))}}])
                   for li, l in enumerate(layers)]
        layout = self._head_layout(index)
        layout["margin"] = dict(l=110, r=40, t=110, b=200)
        layout["height"] += 90
        fig.update_layout(title=self._title(index, layers[0], heads[0]), sliders=sliders,
                          updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right",
                                            y=1.0, yanchor="bottom", pad=dict(b=12), showactive=True)],
                          **layout)
        return fig

    def to_html(self, path, index: int = 0, layers=None, heads=None) -> Path:
        """Write example `index` as a standalone HTML page: plotly.js inlined, so it opens with no network.

        Every head's full heatmap is in the file (a 300-token input with 72 heads is ~30 MB); `layers` and
        `heads` keep only some.
        """
        fig = self.html_figure(index, layers, heads)
        path = Path(path)
        fig.write_html(path, include_plotlyjs=True, include_mathjax=False, full_html=True,
                       config={"displaylogo": False, "responsive": True})
        return path

    def to_png(self, path, index: int = 0, layer: int | None = None, head: int | None = None,
               scale: float = 1.0) -> Path:
        """Write `figure(index, layer, head)` as a PNG with kaleido, which drives a local Chrome/Chromium.

        MathJax is off, so the page kaleido renders loads only the plotly.js inside the plotly package.
        """
        import kaleido
        from kaleido.errors import ChromeNotFoundError

        fig = self.figure(index, layer, head)
        try:
            png = kaleido.calc_fig_sync(
                fig, opts=dict(format="png", width=fig.layout.width, height=fig.layout.height, scale=scale),
                kopts={"mathjax": False})
        except ChromeNotFoundError as err:
            raise RuntimeError("PNG export needs Chrome or Chromium: install it (Debian: apt install chromium) "
                               "or point BROWSER_PATH at one; bertlab never downloads a browser") from err
        path = Path(path)
        path.write_bytes(png)
        return path

    # -- checks -------------------------------------------------------------------------------------------

    def _index(self, index) -> int:
        return _check_index(index, len(self), "example", "examples")

    def _layer(self, layer) -> int:
        return _check_index(layer, self.num_layers, "layer", "layers")

    def _head(self, head) -> int:
        return _check_index(head, self.num_heads, "head", "heads per layer")
