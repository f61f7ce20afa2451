"""What the task heads return: their logits and losses, and the encoder's whole output at `.bert`.

Apart from the heads (bertlab.model.heads) as transformers keeps `modeling_outputs.py` apart from each
model: the model files hold the computation, and these records say what came out. Every head output also
hands back the encoder's `hidden_states`, `attentions` and `embeddings` directly (`EncoderViews`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:       # annotations only: bertlab.model.heads imports this module
    from .model.bert import BertOutput
    from .model.embeddings import EmbeddingParts


class EncoderViews:
    """The encoder's `hidden_states`, `attentions` and `embeddings` read straight off a head's output.

    transformers puts them on the head's output (`MaskedLMOutput.attentions`), so that is where its users
    look first; bertlab keeps the whole `BertOutput` at `.bert` and these properties hand back the very
    same tensors (no copy). `hidden_states` and `attentions` are None unless the forward asked for them.
    """
    bert: BertOutput

    @property
    def hidden_states(self) -> tuple[torch.Tensor, ...] | None:
        """L + 1 of (B, T, H), the embedding output first (`output_hidden_states=True`), else None."""
        return self.bert.hidden_states

    @property
    def attentions(self) -> tuple[torch.Tensor, ...] | None:
        """L of (B, heads, T, T) (`output_attentions=True`), else None."""
        return self.bert.attentions

    @property
    def embeddings(self) -> EmbeddingParts:
        """The input embeddings: token, segment and position parts, their sum, and after LayerNorm."""
        return self.bert.embeddings


@dataclass
class PreTrainingOutput(EncoderViews):
    """`prediction_logits` has two shapes: (B, T, V) without `labels`, every position scored; with `labels`,
    (N, V) for the N labelled positions only, in row-major order (`logits[i]` is `labels[labels != -100][i]`)."""
    loss: torch.Tensor | None                  # mlm_loss + nsp_loss, given both labels
    mlm_loss: torch.Tensor | None
    nsp_loss: torch.Tensor | None
    prediction_logits: torch.Tensor            # (B, T, V), or (N, V) at the labelled positions: see above
    seq_relationship_logits: torch.Tensor      # (B, 2): 0 = IsNext, 1 = NotNext
    bert: BertOutput


@dataclass
class HeadOutput(EncoderViews):
    """What the masked-LM and classifier heads return. A masked LM's `logits` are (B, T, V) without `labels` and
    (N, V) at the N labelled positions with them, as `PreTrainingOutput.prediction_logits`."""
    loss: torch.Tensor | None
    logits: torch.Tensor    # MLM (B, T, V) or (N, V); sequence (B, num_labels); token (B, T, num_labels); choice (B, C)
    bert: BertOutput


@dataclass
class QuestionAnsweringOutput(EncoderViews):
    """Span scores for every token: the answer runs from argmax(start_logits) to argmax(end_logits)."""
    loss: torch.Tensor | None
    start_logits: torch.Tensor                 # (B, T)
    end_logits: torch.Tensor                   # (B, T)
    bert: BertOutput
