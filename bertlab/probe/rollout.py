"""Attention rollout: attention multiplied through the layers, a rough map of where information flows.

    attention_rollout(model, tokenizer, "The river bank was muddy.")       # (1, T, T), like every probe
    attention_rollout(model(**enc, output_attentions=True))                 # (B, T, T), from an output
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..model.bert import BertOutput
from .running import text_attention

__all__ = ["attention_rollout"]


def attention_rollout(model, tokenizer=None, text: str | None = None, *, add_residual: bool = True,
                      head_fusion: str = "mean", text_pair: str | None = None) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): how much each output position draws on each input token.

    Per layer the heads are fused (mean, or max/min), the residual connection is added as 0.5·A + 0.5·I
    (half of what a token carries forward is itself), rows are renormalised, and the layers are multiplied
    from the bottom up: R = Â_L ⋯ Â_2 Â_1. Row i of the (B, T, T) result sums to 1. It ignores the values
    and the feed-forward blocks, so read it as a rough map of information flow, not an attribution.

    Like every probe, `attention_rollout(model, tokenizer, text, text_pair=None)` runs the model on the
    text. For attention already computed, pass it alone: `BertOutput.attentions` (L tensors of
    (B, heads, T, T), from `output_attentions=True`), a stacked (L, B, heads, T, T) tensor, or a
    `BertOutput` (or a head's output holding one).
    """
    if isinstance(model, torch.nn.Module):
        attentions = text_attention(model, tokenizer, text, text_pair).attentions
    else:
        attentions = model
        if tokenizer is not None or text is not None or text_pair is not None:
            raise ValueError("a tokenizer and text go with a model: attention_rollout(model, tokenizer, text); "
                             "attention already computed is passed alone")
    if isinstance(getattr(attentions, "bert", None), BertOutput):      # a head's output
        attentions = attentions.bert
    if isinstance(attentions, BertOutput):
        attentions = attentions.attentions
        if attentions is None:
            raise ValueError("this BertOutput has no attentions: run the model with output_attentions=True")
    if isinstance(attentions, torch.Tensor):
        if attentions.dim() != 5:
            raise ValueError(f"a stacked attentions tensor must be (L, B, heads, T, T), got {tuple(attentions.shape)}"
                             + (": for one layer pass [attention]" if attentions.dim() == 4 else ""))
        attentions = list(attentions.unbind(0))
    if not isinstance(attentions, Sequence) or len(attentions) == 0:
        raise ValueError("attentions must be a non-empty list of (B, heads, T, T) tensors, one per layer: "
                         "run the model with output_attentions=True and pass out.attentions")
    fuse = {"mean": lambda a: a.mean(dim=1), "max": lambda a: a.amax(dim=1), "min": lambda a: a.amin(dim=1)}
    if head_fusion not in fuse:
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}")
    shape = None
    rollout = None
    for l, a in enumerate(attentions):
        if not isinstance(a, torch.Tensor) or a.dim() != 4 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attentions[{l}] must be a (B, heads, T, T) tensor, got "
                             f"{tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__}")
        if shape is not None and a.shape != shape:
            raise ValueError(f"attentions[{l}] has shape {tuple(a.shape)} but attentions[0] has {tuple(shape)}: "
                             "pass the layers of one forward pass")
        shape = a.shape
        A = fuse[head_fusion](a.detach().float().cpu())               # (B, T, T)
        if add_residual:
            A = 0.5 * A + 0.5 * torch.eye(A.shape[-1])
        A = A / A.sum(dim=-1, keepdim=True)
        rollout = A if rollout is None else A @ rollout                # layer l reads what layers below produced
    return rollout
