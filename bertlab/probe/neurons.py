"""Inside one attention head: the query and key vectors behind its weights (bertviz's neuron view, as data).

    n = attention_neurons(model, tokenizer, "The cat sat on the mat.", layer=2, head=0)
    n.queries[3] * n.keys          # (T, Dh): q × k, dimension by dimension, for the query "sat"
    n.dots[3], n.weights[3]        # (T,): q·k for every key, and the softmax of q·k / √Dh

Attention weights are the *result* of a simple computation: token i's query vector dotted with every key
vector, scaled by 1/√Dh (so the dot products of long vectors do not saturate the softmax), softmaxed. Seeing
q × k per dimension shows *why* a head attends where it does: a few dimensions often carry the whole dot
product (the positional or [SEP]-detecting parts of a head). Vig (2019), "A Multiscale Visualization of
Attention in the Transformer Model", draws this as bertviz's neuron view; bertviz needs its own copies of
the model classes to reach q and k, while bertlab's hook points give them for any bertlab model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..hooks import act_name
from ..model.bert import Bert
from .running import base_model, check_pair, inference, layer_and_head


@dataclass
class AttentionNeurons:
    """One head's queries, keys, dot products and weights for one text.

    `queries`, `keys`: (T, Dh); `dots[i, j] = queries[i] · keys[j]`; `scores = dots / √Dh` plus the mask
    (padding, or the causal mask of an `is_decoder` model: -inf-like where a token may not look);
    `weights = softmax(scores)` row by row, exactly the model's attention pattern for this head.
    """
    tokens: list[str]
    layer: int
    head: int
    queries: torch.Tensor
    keys: torch.Tensor
    dots: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor

    def products(self, query: int) -> torch.Tensor:
        """q × k elementwise for one query token: (T, Dh), row j sums to `dots[query, j]`."""
        return self.queries[query] * self.keys


def attention_neurons(model, tokenizer, text: str, layer: int, head: int, text_pair: str | None = None
                      ) -> AttentionNeurons:
    """The query/key view of head `head` in layer `layer` (0-based; negative counts from the end) for `text`."""
    bert: Bert = base_model(model)
    check_pair(model, tokenizer)
    layer, head = layer_and_head(model, layer, head)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str, got {text!r}")
    if text_pair is not None and (not isinstance(text_pair, str) or not text_pair.strip()):
        raise ValueError(f"text_pair must be a non-empty str or None, got {text_pair!r}")
    enc = tokenizer(text, text_pair)
    if len(enc.input_ids) > bert.config.max_position_embeddings:
        raise ValueError(f"{len(enc.input_ids)} tokens is more than the model's {bert.config.max_position_embeddings} "
                         "positions: shorten the text")
    names = [act_name(h, layer) for h in ("q", "k", "scores", "pattern")]
    device = next(bert.parameters()).device
    with inference(model):
        _, cache = bert.run_with_cache(**{k: v.to(device) for k, v in enc.to_tensors().items()}, names=names)
    q, k, scores, weights = (cache[n][0, head].float().cpu() for n in names)   # (T, Dh), (T, Dh), (T, T), (T, T)
    return AttentionNeurons(list(enc.tokens), layer, head, q, k, q @ k.T, scores, weights)
