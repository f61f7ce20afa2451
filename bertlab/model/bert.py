"""Bert: embeddings → encoder → pooler, returning every intermediate a lesson needs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..config import BertConfig
from .embeddings import BertEmbeddings, EmbeddingParts
from .encoder import BertEncoder
from .hooks import HookedModule


def default_device(device=None) -> torch.device:
    """The device asked for, else CUDA when there is one, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class BertOutput:
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
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        # As Google's BERT: normal(0, 0.02) weights, zero biases, LayerNorm at identity.
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.normal_(0.0, std)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.normal_(0.0, std)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
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

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> BertOutput:
        """input_ids, token_type_ids, attention_mask: (B, T) integers; the mask is 1 for real tokens, 0 for padding.

        Inputs on another device are moved to the model's. Attention weights are only formed when asked
        for (`output_attentions=True`, or a hook on a pattern); otherwise attention runs fused.
        """
        input_ids, token_type_ids, attention_mask = self._check_inputs(input_ids, token_type_ids, attention_mask)
        parts = self.embeddings(input_ids, token_type_ids)
        mask = additive_mask(attention_mask, parts.normed.dtype)
        last, hidden_states, attentions = self.encoder(parts.normed, mask, output_attentions, output_hidden_states)
        return BertOutput(
            last_hidden_state=last,
            pooler_output=self.pooler(last) if self.pooler is not None else None,
            hidden_states=tuple(hidden_states) if hidden_states is not None else None,
            attentions=tuple(attentions) if attentions is not None else None,
            embeddings=parts,
        )

    def _check_inputs(self, input_ids, token_type_ids, attention_mask):
        """Turn every mistake that would surface as an index error deep in torch into a ValueError that says what to do."""
        cfg, device = self.config, self.device
        input_ids = _as_ids("input_ids", input_ids, device)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}"
                             + (": add a batch dimension with input_ids[None]" if input_ids.dim() == 1 else ""))
        B, T = input_ids.shape
        if B == 0:
            # An error rather than an empty output: an empty batch is nearly always a filter upstream that
            # dropped every example, and tok.batch([]) and collate([]) refuse one too.
            raise ValueError(f"input_ids is an empty batch (shape {tuple(input_ids.shape)}): pass at least one "
                             "sequence; did a filter upstream drop every example?")
        if T == 0:
            raise ValueError("input_ids is empty (seq_len 0): every BERT input has at least [CLS] and [SEP]")
        if T > cfg.max_position_embeddings:
            raise ValueError(f"sequence of {T} tokens is longer than max_position_embeddings "
                             f"{cfg.max_position_embeddings}: tokenize with max_length="
                             f"{cfg.max_position_embeddings} (truncation) or pass a shorter text")
        lo, hi = torch.aminmax(input_ids)
        if lo < 0 or hi >= cfg.vocab_size:
            bad = int(lo) if lo < 0 else int(hi)
            raise ValueError(f"token id {bad} is outside the vocabulary (0 … {cfg.vocab_size - 1}): "
                             "was the text encoded with a different tokenizer than this model's?")
        if token_type_ids is not None:
            token_type_ids = _as_ids("token_type_ids", token_type_ids, device)
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)} but input_ids has "
                                 f"{tuple(input_ids.shape)}: they must match, one segment id per token")
            lo, hi = torch.aminmax(token_type_ids)
            if lo < 0 or hi >= cfg.type_vocab_size:
                raise ValueError(f"token_type_ids must be in 0 … {cfg.type_vocab_size - 1} "
                                 f"(0 = sentence A, 1 = sentence B), got {int(lo) if lo < 0 else int(hi)}")
        if attention_mask is not None:
            attention_mask = _as_ids("attention_mask", attention_mask, device, allow_bool=True)
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)} but input_ids has "
                                 f"{tuple(input_ids.shape)}: pass one 1/0 per token (1 = real, 0 = padding)")
            if attention_mask.dtype != torch.bool:
                bad = (attention_mask != 0) & (attention_mask != 1)
                if bool(bad.any()):
                    raise ValueError(f"attention_mask must hold only 1 (real token) and 0 (padding), got "
                                     f"{int(attention_mask[bad][0])}: pass the tokenizer's attention_mask; the "
                                     "model builds the additive 0 / -inf mask from it itself")
        return input_ids, token_type_ids, attention_mask


def additive_mask(attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """(B, T) 1/0 → (B, 1, 1, T) additive: 0 where a key may be attended, the dtype's minimum where not.

    A mask with no padding is dropped (None), which lets fused attention skip the add altogether.
    """
    if attention_mask is None or bool(attention_mask.all()):
        return None
    keep = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - keep) * torch.finfo(dtype).min


def _as_ids(name: str, x, device, allow_bool: bool = False) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"{name} must be a tensor or nested list of integers, got {type(x).__name__}") from None
        if x.numel() == 0:
            x = x.long()  # torch.as_tensor([]) is float32: let the shape checks name the real problem
    if x.is_floating_point() or x.is_complex() or (x.dtype == torch.bool and not allow_bool):
        why = ("1 = real token, 0 = padding: pass attention_mask.long()" if allow_bool
               else "token ids index a table")
        raise ValueError(f"{name} must hold integers, got dtype {x.dtype}: {why}")
    if x.dtype == torch.bool:
        return x.to(device)
    # every integer dtype (uint8, int16, int32, ...) becomes int64: range checks against the vocabulary
    # cannot wrap around, and the embedding lookup accepts it
    return x.to(device=device, dtype=torch.long)
