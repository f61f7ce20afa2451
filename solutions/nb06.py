"""Notebook 06 (pre-training live): answers to its checkable exercises, and known wrong answers.

06.4 (resume with more steps: why the schedule jumps), 06.5 (the paper's peak, lr=1e-4) and 06.6 (a longer
run with a sentence of your own) are open on purpose: they are runs to watch and explain, with no single
number to check.
"""

import math

import torch

import bertlab
from bertlab.pretraining.schedule import lr_at


def ex_06_1():
    """Step 75 of 150, warm-up 15 steps, peak 1e-3: on the decaying line."""
    return lr_at(75, 150, 150 // 10, 1e-3)


def wrong_06_1():
    return [(1e-3, "the peak"), (1e-3 * 75 / 150, "decay from step 0"), (1e-4 * 75 / 135, "the paper's peak"),
            (2 * lr_at(75, 150, 15, 1e-3), "factor of 2"), ("5e-4", "a number"),
            (float(f"{lr_at(75, 150, 15, 1e-3):.1e}"), "rounded further than asked"),
            (math.trunc(lr_at(75, 150, 15, 1e-3) * 1e6) / 1e6, "cut off after three significant figures"),
            (5.58e-4, "linear from the peak"), (5.54e-4, "linear from the peak")]   # within 0.5 %, wrong at 3 s.f.


def ex_06_2():
    def entropy(row):
        return -(row * row.clamp_min(1e-12).log()).sum()
    return entropy


def _known_wrong_06_2():
    def bits(row):
        return -(row * row.clamp_min(1e-12).log2()).sum()

    def naive(row):
        return -(row * row.log()).sum()

    def positive(row):
        return (row * row.clamp_min(1e-12).log()).sum()

    def as_list(row):
        return [1.0]
    def torch_entropy(row):                         # torch's own entropy does the exercise
        return torch.distributions.Categorical(probs=row).entropy()

    def torch_entr(row):
        return torch.special.entr(row).sum()
    return [(bits, "bits, not nats"), (naive, "nan"), (positive, "sign"), (as_list, "one number"),
            (lambda row: row.max(), "ln t"), ("entropy", "function itself"),
            (torch_entropy, "library's function"), (torch_entr, "library's function")]


def ex_06_3():
    return math.log(bertlab.BertConfig.preset("base").vocab_size)


def wrong_06_3():
    V = bertlab.BertConfig.preset("base").vocab_size
    return [(math.log2(V), "bits"), (math.log10(V), "base 10"), (math.log(2000), "wrong vocabulary"),
            (1 / V, "probability"), (V, "−log(1 / v)"), (torch.tensor([1.0, 2.0]), "a number"),
            (round(math.log(V), 1), "rounded further than asked"),
            (round(math.log(30_000), 2), "paper's round vocabulary"),
            (math.trunc(math.log(V) * 100) / 100, "cut off after two decimals")]


def wrong_06_2():
    """06.2's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_06_2() + _edits_06_2()


def _edits_06_2():
    def clamps_in_place(row):                   # right entropy, but clamp_ changes the row's zero weights
        row.clamp_(min=1e-12)
        return -(row * row.log()).sum()
    return [(clamps_in_place, "in place")]
