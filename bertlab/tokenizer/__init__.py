"""The tokenizer: text to the ids BERT reads, and back.

- wordpiece.py: `Tokenizer`, BERT's WordPiece pipeline (normalizer, pre-tokenizer, WordPiece, [CLS]/[SEP]);
- encoding.py: what a call returns, `Encoding` (one text) and `Batch` (padded tensors);
- training.py: how `Tokenizer.train` learns a vocabulary, and its guaranteed `BASE_ALPHABET`.
"""

from .encoding import MODEL_INPUT_NAMES, Batch, Encoding
from .training import BASE_ALPHABET, learn_vocabulary
from .wordpiece import SPECIAL_TOKENS, Tokenizer

__all__ = ["SPECIAL_TOKENS", "BASE_ALPHABET", "MODEL_INPUT_NAMES", "Encoding", "Batch", "Tokenizer",
           "learn_vocabulary"]
