"""The encoder layer: self-attention → add & norm → feed-forward (GELU) → add & norm, stacked L times."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import BertConfig
from .attention import BertAttention
from .hooks import HookPoint


def activation(name: str):
    """BERT's GELU is the exact x·Φ(x); the tanh approximation is what GPT-2 (and "gelu_new") use."""
    if name == "gelu":
        return F.gelu
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu
    raise ValueError(f"unknown hidden_act {name!r}")


class BertIntermediate(nn.Module):
    """The first half of the feed-forward block: H → 4H, then GELU."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = activation(config.hidden_act)
        self.hook_mlp_act = HookPoint()  # (B, T, 4H) after GELU

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_mlp_act(self.act(self.dense(x)))


class BertFeedForwardOutput(nn.Module):
    """The second half: 4H → H, dropout, then the residual add and LayerNorm.

    HuggingFace calls this class `BertOutput`; bertlab keeps that name for what the model returns. The
    attribute name (`output`) is what checkpoints use, and that is unchanged.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.hook_mlp_out = HookPoint()  # (B, T, H) what the feed-forward adds to the residual stream

    def forward(self, x: torch.Tensor, resid_mid: torch.Tensor) -> torch.Tensor:
        mlp_out = self.hook_mlp_out(self.dropout(self.dense(x)))
        return self.LayerNorm(mlp_out + resid_mid)


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertFeedForwardOutput(config)
        self.hook_resid_mid = HookPoint()   # (B, T, H) after attention's add & norm
        self.hook_resid_post = HookPoint()  # (B, T, H) the layer's output

    def forward(self, resid_pre: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False):
        resid_mid, pattern = self.attention(resid_pre, mask, need_weights)
        resid_mid = self.hook_resid_mid(resid_mid)
        resid_post = self.hook_resid_post(self.output(self.intermediate(resid_mid), resid_mid))
        return resid_post, pattern


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, x, mask, output_attentions=False, output_hidden_states=False):
        hidden_states = [x] if output_hidden_states else None
        attentions = [] if output_attentions else None
        for layer in self.layer:
            x, pattern = layer(x, mask, output_attentions)
            if output_hidden_states:
                hidden_states.append(x)
            if output_attentions:
                attentions.append(pattern)
        return x, hidden_states, attentions
