"""Input embeddings: token + segment + position, then LayerNorm and dropout (paper, section 3, figure 2)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..config import BertConfig
from ..hooks import HookPoint


@dataclass
class EmbeddingParts:
    """The three summands of BERT's input, and their sum before and after LayerNorm. All (B, T, H)."""
    token: torch.Tensor
    segment: torch.Tensor
    position: torch.Tensor
    sum: torch.Tensor
    normed: torch.Tensor


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        # Attribute names are the original checkpoint's, so real weights load by copy.
        # `LayerNorm` is capitalised because Google's TF checkpoint named it so and everyone kept it.
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.hook_token = HookPoint()
        self.hook_segment = HookPoint()
        self.hook_position = HookPoint()
        self.hook_sum = HookPoint()
        self.hook_normed = HookPoint()

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None) -> EmbeddingParts:
        B, T = input_ids.shape
        token = self.hook_token(self.word_embeddings(input_ids))                        # (B, T, H)
        if token_type_ids is None:  # every token in segment A: broadcast one row, no lookup needed
            segment = self.token_type_embeddings.weight[0].expand(B, T, -1)
        else:
            segment = self.token_type_embeddings(token_type_ids)
        segment = self.hook_segment(segment)                                           # (B, T, H)
        # positions are learned vectors 0, 1, 2, ... (the original Transformer used fixed sinusoids)
        position = self.hook_position(self.position_embeddings.weight[:T].expand(B, T, -1))  # (B, T, H)
        summed = self.hook_sum(token + segment + position)
        normed = self.hook_normed(self.dropout(self.LayerNorm(summed)))
        return EmbeddingParts(token, segment, position, summed, normed)
