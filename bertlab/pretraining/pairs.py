"""Next-sentence-prediction pairs: ``[CLS] A [SEP] B [SEP]`` where B follows A half of the time.

This follows ``create_instances_from_document`` in Google's ``create_pretraining_data.py``
(google-research/bert). For each document, walk its sentences and gather a *chunk* of consecutive
sentences until it holds about ``max_len - 3`` tokens (three slots are kept for [CLS], [SEP], [SEP]).
Split the chunk at a random sentence boundary: the first part is A. Then, with probability 0.5, B is
the rest of the chunk (IsNext, label 0); otherwise B is a run of sentences from a random *other*
document (NotNext, label 1), and the chunk's unused sentences are put back to start the next chunk, so
no text is wasted. Finally the pair is cut to fit.

Why "sentences" are spans, not single sentences: the paper's "sentence" is any span of contiguous text.
Packing several sentences into A and B fills the sequence, and a full sequence teaches more per step.

Why 10 % short sequences: pre-training on full-length sequences only would leave the model unused to the
short inputs it meets in fine-tuning, so Google picks a random shorter target length 10 % of the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["PairExample", "make_pairs"]

IS_NEXT, NOT_NEXT = 0, 1

#: [CLS] A [SEP] B [SEP] with one token in each of A and B.
MIN_MAX_LEN = 5


@dataclass
class PairExample:
    """One NSP example, unpadded.

    ``input_ids`` is ``[CLS] A [SEP] B [SEP]``; ``token_type_ids`` is 0 over ``[CLS] A [SEP]`` and 1 over
    ``B [SEP]``; ``next_sentence_label`` is 0 when B really follows A (IsNext) and 1 when B comes from
    another document (NotNext), as in HuggingFace.
    """

    input_ids: list[int]
    token_type_ids: list[int]
    next_sentence_label: int

    def __len__(self) -> int:
        return len(self.input_ids)


class _Rng:
    """Python-``random``-style draws from a ``torch.Generator``, so one seed fixes every choice."""

    def __init__(self, generator: torch.Generator | None) -> None:
        self.generator = generator

    def random(self) -> float:
        """A float in [0, 1)."""
        return torch.rand((), generator=self.generator).item()

    def randint(self, low: int, high: int) -> int:
        """An int in [low, high], both ends included (like ``random.randint``)."""
        return int(torch.randint(low, high + 1, (), generator=self.generator).item())

    def coins(self, n: int) -> list[bool]:
        """``n`` fair coin flips."""
        return (torch.rand(n, generator=self.generator) < 0.5).tolist()


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: _Rng) -> tuple[list[int], list[int]]:
    """Google's ``truncate_seq_pair``: drop one token at a time from the longer segment (B on a tie),
    from its front or its back at random, until the pair fits in ``max_tokens``.

    Cutting at both ends, rather than always at the back, is Google's way to add noise: the model cannot
    learn that a segment always ends at a sentence boundary. Which segment loses a token depends only on
    the lengths, so all the coin flips are drawn at once.
    """
    excess = len(a) + len(b) - max_tokens
    if excess <= 0:
        return a, b
    la, lb = len(a), len(b)
    cut = {"a": [0, 0], "b": [0, 0]}  # tokens dropped at the [front, back] of each segment
    for front in rng.coins(excess):
        side = "a" if la > lb else "b"
        cut[side][0 if front else 1] += 1
        if side == "a":
            la -= 1
        else:
            lb -= 1
    (fa, ba), (fb, bb) = cut["a"], cut["b"]
    return a[fa:len(a) - ba], b[fb:len(b) - bb]


def _tokenize_documents(documents: Sequence[Sequence[str]], tokenizer) -> list[list[list[int]]]:
    """Every sentence to ids in one batched call; empty sentences and documents are dropped.

    A literal "[SEP]" or "[MASK]" in the text would come out as that special token and break the
    ``[CLS] A [SEP] B [SEP]`` layout, so structural special tokens are removed ([UNK] stays: it is text).
    """
    sentences = [s for doc in documents for s in doc]
    encoded = tokenizer.backend.encode_batch(sentences, add_special_tokens=False) if sentences else []
    structural = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id}
    tokenized, k = [], 0
    for doc in documents:
        ids = [[i for i in enc.ids if i not in structural] for enc in encoded[k:k + len(doc)]]
        k += len(doc)
        ids = [s for s in ids if s]
        if ids:
            tokenized.append(ids)
    return tokenized


def _check(documents, max_len: int, short_seq_prob: float, nsp_prob: float) -> None:
    if isinstance(documents, str) or not isinstance(documents, Sequence):
        raise ValueError(
            f"documents must be a list of documents (each a list of sentence strings), got {type(documents).__name__}"
        )
    for i, doc in enumerate(documents):
        if isinstance(doc, str) or not isinstance(doc, Sequence) or not all(isinstance(s, str) for s in doc):
            raise ValueError(f"document {i} must be a list of sentence strings, got {type(doc).__name__}")
    if len(documents) == 0:
        raise ValueError("documents is empty: pass a list of documents, each a list of sentences")
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < MIN_MAX_LEN:
        raise ValueError(
            f"max_len must be an int of at least {MIN_MAX_LEN} ([CLS] A [SEP] B [SEP] with one token in each "
            f"of A and B), got {max_len!r}"
        )
    for name, value in (("short_seq_prob", short_seq_prob), ("nsp_prob", nsp_prob)):
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")


def make_pairs(
    documents: Sequence[Sequence[str]],
    tokenizer,
    max_len: int,
    generator: torch.Generator | None = None,
    short_seq_prob: float = 0.1,
    nsp_prob: float = 0.5,
    balance: bool = False,
) -> list[PairExample]:
    """Turn documents (lists of sentences) into NSP examples of at most ``max_len`` tokens.

    Every sentence of every document is used about once as part of A or an IsNext B (documents in
    order, not shuffled: shuffle the result). NotNext B's are drawn from other documents, so at least two
    non-empty documents are needed, and at least one with two sentences for IsNext to be possible.
    All randomness comes from ``generator``: the same seed gives the same pairs.

    The labels are 50/50 except for one-sentence chunks (a document's last sentence, or one sentence
    longer than the target), which can only be NotNext, as in Google's code. Long documents make them
    rare; corpora of short documents (a dozen short sentences each) come out near 57 % NotNext.

    ``balance=True`` gives exactly the paper's 50 / 50: examples of the more frequent label are dropped at
    random (from ``generator``) until both labels have the same count. Use it for evaluation, where a skewed split would move the baseline away from 50 %
    (a model that always says NotNext would score 57 %), and in training when the model's prior should
    be 50 / 50. Balancing by dropping keeps each kept pair exactly as Google would have made it.
    """
    _check(documents, max_len, short_seq_prob, nsp_prob)
    docs = _tokenize_documents(documents, tokenizer)
    if len(docs) < 2:
        raise ValueError(
            f"make_pairs needs at least 2 non-empty documents, got {len(docs)}: a NotNext pair takes its "
            "second segment from a different document (separate documents with a blank line)"
        )
    if not any(len(doc) >= 2 for doc in docs):
        raise ValueError(
            "no document has 2 or more sentences, so no IsNext pair can be made: NSP needs documents of "
            "several consecutive sentences, not one sentence per document"
        )
    rng = _Rng(generator)
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    examples: list[PairExample] = []
    for index in range(len(docs)):
        for a, b, label in _pairs_from_document(docs, index, max_len - 3, rng, short_seq_prob, nsp_prob):
            examples.append(PairExample(
                input_ids=[cls, *a, sep, *b, sep],
                token_type_ids=[0] * (len(a) + 2) + [1] * (len(b) + 1),
                next_sentence_label=label,
            ))
    return _balanced(examples, rng) if balance else examples


def _balanced(examples: list[PairExample], rng: _Rng) -> list[PairExample]:
    """Drop random examples of the more frequent label until IsNext and NotNext are equally many."""
    by_label = {IS_NEXT: [], NOT_NEXT: []}
    for i, ex in enumerate(examples):
        by_label[ex.next_sentence_label].append(i)
    n = min(len(v) for v in by_label.values())
    if n == 0:
        raise ValueError("balance=True found no pair of one of the labels (IsNext needs documents of two or "
                         "more sentences, and nsp_prob between 0 and 1): nothing would be left")
    keep = set()
    for indices in by_label.values():
        order = torch.randperm(len(indices), generator=rng.generator).tolist()
        keep.update(indices[j] for j in order[:n])
    return [ex for i, ex in enumerate(examples) if i in keep]


def _pairs_from_document(
    docs: list[list[list[int]]], index: int, max_tokens: int, rng: _Rng, short_seq_prob: float, nsp_prob: float
) -> list[tuple[list[int], list[int], int]]:
    """Google's ``create_instances_from_document`` for ``docs[index]``: a list of ``(A ids, B ids, label)``.

    ``max_tokens`` is ``max_len - 3``. Sentences are lists of ids.
    """
    document = docs[index]
    pairs = []
    chunk: list[list[int]] = []  # consecutive sentences (as ids) waiting to become a pair
    chunk_tokens = 0
    target = _target_length(max_tokens, rng, short_seq_prob)
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_tokens += len(document[i])
        if i == len(document) - 1 or chunk_tokens >= target:
            # A is the first a_end sentences; at least one sentence is left for an IsNext B when possible.
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a = [t for sentence in chunk[:a_end] for t in sentence]
            if len(chunk) == 1 or rng.random() < nsp_prob:
                label = NOT_NEXT
                b = _random_segment(docs, index, target - len(a), rng)
                # The sentences not used as B go back into the document, to start the next chunk.
                i -= len(chunk) - a_end
            else:
                label = IS_NEXT
                b = [t for sentence in chunk[a_end:] for t in sentence]
            a, b = _truncate_pair(a, b, max_tokens, rng)
            pairs.append((a, b, label))
            chunk, chunk_tokens = [], 0
            target = _target_length(max_tokens, rng, short_seq_prob)
        i += 1
    return pairs


def _target_length(max_tokens: int, rng: _Rng, short_seq_prob: float) -> int:
    """Usually fill the sequence; with probability ``short_seq_prob`` aim for a random length in [2, max].

    Google draws this once per document, so a long document's pairs are all short or all full; bertlab
    draws it per pair, so that ``short_seq_prob`` is the share of short examples even in a small corpus.
    """
    if rng.random() < short_seq_prob:
        return rng.randint(2, max_tokens)
    return max_tokens


def _random_segment(docs: list[list[list[int]]], index: int, target: int, rng: _Rng) -> list[int]:
    """Consecutive sentences from a random document other than ``docs[index]``, about ``target`` tokens.

    Google tries 10 random documents and, if all 10 are the current one, uses it anyway; with a
    two-document corpus that makes a "NotNext" pair from the same document one time in 1024. bertlab
    draws from the other documents directly, so a NotNext B never shares A's document.
    """
    other = rng.randint(0, len(docs) - 2)  # one of the len(docs) - 1 others...
    if other >= index:
        other += 1  # ...numbered around the current one
    document = docs[other]
    segment: list[int] = []
    for sentence in document[rng.randint(0, len(document) - 1):]:
        segment.extend(sentence)
        if len(segment) >= target:
            break
    return segment
