"""Bert: embeddings → encoder → pooler, returning every intermediate a lesson needs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..config import BertConfig
from ..hooks import HookedModule
from ..inputs import check_inputs
from ..utils import default_device
from .attention import additive_mask
from .embeddings import BertEmbeddings, EmbeddingParts
from .encoder import BertEncoder


@dataclass
class BertOutput:
    """Everything one forward pass of the encoder computed: the last layer, the pooled [CLS], and on request
    every layer's hidden states and attention weights; the input embeddings part by part, always."""
    last_hidden_state: torch.Tensor                      # (B, T, H)
    pooler_output: torch.Tensor | None                   # (B, H) tanh(W · h[CLS]); None without a pooler
    hidden_states: tuple[torch.Tensor, ...] | None       # L + 1 of (B, T, H): embeddings output first
    attentions: tuple[torch.Tensor, ...] | None          # L of (B, heads, T, T)
    embeddings: EmbeddingParts                           # token, segment, position, sum, normed


class BertPooler(nn.Module):
    """tanh(W · h[CLS] + b): the [CLS] state, squashed, as the sequence's summary for classification."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, last_hidden_state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(last_hidden_state[:, 0]))  # (B, H)


class BertModule(HookedModule):
    """What every bertlab model shares: a config, a device, hooks, Google's initialisation."""

    config: BertConfig

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # a tied weight is one parameter, counted once

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        # As Google's BERT: normal(0, 0.02) weights, zero biases, LayerNorm at identity.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.normal_(0.0, self.config.initializer_range)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            module.weight[module.padding_idx].zero_()  # the [PAD] vector starts at zero, as in transformers
        if isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
        if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
            module.bias.zero_()


class Bert(BertModule):
    """The BERT encoder. `Bert(BertConfig.preset("tiny"))`, or `bertlab.load(...)` for trained weights."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True, device=None):
        super().__init__()
        self.config = config
        with torch.device(default_device(device)):
            self.embeddings = BertEmbeddings(config)
            self.encoder = BertEncoder(config)
            self.pooler = BertPooler(config) if add_pooling_layer else None
            self.apply(self._init_weights)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                output_attentions: bool = False, output_hidden_states: bool = False) -> BertOutput:
        """input_ids, token_type_ids, attention_mask: (B, T) integers; the mask is 1 for real tokens, 0 for padding.

        Inputs on another device are moved to the model's. Attention weights are only formed when asked
        for (`output_attentions=True`, or a hook on the scores or the pattern); otherwise attention runs
        fused. With `config.is_decoder` every position attends only to itself and the positions left of it.
        """
        input_ids, token_type_ids, attention_mask = check_inputs(
            self.config, self.device, input_ids, token_type_ids, attention_mask)
        parts = self.embeddings(input_ids, token_type_ids)
        mask = additive_mask(attention_mask, parts.normed, causal=self.config.is_decoder)
        last, hidden_states, attentions = self.encoder(parts.normed, mask, output_attentions, output_hidden_states)
        pooled = self.pooler(last) if self.pooler is not None else None
        return BertOutput(last, pooled, hidden_states, attentions, parts)
