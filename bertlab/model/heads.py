"""Task heads on top of `Bert`: what the paper pre-trains with (MLM + NSP) and what it fine-tunes (figure 4).

Each head takes a `Bert` (to share or reuse a trained encoder) or a `BertConfig` (for a fresh one), keeps
the encoder at `.bert`, and returns logits and, when given labels, a loss (the records it returns are in
bertlab/outputs.py). Attribute names follow the original checkpoints (`cls.predictions.transform`,
`cls.seq_relationship`, `classifier`, `qa_outputs`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import HIDDEN_ACTS, BertConfig
from ..inputs import check_label_shape, check_labels, flatten_choices
from ..outputs import HeadOutput, PreTrainingOutput, QuestionAnsweringOutput
from ..utils import default_device
from .bert import Bert, BertModule

IGNORE = -100  # label value for positions that carry no loss, as PyTorch's cross_entropy expects


class _Head(BertModule):
    def __init__(self, bert_or_config, device, add_pooling_layer: bool):
        super().__init__()
        if isinstance(bert_or_config, Bert):
            if add_pooling_layer and bert_or_config.pooler is None:
                raise ValueError("this head classifies from the pooled [CLS] output, but the given Bert has no "
                                 "pooler: build it with Bert(config, add_pooling_layer=True)")
            self.bert = bert_or_config.to(default_device(device)) if device is not None else bert_or_config
        elif isinstance(bert_or_config, BertConfig):
            self.bert = Bert(bert_or_config, add_pooling_layer=add_pooling_layer, device=device)
        else:
            raise ValueError(f"expected a Bert or a BertConfig, got {type(bert_or_config).__name__}")
        self.config = self.bert.config

    def _init_new(self, *modules: nn.Module) -> None:
        with torch.no_grad():
            for m in modules:
                m.to(self.device).apply(self._init_weights)


# ---- pre-training ------------------------------------------------------------------------------

class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = HIDDEN_ACTS[config.hidden_act]
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
        self.bias = nn.Parameter(torch.zeros(config.vocab_size, device=word_embeddings.weight.device))

    def forward(self, x):                                   # (..., H) → (..., V)
        return F.linear(self.transform(x), self.decoder.weight, self.bias)


def masked_lm(head: BertLMPredictionHead, sequence_output: torch.Tensor, labels: torch.Tensor | None):
    """MLM (logits, loss). With labels, only the labelled positions are projected onto the vocabulary.

    The loss needs logits only where a token was chosen (~15 %), and the vocabulary projection is the
    largest matrix in a small BERT, so gathering first skips most of a training step's work.
    """
    if labels is None:
        return head(sequence_output), None                             # (B, T, V)
    labels = torch.as_tensor(labels, device=sequence_output.device)
    check_label_shape(labels, sequence_output.shape[:2], IGNORE)
    chosen = labels != IGNORE                                          # (B, T)
    logits = head(sequence_output[chosen])                             # (N, V)
    target = labels[chosen]
    loss = F.cross_entropy(logits.float(), target) if target.numel() else logits.sum() * 0.0
    return logits, loss


class BertForPreTraining(_Head):
    """Masked LM + next-sentence prediction: the paper's two pre-training tasks, trained together."""

    def __init__(self, bert_or_config, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=True)
        self.cls = nn.Module()  # a bare container: `cls.predictions`, `cls.seq_relationship` are the checkpoint's paths
        self.cls.predictions = BertLMPredictionHead(self.config, self.bert.embeddings.word_embeddings)
        self.cls.seq_relationship = nn.Linear(self.config.hidden_size, 2)  # 0 = IsNext, 1 = NotNext
        self._init_new(self.cls.predictions.transform, self.cls.seq_relationship)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                next_sentence_label=None, output_attentions=False, output_hidden_states=False) -> PreTrainingOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits, mlm_loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)
        nsp_loss = None
        if next_sentence_label is not None:
            nsp_labels = torch.as_tensor(next_sentence_label, device=nsp_logits.device).view(-1)  # (B,)
            nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return PreTrainingOutput(sum(parts) if parts else None, mlm_loss, nsp_loss, logits, nsp_logits, out)


