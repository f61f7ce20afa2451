"""Held-out scores for a pre-trained model: masked-token top-1 accuracy and next-sentence accuracy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import torch

from ..inputs import check_vocabularies
from ..model.heads import IGNORE
from .data import collate, read_documents
from .masking import mask_tokens
from .pairs import make_pairs


@dataclass
class EvalResult:
    mlm_top1: float          # share of masked tokens whose original is the model's first guess
    unigram_top1: float      # the same for always guessing the most frequent held-out target (a ceiling for any unigram guesser)
    nsp_accuracy: float      # share of IsNext / NotNext pairs judged right
    nsp_majority: float      # the share of the more frequent NSP label: what always guessing it scores
    masked_tokens: int
    pairs: int


@torch.no_grad()
def evaluate(model, tokenizer, corpus: Sequence[str] | str, max_len: int = 128, seed: int = 0,
             passes: int = 3, batch_size: int = 64, balance: bool = True) -> EvalResult:
    """Score `model` (a `BertForPreTraining`) on held-out text, with fixed masks and pairs (so runs compare).

    Each pass draws new NSP pairs from the held-out documents and new masks (15 %, 80/10/10, as in training),
    all from one generator seeded with `seed`. The unigram baseline is measured on the same masked positions.
    Pairs are balanced (`make_pairs(balance=True)`: exactly 50 % IsNext), so the NSP baseline is 50 %;
    `balance=False` scores Google's pairs, whose majority label is `nsp_majority`.
    """
    check_vocabularies(model.config.vocab_size, tokenizer, model=model)   # another model's tokenizer: refused
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    documents = list(read_documents(corpus))
    correct_mlm = n_mlm = correct_nsp = n_nsp = not_next = 0
    targets: Counter = Counter()
    for _ in range(passes):  # each pass: new NSP pairs and new masks, so a small held-out set yields more samples
        examples = make_pairs(documents, tokenizer, max_len, generator=gen, balance=balance)
        for i in range(0, len(examples), batch_size):
            batch = collate(examples[i:i + batch_size], tokenizer.pad_id)
            inputs, labels = mask_tokens(batch["input_ids"], tokenizer, generator=gen)
            out = model(inputs, batch["token_type_ids"], batch["attention_mask"], labels=labels)
            target = labels[labels != IGNORE].to(out.prediction_logits.device)
            correct_mlm += int((out.prediction_logits.argmax(-1) == target).sum())
            n_mlm += target.numel()
            targets.update(target.tolist())
            nsp = batch["next_sentence_label"].to(out.seq_relationship_logits.device)
            correct_nsp += int((out.seq_relationship_logits.argmax(-1) == nsp).sum())
            n_nsp += nsp.numel()
            not_next += int(nsp.sum())
    model.train(was_training)
    top = targets.most_common(1)[0][1] if targets else 0
    majority = max(not_next, n_nsp - not_next) / max(1, n_nsp)
    return EvalResult(correct_mlm / max(1, n_mlm), top / max(1, n_mlm), correct_nsp / max(1, n_nsp), majority,
                      n_mlm, n_nsp)


def card_scores(model, tokenizer) -> dict:
    """Every number bertlab-mini's eval.json holds, measured from `model`: held-out MLM and NSP on the demo
    corpus's English prose (3 passes) and on WordNet's held-out glosses (1 pass), and the everyday cloze test
    (`cloze.json`, written before training: is the expected word in the top 5?).

    One home for the card's measurement: scripts/mini_card.py writes the card with it and
    tests/test_bertlab_mini.py measures the shipped weights again with it.
    """
    import json

    from ..checkpoint import ASSETS
    from ..probe import fill_mask

    corpus = ASSETS / "corpus"
    prose_files = sorted(str(p) for p in (corpus / "heldout").glob("en_*.txt"))   # Korean stays out: English vocabulary
    prose = evaluate(model, tokenizer, prose_files, max_len=128, seed=0, passes=3)
    wordnet = evaluate(model, tokenizer, [str(corpus / "wordnet" / "heldout.txt")], max_len=128, seed=0, passes=1)
    cloze = json.loads((ASSETS / "bertlab-mini" / "cloze.json").read_text(encoding="utf-8"))["sentences"]
    rows = []
    for text, word in cloze:
        guesses = [g.token for g in fill_mask(model, tokenizer, text, top_k=5).guesses[0]]
        rows.append({"text": text, "expected": word, "top5": guesses, "hit": word in guesses})
    return {"prose": prose.__dict__, "wordnet": wordnet.__dict__, "cloze": rows,
            "cloze_top5": sum(r["hit"] for r in rows) / len(rows)}
