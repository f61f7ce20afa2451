"""Task heads on top of `Bert`: what the paper pre-trains with (MLM + NSP) and what it fine-tunes (figure 4).

Each head takes a `Bert` (to share or reuse a trained encoder) or a `BertConfig` (for a fresh one), keeps
the encoder at `.bert`, and returns logits and, when given labels, a loss. Attribute names follow the
original checkpoints (`cls.predictions.transform`, `cls.seq_relationship`, `classifier`, `qa_outputs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..config import BertConfig
from .bert import Bert, BertModule, BertOutput, default_device
from .encoder import activation

IGNORE = -100  # label value for positions that carry no loss, as PyTorch's cross_entropy expects


def _encoder(bert_or_config, device, add_pooling_layer: bool) -> Bert:
    if isinstance(bert_or_config, Bert):
        if add_pooling_layer and bert_or_config.pooler is None:
            raise ValueError("this head classifies from the pooled [CLS] output, but the given Bert has no "
                             "pooler: build it with Bert(config, add_pooling_layer=True)")
        return bert_or_config.to(default_device(device)) if device is not None else bert_or_config
    if isinstance(bert_or_config, BertConfig):
        return Bert(bert_or_config, add_pooling_layer=add_pooling_layer, device=device)
    raise ValueError(f"expected a Bert or a BertConfig, got {type(bert_or_config).__name__}")


class _Head(BertModule):
    def __init__(self, bert_or_config, device, add_pooling_layer: bool):
        super().__init__()
        self.bert = _encoder(bert_or_config, device, add_pooling_layer)
        self.config = self.bert.config

    def _init_new(self, *modules: nn.Module) -> None:
        with torch.no_grad():
            for m in modules:
                m.to(self.device)
                m.apply(self._init_weights)


# ---- pre-training ------------------------------------------------------------------------------

class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = activation(config.hidden_act)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """dense → GELU → LayerNorm → the vocabulary projection, whose weight *is* the token embedding matrix.

    Tying input and output embeddings (as Google's BERT does) saves V × H parameters and means a word's
    input vector and its output vector are the same thing.
    """

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.decoder.weight = word_embeddings.weight  # tied
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x):                                   # (..., H) → (..., V)
        return F.linear(self.transform(x), self.decoder.weight, self.bias)


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.predictions = BertLMPredictionHead(config, word_embeddings)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)  # 0 = IsNext, 1 = NotNext


def masked_lm(head: BertLMPredictionHead, sequence_output: torch.Tensor, labels: torch.Tensor | None):
    """MLM logits and loss. With labels, only the labelled positions are projected onto the vocabulary.

    The loss needs logits only where a token was chosen (~15 %), and the vocabulary projection is the
    largest matrix in a small BERT, so gathering first skips most of a training step's work.
    Returns (logits, loss): logits are (B, T, V) without labels and (N, V) at the N labelled positions with.
    """
    if labels is None:
        return head(sequence_output), None
    if labels.shape != sequence_output.shape[:2]:
        raise ValueError(f"labels has shape {tuple(labels.shape)} but the input has "
                         f"{tuple(sequence_output.shape[:2])}: one label per token, {IGNORE} where there is none")
    labels = labels.to(sequence_output.device)
    chosen = labels != IGNORE                                         # (B, T)
    logits = head(sequence_output[chosen])                            # (N, V)
    target = labels[chosen]
    loss = F.cross_entropy(logits.float(), target) if target.numel() else logits.sum() * 0.0
    return logits, loss


@dataclass
class PreTrainingOutput:
    loss: torch.Tensor | None                  # mlm_loss + nsp_loss, given both labels
    mlm_loss: torch.Tensor | None
    nsp_loss: torch.Tensor | None
    prediction_logits: torch.Tensor            # (B, T, V); (N, V) at the labelled positions when labels are given
    seq_relationship_logits: torch.Tensor      # (B, 2): 0 = IsNext, 1 = NotNext
    bert: BertOutput


class BertForPreTraining(_Head):
    """Masked LM + next-sentence prediction: the paper's two pre-training tasks, trained together."""

    def __init__(self, bert_or_config, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=True)
        self.cls = BertPreTrainingHeads(self.config, self.bert.embeddings.word_embeddings)
        self._init_new(self.cls.predictions.transform, self.cls.seq_relationship)
        self.cls.to(self.device)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                next_sentence_label=None, output_attentions=False, output_hidden_states=False) -> PreTrainingOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits, mlm_loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)
        nsp_loss = None
        if next_sentence_label is not None:
            nsp_loss = F.cross_entropy(nsp_logits.float(), torch.as_tensor(next_sentence_label, device=nsp_logits.device).view(-1))
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return PreTrainingOutput(sum(parts) if parts else None, mlm_loss, nsp_loss, logits, nsp_logits, out)


