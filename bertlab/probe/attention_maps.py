"""Attention as a reader wants to see it: one head, a layer's heads combined, or all of them; per word.

    text = "The playwright wrote it."
    attention_map(model, tokenizer, text, layer=3, head="all", reduce="mean")   # layer 3, its heads averaged
    attention_map(model, tokenizer, text, layer="all", head="all", words=True)  # everything, one row per word
    attention_map(model, tokenizer, text, hide_special=True, threshold=0.1)     # exBERT's two switches
    AttentionMap.from_output(out, enc.tokens, layer=3)   # an output already computed (output_attentions=True)

A head's attention is over WordPieces: "playwright" may be `play ##wright`, two rows and two columns.
People ask for words (bertviz #23). Merging takes one rule per axis, and the rule is what keeps each row a
probability distribution:

- **keys are summed**: the attention a word *receives* is what all its pieces receive, so
  "query → playwright" = "query → play" + "query → ##wright";
- **queries are averaged**: where a word *looks* is the mean of where its pieces look, so the word's row
  still sums to 1.

(Clark et al. 2019 use the same rule to compare heads with word-level syntax.) Combining heads or layers
by the mean keeps rows summing to 1; by the sum, row sums become the number of heads combined: a sum shows
where attention piles up, a mean what a typical head does. Hiding [CLS] / [SEP] drops their rows and
columns *without* renormalising: what is left is exactly the weight the heads gave to words, and the
missing mass (often most of it: many heads park on [SEP]) is itself the lesson. A threshold blanks weights
below it, to leave only the strong links (exBERT's slider).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..inputs import check_tokens
from .running import text_attention

__all__ = ["AttentionMap", "attention_map", "word_groups", "merge_word_pieces", "SPECIAL_TOKENS"]

SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]", "[PAD]"})
REDUCE = ("mean", "sum")


@dataclass
class AttentionMap:
    """What a heatmap of attention shows: `weights[i, j]` is how much row i (a query) attends to column j.

    `tokens` label rows and columns (words when merged), `groups[i]` are the token positions row i stands
    for, `title` says which heads were combined and how (a figure's title).
    """
    tokens: list[str]
    weights: torch.Tensor           # (T', T') float32 on the CPU, T' ≤ T
    groups: list[list[int]]
    title: str

    @classmethod
    def from_output(cls, out, tokens: Sequence[str], *, layer=0, head=0, reduce: str = "mean", words: bool = False,
                    hide_special: bool = False, threshold: float = 0.0, batch_index: int = 0) -> "AttentionMap":
        """The map of attention already computed: `out` a model output run with `output_attentions=True` (or
        its `.attentions`: L tensors (B, heads, T, T)), `tokens` the tokens of row `batch_index`. The options
        are `attention_map`'s."""
        return _from_attentions(out, tokens, layer, head, reduce, words, hide_special, threshold, batch_index)


def word_groups(tokens: Sequence[str]) -> list[list[int]]:
    """Token positions grouped into words: a WordPiece that starts with `##` joins the word before it.

    Special tokens are words of their own. `["[CLS]", "play", "##wright", "[SEP]"]` → `[[0], [1, 2], [3]]`.
    """
    groups: list[list[int]] = []
    for i, t in enumerate(tokens):
        if t.startswith("##") and groups and tokens[groups[-1][-1]] not in SPECIAL_TOKENS:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def merge_word_pieces(weights: torch.Tensor, tokens: Sequence[str]) -> tuple[list[str], torch.Tensor]:
    """(words, weights over words): keys summed, queries averaged, so every row still sums to what it did.

    `weights` is (..., T, T) over the T `tokens`; the answer is (..., W, W) over W words, each word spelled
    out from its pieces ("play" + "##wright" → "playwright").
    """
    T = weights.shape[-1]
    if weights.shape[-2] != T or len(tokens) != T:
        raise ValueError(f"weights must be (..., T, T) over the {len(tokens)} tokens, got {tuple(weights.shape)}")
    groups = word_groups(tokens)
    words = [tokens[g[0]] + "".join(tokens[i][2:] for i in g[1:]) for g in groups]
    member = torch.zeros(T, len(groups), dtype=weights.dtype, device=weights.device)   # (T, W) one-hot
    for w, g in enumerate(groups):
        member[g, w] = 1.0
    keys_summed = weights @ member                                           # (..., T, W)
    queries_averaged = (member / member.sum(0)).transpose(0, 1) @ keys_summed   # (..., W, W)
    return words, queries_averaged


def _select(n: int, which, what: str) -> list[int]:
    """`which` (an int, a list of ints or "all") as a list of indices into n layers or heads."""
    if isinstance(which, str) and which == "all":
        return list(range(n))
    items = [which] if isinstance(which, int) and not isinstance(which, bool) else which
    if isinstance(items, str) or not isinstance(items, Sequence) or not items:
        raise ValueError(f"{what} must be an index, a list of indices or 'all', got {which!r}")
    for i in items:
        if isinstance(i, bool) or not isinstance(i, int) or not -n <= i < n:
            raise ValueError(f"{what} {i!r} does not exist: there are {n} {what}s (0 … {n - 1})")
    return sorted({i % n for i in items})


def _describe(chosen: list[int], n: int, what: str) -> str:
    if len(chosen) == 1:
        return f"{what} {chosen[0]}"
    if len(chosen) == n:
        return f"all {n} {what}s"
    return f"{what}s {', '.join(map(str, chosen))}"


def attention_map(model, tokenizer, text: str | None = None, *, layer=0, head=0, reduce: str = "mean", words: bool = False,
                  hide_special: bool = False, threshold: float = 0.0, text_pair: str | None = None) -> AttentionMap:
    """What a heatmap of attention shows for one text: one head, a layer's heads combined, or all; per word if asked.

    Like every probe, `attention_map(model, tokenizer, text, text_pair=None, ...)` runs the model on the
    text; for attention already computed, `AttentionMap.from_output(out, tokens, ...)` takes the same
    options. `layer` and `head` are an index, a list of them or "all", combined by
    `reduce` ("mean" or "sum") when there is more than one. Then, in this order: pieces merged into words
    (`words=True`), [CLS] / [SEP] / [PAD] rows and columns dropped (`hide_special=True`), and weights below
    `threshold` set to 0.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"attention_map runs a model: pass (model, tokenizer, text), not a {type(model).__name__}; "
                        "for attention already computed, use AttentionMap.from_output(out, tokens, ...)")
    out = text_attention(model, tokenizer, text, text_pair)
    return _from_attentions(out, out.tokens, layer, head, reduce, words, hide_special, threshold, 0)


def _from_attentions(out, tokens, layer, head, reduce, words, hide_special, threshold, batch_index) -> AttentionMap:
    attentions = getattr(out, "attentions", out)
    if attentions is None and hasattr(out, "bert"):          # bertlab's heads keep the encoder's output at .bert
        attentions = out.bert.attentions
    if not isinstance(attentions, (tuple, list)) or not attentions or not all(
            isinstance(a, torch.Tensor) and a.dim() == 4 for a in attentions):
        raise ValueError("attentions must be a model output run with output_attentions=True (or its .attentions: "
                         "one (B, heads, T, T) tensor per layer); or call attention_map(model, tokenizer, text)")
    if reduce not in REDUCE:
        raise ValueError(f"reduce must be one of {REDUCE}, got {reduce!r}")
    if (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold)
            or threshold < 0):   # nan compares false with everything: it would pass `< 0` and blank nothing
        raise ValueError(f"threshold must be a number ≥ 0, and finite (weights below it are blanked), got "
                         f"{threshold!r}")
    L, (B, H, T, _) = len(attentions), attentions[0].shape
    if isinstance(batch_index, bool) or not isinstance(batch_index, int) or not -B <= batch_index < B:
        raise ValueError(f"batch_index {batch_index!r} does not exist: the batch has {B} rows")
    tokens = check_tokens(tokens, T, "an attention map")
    layers, heads = _select(L, layer, "layer"), _select(H, head, "head")

    n = len(tokens)
    stack = torch.stack([attentions[l][batch_index, heads, :n, :n].detach().float().cpu() for l in layers])
    weights = stack.mean((0, 1)) if reduce == "mean" else stack.sum((0, 1))          # (n, n)
    combined = len(layers) * len(heads) > 1
    title = f"{_describe(layers, L, 'layer')}, {_describe(heads, H, 'head')}" + (f" ({reduce})" if combined else "")

    groups = [[i] for i in range(n)]
    if words:
        groups = word_groups(tokens)
        tokens, weights = merge_word_pieces(weights, tokens)
        title += ", per word"
    if hide_special:
        keep = [i for i, t in enumerate(tokens) if t not in SPECIAL_TOKENS]
        if not keep:
            raise ValueError("hiding [CLS] and [SEP] leaves nothing to show: type a sentence")
        tokens, groups = [tokens[i] for i in keep], [groups[i] for i in keep]
        weights = weights[keep][:, keep]
        title += ", [CLS]/[SEP] hidden"
    if threshold > 0:
        weights = torch.where(weights >= threshold, weights, torch.zeros(()))
        title += f", weights ≥ {threshold:g}"
    return AttentionMap(tokens, weights, groups, title)
