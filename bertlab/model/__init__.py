"""The BERT model, leaf to root: embeddings → attention → encoder layer → Bert → task heads."""

from .bert import Bert, BertOutput, default_device
from .embeddings import EmbeddingParts
from .heads import (BertForMaskedLM, BertForPreTraining, BertForQuestionAnswering,
                    BertForSequenceClassification, BertForTokenClassification)
from .hooks import HookPoint

__all__ = ["Bert", "BertOutput", "EmbeddingParts", "HookPoint", "default_device", "BertForPreTraining",
           "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification",
           "BertForQuestionAnswering"]
