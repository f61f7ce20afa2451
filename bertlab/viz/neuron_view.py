"""bertviz's neuron view, offline, for any bertlab model: why a head attends where it does.

The head view shows *that* token i attends to token j. The neuron view (Vig 2019, "A Multiscale
Visualization of Attention in the Transformer Model") shows *why*: hover a token on the left and it draws
that token's query vector q, every key vector k, their elementwise product q × k (one coloured cell per
dimension: blue positive, orange negative), the scaled dot product q·k / √Dh, and the softmax of those,
which is exactly the attention weight. A few dimensions that carry the whole dot product are the head's
"detector" (for [SEP], for the previous token, ...).

bertviz's own `neuron_view.show` reaches q and k through copies of HuggingFace's model classes that it
ships; bertlab's hook points (`hook_q`, `hook_k`, `hook_pattern`) give them for any bertlab model, so here
the model runs once with `run_with_cache` and the numbers go straight into bertviz's `neuron_view.js`.
That script loads d3 and jQuery from a CDN through require.js; as for the head view, bertlab inlines its
own copies of both behind a local `require` shim (bertlab.viz.bertviz_views), so the view draws with no network.

    neuron_view(model, tokenizer, "The cat sat on the mat.", layer=2, head=0)      # last line of a cell: shown
    html = neuron_view_html(model, tokenizer, "The cat sat.", layer=2, head=0)     # the same, as a string
"""

from __future__ import annotations

import json
import re
import uuid
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import torch

from ..probe import base_model, inference
from ..probe.running import check_pair, layer_and_head
from .bertviz_views import REQUIRE_SHIM, bertviz, offline_scripts

if TYPE_CHECKING:
    from IPython.display import HTML

__all__ = ["neuron_view", "neuron_view_html", "neuron_view_data", "NEURON_VIEW_MAX_TOKENS"]

# The view draws a row of Dh cells per token for q, k and q × k: past ~60 tokens it is taller than a screen.
NEURON_VIEW_MAX_TOKENS = 96
# Rounding of what goes into the page: attention weights to 6 decimals (error ≤ 5e-7, as the head view),
# queries and keys to 4 (their cells are coloured by tanh(|x| / 4); the dot products shift by < 1e-3).
WEIGHT_DECIMALS = 6
VECTOR_DECIMALS = 4


@lru_cache(maxsize=1)
def _neuron_js() -> str:
    """bertviz's neuron_view.js, made to read its data from a local `params` and to fetch nothing."""
    js = (resources.files(bertviz()) / "neuron_view.js").read_text(encoding="utf-8")
    js, n_config = re.subn(r"require\.config\(\{.*?\}\);", "", js, count=1, flags=re.S)   # the CDN paths
    # bertviz passes the data through a page-wide global (two views on one page would share it); a local
    # `params`, defined just before this script, keeps each view's data its own
    js, n_params = re.subn(r"const params = window\.bertviz_params;?", "", js, count=1)
    if n_config != 1 or n_params != 1:
        raise RuntimeError("bertviz's neuron_view.js has an unexpected shape: this bertviz version is not supported")
    # the header comment cites its source by URL: keep the words, drop the scheme
    js = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"https?://", "", m.group()), js, count=1, flags=re.S)
    found = re.search(r"https?://\S*|//cdn\S*", js)
    if found:
        raise RuntimeError(f"bertviz's neuron_view.js refers to {found.group()}, which bertlab does not ship: "
                           "this bertviz version is not supported offline")
    return js


def _check(model, tokenizer, text, text_pair, layer, head, max_tokens):
    bert = base_model(model)
    check_pair(model, tokenizer)
    layer, head = layer_and_head(model, layer, head)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str (the sentence to look at), got {text!r}")
    if text_pair is not None and (not isinstance(text_pair, str) or not text_pair.strip()):
        raise ValueError(f"text_pair must be a non-empty str, or None for one sentence, got {text_pair!r}")
    enc = tokenizer(text, text_pair)
    T = len(enc.input_ids)
    if T > bert.config.max_position_embeddings:
        raise ValueError(f"{T} tokens is more than the model's {bert.config.max_position_embeddings} positions: "
                         "shorten the text")
    if max_tokens is not None and T > max_tokens:
        raise ValueError(f"{T} tokens is too many for the neuron view, which draws Dh cells per token three "
                         f"times over: shorten the text to at most {max_tokens} tokens (or pass max_tokens=None)")
    return bert, enc, layer, head


