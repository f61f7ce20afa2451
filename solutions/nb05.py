"""Notebook 05 (next-sentence prediction): answers to its checkable exercises, and known wrong answers.

05.5 (harder negatives from the same file) is open on purpose: whether bertlab-mini's accuracy drops, and
why, is the point, and there is no single number to check.
"""

import math
import random
from pathlib import Path

import torch

import bertlab
from bertlab.pretraining import read_documents


def ex_05_1():
    """Neighbouring sentences, in order (0) or swapped (1) by a coin flip."""
    def order_pairs(document):
        rng = random.Random(len(document))
        return [(document[i], document[i + 1], 0) if rng.random() < 0.5 else (document[i + 1], document[i], 1)
                for i in range(len(document) - 1)]
    return order_pairs


def _known_wrong_05_1():
    def reversed_labels(d):
        return [(d[i], d[i + 1], 1) if i % 2 else (d[i + 1], d[i], 0) for i in range(len(d) - 1)]

    def far_apart(d):
        return [(d[0], d[-1], 0)] if len(d) > 2 else [(d[0], d[1], 0)]

    def always_in_order(d):
        return [(d[i], d[i + 1], 0) for i in range(len(d) - 1)]

    def joined(d):
        return [(" ".join(d[:1]), " ".join(d[1:]), 0)]

    def crashes(d):
        return d[99]

    return [(reversed_labels, "labels reversed"), (far_apart, "neighbours"), (always_in_order, "one label"),
            (joined, "document's sentences"), (crashes, "raised IndexError"), ([("a", "b", 0)], "function itself")]


def _heldout():
    corpus = Path(bertlab.__file__).parent / "assets" / "corpus" / "heldout"
    return list(read_documents(sorted(corpus.glob("en_*.txt"))))


def _share(max_len=64):
    _, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    made = bertlab.make_pairs(_heldout(), tokenizer, max_len=max_len, generator=torch.Generator().manual_seed(0))
    return sum(e.next_sentence_label for e in made) / len(made)


def ex_05_2():
    """Label 1 (NotNext) over Google's pairs from the held-out documents at 64 tokens."""
    return _share(64)


def wrong_05_2():
    s = _share(64)
    return [(100 * s, "percent"), (1 - s, "isnext share"), (0.5, "balance=True"), (_share(128), "128"),
            (0.3, "count label 1"), ("0.6", "a number"), (round(s, 2), "rounded further than asked"),
            (math.trunc(s * 1000) / 1000, "cut off after three decimals")]


STOP = set("the and was were that with from this they their them have has had for his her she him you your are "
           "but not all one two into out over then when what there here very some just more also about after "
           "before would could will which".split())


def ex_05_3():
    """Shared words of four letters or more, frequent words left out."""
    def same_topic(a, b):
        def words(t):
            return {w for w in (x.strip(".,;:!?\"'()") for x in t.split())
                    if len(w) >= 4 and w.isalpha() and w not in STOP}
        return bool(words(a) & words(b))
    return same_topic


def wrong_05_3():
    def words4(t):
        return {w for w in (x.strip(".,;:!?\"'()") for x in t.split()) if len(w) >= 4 and w.isalpha()}
    return [(lambda a, b: True, "same answer for every pair"),
            (lambda a, b: not (words4(a) & words4(b)), "below chance"),
            (lambda a, b: bool(words4(a) & words4(b)), "reach 0.70"),
            (lambda a, b: "yes", "true (isnext) or false"),
            ("same_topic", "function itself"), (_asks_the_model, "runs a model")]


def _asks_the_model(a, b):
    """A "rule" that asks bertlab-mini's NSP head: the exercise is about how far a rule with no model gets."""
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    return bertlab.next_sentence(model.eval(), tokenizer, a, b) > 0.5


def ex_05_4():
    """One hidden-size vector per pair: 8 × 384."""
    model, _ = bertlab.load("bertlab-mini", device="cpu")
    return 8 * model.config.hidden_size


def wrong_05_4():
    H = bertlab.load("bertlab-mini", device="cpu")[0].config.hidden_size
    return [(H, "one pair"), (16, "logits"), (8 * 768, "bert-base"), (8 * 22 * H, "every token"), (4 * H, "factor"),
            (8.0 * H, "an int"),
            (8 * bertlab.load("bertlab-tiny", device="cpu")[0].config.hidden_size, "bertlab-tiny")]   # not 'a factor of 3'


def wrong_05_1():
    """05.1's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_05_1() + _edits_05_1()


def _edits_05_1():
    def shuffles_the_document(document):        # right pairs, but the caller's document is reversed
        out = ex_05_1()(list(document))
        document.reverse()
        return out
    return [(shuffles_the_document, "in place")]