@dataclass
class MaskedLMOutput:
    loss: torch.Tensor | None
    logits: torch.Tensor                       # (B, T, V); (N, V) at the labelled positions when labels are given
    bert: BertOutput


class BertForMaskedLM(_Head):
    def __init__(self, bert_or_config, device=None, add_pooling_layer: bool = False):
        super().__init__(bert_or_config, device, add_pooling_layer)
        self.cls = nn.Module()
        self.cls.predictions = BertLMPredictionHead(self.config, self.bert.embeddings.word_embeddings)
        self._init_new(self.cls.predictions.transform)
        self.cls.to(self.device)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> MaskedLMOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits, loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels)
        return MaskedLMOutput(loss, logits, out)


# ---- fine-tuning -------------------------------------------------------------------------------

@dataclass
class ClassifierOutput:
    loss: torch.Tensor | None
    logits: torch.Tensor                       # (B, num_labels) or (B, T, num_labels)
    bert: BertOutput


class BertForSequenceClassification(_Head):
    """pooled [CLS] output → dropout → linear. One label: regression (MSE); more: classes (cross-entropy)."""

    def __init__(self, bert_or_config, num_labels: int = 2, classifier_dropout: float | None = None, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=True)
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        self.num_labels = num_labels
        p = self.config.hidden_dropout_prob if classifier_dropout is None else classifier_dropout
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(self.config.hidden_size, num_labels)
        self._init_new(self.classifier)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> ClassifierOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.pooler_output))          # (B, num_labels)
        loss = None
        if labels is not None:
            labels = torch.as_tensor(labels, device=logits.device)
            if self.num_labels == 1:
                loss = F.mse_loss(logits.float().view(-1), labels.float().view(-1))
            else:
                _check_labels(labels, self.num_labels)
                loss = F.cross_entropy(logits.float(), labels.view(-1))
        return ClassifierOutput(loss, logits, out)


class BertForTokenClassification(_Head):
    """Each token's final state → dropout → linear: tagging (NER, POS). Label a word's first piece; -100 the rest."""

    def __init__(self, bert_or_config, num_labels: int = 2, classifier_dropout: float | None = None, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=False)
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        self.num_labels = num_labels
        p = self.config.hidden_dropout_prob if classifier_dropout is None else classifier_dropout
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(self.config.hidden_size, num_labels)
        self._init_new(self.classifier)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> ClassifierOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))      # (B, T, num_labels)
        loss = None
        if labels is not None:
            labels = torch.as_tensor(labels, device=logits.device)
            if labels.shape != logits.shape[:2]:
                raise ValueError(f"labels has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:2])}: "
                                 f"one label per token, {IGNORE} for tokens without one")
            _check_labels(labels[labels != IGNORE], self.num_labels)
            loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE)
        return ClassifierOutput(loss, logits, out)


@dataclass
class QuestionAnsweringOutput:
    loss: torch.Tensor | None
    start_logits: torch.Tensor                 # (B, T)
    end_logits: torch.Tensor                   # (B, T)
    bert: BertOutput


class BertForQuestionAnswering(_Head):
    """Span answers (SQuAD): a start score and an end score for every token of `[CLS] question [SEP] passage [SEP]`."""

    def __init__(self, bert_or_config, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(self.config.hidden_size, 2)
        self._init_new(self.qa_outputs)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, start_positions=None,
                end_positions=None, output_attentions=False, output_hidden_states=False) -> QuestionAnsweringOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            T = start_logits.shape[1]
            # positions past the input (an answer truncated away) are ignored, as in the original SQuAD code
            start = torch.as_tensor(start_positions, device=start_logits.device).view(-1).clamp(0, T)
            end = torch.as_tensor(end_positions, device=end_logits.device).view(-1).clamp(0, T)
            loss = (F.cross_entropy(start_logits.float(), start, ignore_index=T)
                    + F.cross_entropy(end_logits.float(), end, ignore_index=T)) / 2
        return QuestionAnsweringOutput(loss, start_logits, end_logits, out)


def _check_labels(labels: torch.Tensor, num_labels: int) -> None:
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_labels):
        raise ValueError(f"labels must be in 0 … {num_labels - 1}, got values from {int(labels.min())} "
                         f"to {int(labels.max())}")


HEADS = {cls.__name__: cls for cls in (BertForPreTraining, BertForMaskedLM, BertForSequenceClassification,
                                        BertForTokenClassification, BertForQuestionAnswering)}
