"""Held-out scores for a pre-trained model: masked-token top-1 accuracy and next-sentence accuracy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import torch

from ..model.heads import IGNORE
from .data import collate, read_documents
from .masking import mask_tokens
from .pairs import make_pairs


@dataclass
class EvalResult:
    mlm_top1: float          # share of masked tokens whose original is the model's first guess
    unigram_top1: float      # the same for always guessing the most frequent held-out target (a ceiling for any unigram guesser)
    nsp_accuracy: float      # share of IsNext / NotNext pairs judged right
    masked_tokens: int
    pairs: int


@torch.no_grad()
def evaluate(model, tokenizer, corpus: Sequence[str] | str, max_len: int = 128, seed: int = 0,
             passes: int = 3, batch_size: int = 64) -> EvalResult:
    """Score `model` (a `BertForPreTraining`) on held-out text, with fixed masks and pairs (so runs compare).

    Every pair of the held-out corpus is scored once per pass; each pass draws new masks (15 %, 80/10/10,
    as in training). The unigram baseline is measured on the very same masked positions.
    """
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    examples = make_pairs(list(read_documents(corpus)), tokenizer, max_len, generator=gen)
    correct_mlm = n_mlm = correct_nsp = n_nsp = 0
    targets: Counter = Counter()
    for p in range(passes):
        for i in range(0, len(examples), batch_size):
            batch = collate(examples[i:i + batch_size], tokenizer.pad_id)
            inputs, labels = mask_tokens(batch["input_ids"], tokenizer, generator=gen)
            out = model(inputs, batch["token_type_ids"], batch["attention_mask"], labels=labels)
            target = labels[labels != IGNORE].to(out.prediction_logits.device)
            correct_mlm += int((out.prediction_logits.argmax(-1) == target).sum())
            n_mlm += target.numel()
            targets.update(target.tolist())
            if p == 0:
                nsp = batch["next_sentence_label"].to(out.seq_relationship_logits.device)
                correct_nsp += int((out.seq_relationship_logits.argmax(-1) == nsp).sum())
                n_nsp += nsp.numel()
    model.train(was_training)
    top = targets.most_common(1)[0][1] if targets else 0
    return EvalResult(correct_mlm / max(1, n_mlm), top / max(1, n_mlm), correct_nsp / max(1, n_nsp), n_mlm, n_nsp)
