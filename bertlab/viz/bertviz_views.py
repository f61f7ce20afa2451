"""bertviz's head and model views with nothing fetched: they work with no network.

bertviz draws attention well, but its views load require.js, d3 and jQuery from a CDN when they are shown.
With no network (a firewall, a train, an air-gapped cluster) the output is an empty "Layer" box and
"require is not defined". So bertlab asks bertviz for the view's HTML (`html_action="return"`), drops the
require.js tag and the CDN paths, and puts d3 5.7.0 and jQuery 2.2.4 (package data in `viz/static/`, with
their licenses) inside the view's one `<script>`, behind a local `require` shim: no request, no global.
The neuron view (neuron_view.py) reuses the same scripts and shim.

bertviz is optional (the notebooks extra): without it these views raise an ImportError that says how to
install it, and everything else in bertlab.viz still works. For long inputs use `AttentionView`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import torch

from .attention_view import AttentionView, check_texts
from .figures.look import check_index, check_indices

if TYPE_CHECKING:
    from IPython.display import HTML

__all__ = ["head_view", "model_view", "head_view_html", "model_view_html", "bertviz", "offline_scripts",
           "REQUIRE_SHIM", "BERTVIZ_MAX_TOKENS"]

# Past this many tokens head_view/model_view refuse and point to AttentionView (bertviz is unreadable well before).
BERTVIZ_MAX_TOKENS = 128
# Weights embedded in a bertviz view are rounded to this many decimals: 2-3x less HTML, error <= 5e-7.
DECIMALS = 6


def bertviz():
    """The bertviz package, or an ImportError that says how to get it (it is optional: the notebooks extra)."""
    try:
        import bertviz as package
    except ImportError as err:
        raise ImportError("bertviz is not installed, so its attention views cannot be drawn: pip install bertviz "
                          "(or pip install 'bertlab[notebooks]'); the plotly figures and AttentionView "
                          "work without it") from err
    return package


# ---------------------------------------------------------------------------------------------------------
# Running the model on one text

def _encode_one(model, tokenizer, text, text_pair, max_tokens, view: str):
    """Check one text (or pair) and its length, run the model: (attentions, tokens, sentence_b_start)."""
    check_texts(text, text_pair)
    T, limit = len(tokenizer(text, text_pair)), getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if limit is not None and T > limit:
        raise ValueError(f"{T} tokens is longer than the model's maximum of {limit} (max_position_embeddings): "
                         f"shorten the text, or use AttentionView(model, tokenizer, [text], max_length={limit}), "
                         "which truncates")
    if max_tokens is not None and T > max_tokens:
        raise ValueError(f"{T} tokens is too many for bertviz's {view}: it draws a row per token and a line per "
                         f"weight, hard to read past ~60 tokens and slow past {max_tokens}. Shorten the text, or "
                         "use AttentionView(model, tokenizer, [text]) (a heatmap per head, up to 512 tokens); "
                         "max_tokens=None forces the bertviz view")
    one = AttentionView(model, tokenizer, [text], None if text_pair is None else [text_pair])
    return list(one.attentions(0)), one.tokens[0], one.sentence_b_starts[0]     # L × (heads, T, T)


# ---------------------------------------------------------------------------------------------------------
# bertviz, offline

@lru_cache(maxsize=None)
def _static(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def offline_scripts() -> str:
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
REQUIRE_SHIM = """\
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
    script = ("(function () {\n" + offline_scripts() + REQUIRE_SHIM % {"root": json.dumps(params["root_div_id"])}
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


def _attention_source(fn: str, model, tokenizer, text, text_pair, attentions, tokens, sentence_b_start, max_tokens):
    """(attentions, tokens, sentence_b_start) from the *_view_html functions' one calling form: a model run on a
    text, `(model, tokenizer, text, text_pair=None)`, or attention already computed, by keyword."""
    if attentions is not None or tokens is not None:                # attentions=…, tokens=…
        if any(x is not None for x in (model, tokenizer, text, text_pair)):
            raise ValueError(f"{fn} takes either a model to run, {fn}(model, tokenizer, text), or attention already "
                             f"computed, {fn}(attentions=out, tokens=enc.tokens): not both")
        if attentions is None or tokens is None:
            raise ValueError(f"attention already computed needs both: {fn}(attentions=out, tokens=enc.tokens)")
        return attentions, tokens, sentence_b_start
    if not isinstance(model, torch.nn.Module):
        computed = hasattr(model, "attentions") or (isinstance(model, (Sequence, torch.Tensor))
                                                    and not isinstance(model, str))
        raise TypeError(f"{fn} runs a model: pass (model, tokenizer, text), not a {type(model).__name__}"
                        + (f"; for attention already computed, pass it by keyword: {fn}(attentions=out, "
                           "tokens=enc.tokens, sentence_b_start=…)" if computed else ""))
    if sentence_b_start is not None:
        raise ValueError("sentence_b_start is read off the encoding when the view runs the model: pass text_pair "
                         f"instead, or pass attention already computed by keyword: {fn}(attentions=out, "
                         "tokens=enc.tokens, sentence_b_start=…)")
    return _encode_one(model, tokenizer, text, text_pair, max_tokens, fn.removesuffix("_html"))


def head_view_html(model=None, tokenizer=None, text: str | None = None, text_pair: str | None = None, *,
                   attentions=None, tokens: Sequence[str] | None = None, sentence_b_start: int | None = None,
                   layer=None, heads=None, max_tokens: int | None = BERTVIZ_MAX_TOKENS) -> str:
    """bertviz's head view of one example as self-contained HTML (no network): a <div> and one <script>.

    Like `head_view` and every probe, `(model, tokenizer, text, text_pair=None)` runs the model on the text.
    For attention already computed, pass it by keyword instead: `attentions` the output of one example run
    with `output_attentions=True` (a BertOutput, a head's output, or their `.attentions`: L tensors of
    (1, heads, T, T)), `tokens` its tokens, `sentence_b_start` the index of the first sentence-B token of a
    pair. `layer`, `heads`: what the view shows at first.
    """
    attentions, tokens, sentence_b_start = _attention_source("head_view_html", model, tokenizer, text, text_pair,
                                                             attentions, tokens, sentence_b_start, max_tokens)
    layers = _as_layers(attentions)
    L, H, T = len(layers), layers[0].shape[1], layers[0].shape[-1]
    tokens = _check_tokens(tokens, T)
    layer = None if layer is None else check_index(layer, L, "layer", "layers")
    heads = check_indices(heads, H, "head", "heads per layer")
    view = bertviz().head_view(layers, tokens, sentence_b_start=_check_b_start(sentence_b_start, T),
                             layer=layer, heads=heads, html_action="return")
    return _offline(view.data, "head_view")


def model_view_html(model=None, tokenizer=None, text: str | None = None, text_pair: str | None = None, *,
                    attentions=None, tokens: Sequence[str] | None = None, sentence_b_start: int | None = None,
                    layers=None, heads=None, display_mode: str = "dark",
                    max_tokens: int | None = BERTVIZ_MAX_TOKENS) -> str:
    """bertviz's model view (every layer × head as a thumbnail) as self-contained HTML (no network).

    Called as `head_view_html` is: `(model, tokenizer, text, text_pair=None)` runs the model, and attention
    already computed comes by keyword (`attentions=out, tokens=enc.tokens, sentence_b_start=…`). `layers`,
    `heads`: show only these (fewer thumbnails draw faster). `display_mode`: "dark" or "light".
    """
    attentions, tokens, sentence_b_start = _attention_source("model_view_html", model, tokenizer, text, text_pair,
                                                             attentions, tokens, sentence_b_start, max_tokens)
    per_layer = _as_layers(attentions)
    L, H, T = len(per_layer), per_layer[0].shape[1], per_layer[0].shape[-1]
    tokens = _check_tokens(tokens, T)
    if display_mode not in ("dark", "light"):
        raise ValueError(f"display_mode must be 'dark' or 'light', got {display_mode!r}")
    view = bertviz().model_view(per_layer, tokens, sentence_b_start=_check_b_start(sentence_b_start, T),
                              display_mode=display_mode,
                              include_layers=check_indices(layers, L, "layer", "layers"),
                              include_heads=check_indices(heads, H, "head", "heads per layer"),
                              html_action="return")
    return _offline(view.data, "model_view")


def head_view(model, tokenizer, text: str, text_pair: str | None = None, layer: int | None = None, heads=None,
              max_tokens: int | None = BERTVIZ_MAX_TOKENS) -> HTML:
    """bertviz's head view of `model` on `text` (and `text_pair`), offline: an `IPython.display.HTML`.

    Lines join each token (left) to the tokens it attends to (right), one colour per head; hover a token,
    click or double-click a head's colour square. For a pair, a menu picks A→A, B→B, A→B or B→A.
    More than `max_tokens` tokens is a ValueError: use `AttentionView` for long inputs.
    """
    from IPython.display import HTML

    return HTML(head_view_html(model, tokenizer, text, text_pair, layer=layer, heads=heads, max_tokens=max_tokens))


def model_view(model, tokenizer, text: str, text_pair: str | None = None, layers=None, heads=None,
               display_mode: str = "dark", max_tokens: int | None = BERTVIZ_MAX_TOKENS) -> HTML:
    """bertviz's model view of `model` on `text` (and `text_pair`), offline: an `IPython.display.HTML`.

    A thumbnail per layer (row) and head (column); click one to enlarge it. `layers`, `heads` keep only those.
    """
    from IPython.display import HTML

    return HTML(model_view_html(model, tokenizer, text, text_pair, layers=layers, heads=heads,
                                display_mode=display_mode, max_tokens=max_tokens))