class BertForMaskedLM(_Head):
    """Masked LM alone: fill in [MASK] from both sides (the MLM half of pre-training, no NSP head).

    The decoder is tied to the token embeddings, as in `BertForPreTraining`; `load` gives this head for a
    checkpoint that kept the MLM weights but not the NSP head's.
    """

    def __init__(self, bert_or_config, device=None, add_pooling_layer: bool = False):
        super().__init__(bert_or_config, device, add_pooling_layer)
        self.cls = nn.Module()
        self.cls.predictions = BertLMPredictionHead(self.config, self.bert.embeddings.word_embeddings)
        self._init_new(self.cls.predictions.transform)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> HeadOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits, loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels)
        return HeadOutput(loss, logits, out)


# ---- fine-tuning -------------------------------------------------------------------------------

class _Classifier(_Head):
    """The fine-tuning heads of figure 4: the encoder's pooled [CLS] (or, for tagging, every token's state)
    → dropout → `classifier` = Linear(H, num_labels). The heads below differ only in their loss."""
    pooled = True  # classify from the pooled [CLS]: the encoder needs its pooler

    def __init__(self, bert_or_config, num_labels: int = 2, classifier_dropout: float | None = None, device=None):
        super().__init__(bert_or_config, device, add_pooling_layer=self.pooled)
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        self.num_labels = num_labels
        self.dropout = nn.Dropout(self.config.hidden_dropout_prob if classifier_dropout is None else classifier_dropout)
        self.classifier = nn.Linear(self.config.hidden_size, num_labels)
        self._init_new(self.classifier)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> HeadOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        features = out.pooler_output if self.pooled else out.last_hidden_state  # (B, H) or (B, T, H)
        logits = self.classifier(self.dropout(features))                        # (B, num_labels) or (B, T, num_labels)
        loss = None if labels is None else self.loss(logits, torch.as_tensor(labels, device=logits.device))
        return HeadOutput(loss, logits, out)


class BertForSequenceClassification(_Classifier):
    """Classify a text or a pair: pooled [CLS] output → dropout → linear.

    One label: regression (MSE); more: classes (cross-entropy).
    """

    def loss(self, logits, labels):
        if self.num_labels == 1:
            return F.mse_loss(logits.float().view(-1), labels.float().view(-1))
        check_labels(labels, self.num_labels)
        return F.cross_entropy(logits.float(), labels.view(-1))


class BertForTokenClassification(_Classifier):
    """Tag every token (NER, POS): each token's state → dropout → linear.

    Label a word's first piece; -100 the rest.
    """
    pooled = False

    def loss(self, logits, labels):
        check_label_shape(labels, logits.shape[:2], IGNORE)
        check_labels(labels[labels != IGNORE], self.num_labels)
        return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE)


class BertForMultipleChoice(_Classifier):
    """Pick one of C endings (SWAG).

    Each of a question's C endings is read with the context as one sequence, its pooled [CLS] gets
    one score, and the loss is cross-entropy across the C scores. Inputs (B, C, T) → logits (B, C); the
    output's `.bert` holds the encoder's view of the B·C flattened sequences."""

    def __init__(self, bert_or_config, classifier_dropout: float | None = None, device=None):
        super().__init__(bert_or_config, 1, classifier_dropout, device)  # one score per choice

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                output_attentions=False, output_hidden_states=False) -> HeadOutput:
        *flat, C = flatten_choices(input_ids, token_type_ids, attention_mask)      # (B·C, T) each
        out = super().forward(*flat, None, output_attentions, output_hidden_states)
        logits = out.logits.view(-1, C)                                          # (B·C, 1) → (B, C)
        loss = None if labels is None else self.loss(logits, torch.as_tensor(labels, device=logits.device))
        return HeadOutput(loss, logits, out.bert)

    def loss(self, logits, labels):
        check_labels(labels, logits.shape[1])
        return F.cross_entropy(logits.float(), labels.view(-1))


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


HEADS = {cls.__name__: cls for cls in (BertForPreTraining, BertForMaskedLM, BertForSequenceClassification,
                                        BertForTokenClassification, BertForQuestionAnswering, BertForMultipleChoice)}
