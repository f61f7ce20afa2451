"""The encoder layer: self-attention → add & norm → feed-forward (GELU) → add & norm, stacked L times."""

from __future__ import annotations

import torch
from torch import nn

from ..config import HIDDEN_ACTS, BertConfig
from ..hooks import HookPoint
from .attention import AddAndNorm, BertAttention


class BertIntermediate(nn.Module):
    """The first half of the feed-forward block: H → 4H, then GELU."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = HIDDEN_ACTS[config.hidden_act]  # exact GELU in BERT; config.py lists the others
        self.hook_mlp_act = HookPoint()  # (B, T, 4H) after GELU

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_mlp_act(self.act(self.dense(x)))


class BertFeedForwardOutput(AddAndNorm):
    """The second half: 4H → H, then add & norm. (HuggingFace's `BertOutput`: bertlab keeps that name for
    what the model returns; the checkpoint's attribute name `output` stays.)"""

    def __init__(self, config: BertConfig):
        super().__init__(config, config.intermediate_size, "hook_mlp_out")


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertFeedForwardOutput(config)
        self.hook_resid_mid = HookPoint()   # (B, T, H) after attention's add & norm
        self.hook_resid_post = HookPoint()  # (B, T, H) the layer's output

    def forward(self, resid_pre: torch.Tensor, mask: torch.Tensor | None, output_attentions: bool = False):
        resid_mid, pattern = self.attention(resid_pre, mask, output_attentions)
        resid_mid = self.hook_resid_mid(resid_mid)
        resid_post = self.hook_resid_post(self.output(self.intermediate(resid_mid), resid_mid))
        return resid_post, pattern


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, x, mask, output_attentions=False, output_hidden_states=False):
        """Returns (last (B, T, H), the L + 1 hidden states or None, the L attention patterns or None)."""
        hidden_states = (x,) if output_hidden_states else None
        attentions = () if output_attentions else None
        for layer in self.layer:
            x, pattern = layer(x, mask, output_attentions)
            if output_hidden_states:
                hidden_states += (x,)
            if output_attentions:
                attentions += (pattern,)
        return x, hidden_states, attentions
