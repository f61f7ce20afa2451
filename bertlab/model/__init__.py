"""The BERT model, leaf to root: embeddings → attention → encoder layer → Bert → task heads."""

from ..hooks import HookPoint
from .bert import Bert, BertOutput
from .embeddings import EmbeddingParts
from .heads import (
                    IGNORE,
                    BertForMaskedLM,
                    BertForMultipleChoice,
                    BertForPreTraining,
                    BertForQuestionAnswering,
                    BertForSequenceClassification,
                    BertForTokenClassification,
)

__all__ = ["Bert", "BertOutput", "EmbeddingParts", "HookPoint", "IGNORE", "BertForPreTraining",
           "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification",
           "BertForQuestionAnswering", "BertForMultipleChoice"]
