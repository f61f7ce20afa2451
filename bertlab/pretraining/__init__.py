"""Pre-training data: text files → documents → NSP pairs → batches → masked-LM corruption.

    from bertlab.pretraining import PretrainingData, collate, mask_tokens
    data = PretrainingData("corpus/", tok, max_len=128)
    data.check()                                   # fail now, not an hour into training
    for examples in data.batches(32):
        batch = collate(examples, tok.pad_id)
        batch["input_ids"], batch["labels"] = mask_tokens(batch["input_ids"], tok)
"""

from .data import PretrainingData, collate, iter_texts, read_documents, split_sentences
from .evaluate import EvalResult, evaluate
from .masking import mask_tokens
from .pairs import PairExample, make_pairs
from .snapshots import Snapshot, read_snapshots
from .trainer import PretrainArgs, PretrainResult, pretrain

__all__ = ["mask_tokens", "make_pairs", "PairExample", "split_sentences", "read_documents", "iter_texts",
           "PretrainingData", "collate", "evaluate", "EvalResult", "pretrain", "PretrainArgs", "PretrainResult",
           "Snapshot", "read_snapshots"]