def neuron_view_data(model, tokenizer, text: str, text_pair: str | None = None) -> dict:
    """The structure neuron_view.js draws, as bertviz's `get_attention(..., include_queries_and_keys=True)`
    documents it: {"all": {left_text, right_text, attn, queries, keys}} (and "aa", "ab", "ba", "bb" for a
    pair), where attn[l][h] is (T, T) and queries[l][h], keys[l][h] are (T, Dh), from one forward pass.
    """
    bert, enc, _, _ = _check(model, tokenizer, text, text_pair, 0, 0, None)
    L = bert.config.num_hidden_layers
    names = [f"encoder.layer.{l}.attention.self.hook_{p}" for l in range(L) for p in ("q", "k", "pattern")]
    device = next(bert.parameters()).device
    with inference(model):
        _, cache = bert.run_with_cache(**{k: v.to(device) for k, v in enc.to_tensors().items()}, names=names)

    def stack(part: str, decimals: int) -> torch.Tensor:         # (L, heads, T, ·), float64 rounded
        per_layer = [cache[f"encoder.layer.{l}.attention.self.hook_{part}"][0] for l in range(L)]
        return torch.round(torch.stack(per_layer).double().cpu(), decimals=decimals)

    q, k, attn = stack("q", VECTOR_DECIMALS), stack("k", VECTOR_DECIMALS), stack("pattern", WEIGHT_DECIMALS)
    tokens = list(enc.tokens)
    data = {"all": dict(left_text=tokens, right_text=tokens, attn=attn.tolist(), queries=q.tolist(),
                        keys=k.tolist())}
    if text_pair is not None:
        b = enc.token_type_ids.index(1)
        spans = {"a": slice(0, b), "b": slice(b, len(tokens))}
        for src in "ab":
            for dst in "ab":
                s, d = spans[src], spans[dst]
                data[src + dst] = dict(left_text=tokens[s], right_text=tokens[d], attn=attn[:, :, s, d].tolist(),
                                       queries=q[:, :, s].tolist(), keys=k[:, :, d].tolist())
    return data


def neuron_view_html(model, tokenizer, text: str, layer: int = 0, head: int = 0, text_pair: str | None = None,
                     display_mode: str = "dark", max_tokens: int | None = NEURON_VIEW_MAX_TOKENS) -> str:
    """The neuron view of `model` on `text` (and `text_pair`) as self-contained HTML: a <div> and one <script>.

    It opens at `layer`, `head` (menus in the page switch to any other; every layer's q and k are in the
    page). Hover a token on the left to see its computation; click it to keep it. `display_mode`: "dark"
    or "light". More than `max_tokens` tokens is a ValueError.
    """
    if display_mode not in ("dark", "light"):
        raise ValueError(f"display_mode must be 'dark' or 'light', got {display_mode!r}")
    _, _, layer, head = _check(model, tokenizer, text, text_pair, layer, head, max_tokens)
    root = f"bertviz-{uuid.uuid4().hex}"
    pair_menu = "" if text_pair is None else (
        '<span class="dropdown-label">Attention: </span><select id="filter">'
        '<option value="all">All</option><option value="aa">Sentence A -> Sentence A</option>'
        '<option value="ab">Sentence A -> Sentence B</option><option value="ba">Sentence B -> Sentence A</option>'
        '<option value="bb">Sentence B -> Sentence B</option></select>')
    div = (f'<div id="{root}" style="padding:8px;font-family:\'Helvetica Neue\', Helvetica, Arial, sans-serif;">'
           '<span style="user-select:none"><span class="dropdown-label">Layer: </span><select id="layer"></select> '
           '<span class="dropdown-label">Head: </span><select id="att_head"></select> '
           f"{pair_menu}</span><div id='vis'></div></div>")
    params = dict(attention=neuron_view_data(model, tokenizer, text, text_pair), default_filter="all", root_div_id=root,
                  bidirectional=not getattr(base_model(model).config, "is_decoder", False), display_mode=display_mode,
                  layer=layer, head=head)
    # escape <, >, & so that a token such as "</script>" stays data
    data = json.dumps(params).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    script = ("(function () {\n" + offline_scripts() + REQUIRE_SHIM % {"root": json.dumps(root)}
              + "const params = " + data + ";\n" + _neuron_js() + "\n})();")
    return div + '\n<script type="text/javascript">\n' + script + "\n</script>\n"


def neuron_view(model, tokenizer, text: str, layer: int = 0, head: int = 0, text_pair: str | None = None,
                display_mode: str = "dark", max_tokens: int | None = NEURON_VIEW_MAX_TOKENS) -> HTML:
    """bertviz's neuron view of head `head` in layer `layer`, offline: an `IPython.display.HTML` (its `.data`
    is the HTML). Hover a token on the left: q, k, q × k per dimension, q·k / √Dh and the softmax appear.
    """
    from IPython.display import HTML

    return HTML(neuron_view_html(model, tokenizer, text, layer, head, text_pair, display_mode, max_tokens))
