"""bertlab: a compact, inspectable BERT in plain PyTorch, and the notebooks that teach it.

    import bertlab
    model, tok = bertlab.load("minilm")
    out = model(**tok("The river bank was muddy."), output_attentions=True)
"""

from .checkpoint import load, save
from .config import BertConfig
from .model import (Bert, BertForMaskedLM, BertForPreTraining, BertForQuestionAnswering,
                    BertForSequenceClassification, BertForTokenClassification, BertOutput, EmbeddingParts)
from .tokenizer import Batch, Encoding, Tokenizer
from .utils import set_seed

__version__ = "0.1.0"

__all__ = ["BertConfig", "Tokenizer", "Encoding", "Batch", "Bert", "BertOutput", "EmbeddingParts",
           "BertForPreTraining", "BertForMaskedLM", "BertForSequenceClassification",
           "BertForTokenClassification", "BertForQuestionAnswering", "load", "save", "set_seed"]
