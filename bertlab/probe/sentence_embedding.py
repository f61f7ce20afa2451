"""One vector per text: the [CLS] state or the mean of the tokens' states, at any layer.

    sentence_embedding(model, tokenizer, texts, pooling="mean")            # (n, H)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._checks import check_texts, layer_index, pick_layer
from .running import base_model, inference, max_length

__all__ = ["sentence_embedding"]


def sentence_embedding(model, tokenizer, texts: Sequence[str], layer=-1, pooling: str = "cls") -> torch.Tensor:
    """One vector per text: (n, H), or (n, L + 1, H) with `layer="all"`.

    `pooling="mean"` averages every real token of that layer (padding excluded, [CLS] and [SEP] included),
    which is how sentence-transformers pools MiniLM, so at the last layer it is all-MiniLM-L6-v2's
    embedding before its L2 normalisation. `pooling="cls"` takes the [CLS] token's hidden state at that
    layer. Note: at the last layer that is not `pooler_output`, which is tanh(W · h[CLS] + b), the
    NSP-trained summary that sequence classification uses.
    """
    texts = check_texts(texts, "texts")
    if pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    bert = base_model(model)
    index = layer_index(layer, bert.config.num_hidden_layers)
    batch = tokenizer.batch(texts, max_length=max_length(model, tokenizer))
    with inference(model):
        out = bert(**batch, output_hidden_states=True)
    states = pick_layer(out.hidden_states, index, dim=1).float().cpu()  # (B, T, H) or (B, L + 1, T, H)
    if pooling == "cls":
        return states[..., 0, :]
    mask = batch.attention_mask.float()                                # (B, T): 1 for real tokens
    mask = mask[:, :, None] if index is not None else mask[:, None, :, None]
    return (states * mask).sum(dim=-2) / mask.sum(dim=-2)
