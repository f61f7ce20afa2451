"""Notebook 06 (pre-training live): its checkable exercises.

06.1 and 06.3 compute their answers at check time (from bertlab's own schedule function, from the config);
06.2 runs the learner's entropy function on attention rows of the check's own. No answer is stored.
"""

from __future__ import annotations

import math

import torch

from .answers import library_call, rounded_message, to_decimals, truncated_message
from .registry import as_number, exercise, not_a, ratio_kind, right, run_learner, wrong

_STEPS, _PEAK = 150, 1e-3                    # the notebook's run: 150 steps, peak 1e-3, warm-up 10 % of the steps


@exercise("06.1", "The learning rate at the halfway stop", difficulty=1, importance=2, minutes=5,
          expects="a float, to three significant figures (e.g. 1.23e-4): the learning rate of step 75 of the "
                  "notebook's 150-step run",
          hints=["The schedule warms up linearly over the first 10 % of the steps, then decays linearly to 0 at "
                 "the last step.",
                 "At step 75 the warm-up (15 steps) is over; the decay runs from the peak at step 15 to 0 at step "
                 "150.",
                 "peak × (150 − 75) / (150 − 15)"])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number (a learning rate)")
    from ..optim import warmup_count
    from ..pretraining.schedule import lr_at
    warmup = warmup_count(_STEPS, 0.1)                                    # the notebook's run: pretrain's default
    candidates = [lr_at(s, _STEPS, warmup, _PEAK) for s in (74, 75)]      # step 75 counted from 1 or from 0
    # compared at the three significant figures asked for, as a decimals question is compared at its decimals:
    # a 0.5 % tolerance used to pass 5.54e-4 … 5.58e-4 and the cut-off 5.55e-4 for 5.5556e-4
    said = [to_decimals(x, c, 2 - math.floor(math.log10(c))) for c in candidates]
    if "right" in said:
        return right("past the peak and decaying: a stop and a resume land on the same line, so the resumed run "
                     "continues the schedule exactly")
    if "truncated" in said:
        return wrong("that is the right number with its digits cut off after three significant figures: round it to "
                     "three significant figures instead", kind="cut off, not rounded")
    if any(abs(x - float(f"{c:.1e}")) < 1e-12 or abs(x - float(f"{c:.0e}")) < 1e-12 for c in candidates):
        return wrong("that is the right number rounded further than asked: give three significant figures",
                     kind="rounded too far")
    if abs(x - _PEAK) < 1e-9:
        return wrong("that is the peak; after the warm-up the learning rate decays", kind="the peak")
    if abs(x - _PEAK * (_STEPS - 75) / _STEPS) < 1e-7:
        return wrong("the decay starts after the warm-up, at step 15, not at step 0", kind="decay from step 0")
    if abs(x - 1e-4 * (_STEPS - 75) / (_STEPS - warmup)) < 1e-7:
        return wrong("that uses the paper's peak (1e-4); the notebook's run peaks at 1e-3", kind="the paper's peak")
    kind = ratio_kind(x, candidates[1])
    return wrong("linear from the peak at the end of the warm-up down to 0 at the last step", kind=kind or "off")


@exercise("06.2", "The entropy of an attention row, in nats", difficulty=1, importance=2, minutes=10,
          expects="a function entropy(row) → float: row is a 1-D tensor of attention weights that sum to 1",
          hints=["Entropy is −Σ a log a over the row, with the natural log, and 0 · log 0 counted as 0.",
                 "torch.log of a weight of exactly 0 is −inf, and 0 × −inf is nan: clamp the weights first.",
                 "-(row * row.clamp_min(1e-12).log()).sum()"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (entropy, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    if (name := library_call(answer, torch.distributions.Categorical.entropy, "entr")):
        return wrong(f"your function hands the work to torch ({name}): write −Σ a log a yourself, with the natural "
                     "log and the zero weights handled", kind="the library's function")
    g = torch.Generator().manual_seed(6)
    rows = [torch.full((19,), 1 / 19), torch.softmax(torch.randn(12, generator=g) * 3, -1),
            torch.tensor([0.0, 1.0, 0.0, 0.0]), torch.tensor([0.5, 0.5, 0.0])]
    for row in rows:
        out, bad = run_learner(answer, row.clone())
        if bad:
            return bad
        value = as_number(out)
        if value is None:
            return wrong(f"return one number (a float or a 0-d tensor), got {type(out).__name__}", kind="wrong type")
        truth = float(-(row * row.clamp_min(1e-12).log()).sum())
        if math.isnan(value):
            return wrong("a row with a weight of exactly 0 gives nan: 0 × log 0 must count as 0 (clamp the weights "
                         "before the log)", kind="nan at a zero weight")
        if abs(value - truth) < 1e-4:
            continue
        if truth and abs(value - truth / math.log(2)) < 1e-4:
            return wrong("that is in bits (log base 2); the notebook's entropies are in nats (natural log)",
                         kind="bits, not nats")
        if abs(value + truth) < 1e-4:
            return wrong("the sign is flipped: entropy is minus the sum of a log a", kind="sign")
        return wrong("compare with −Σ a log a on a row of your own, e.g. an even row over T tokens gives ln T",
                     kind="off")
    return right("an even row over 19 tokens gives ln 19 = 2.94 and a one-hot row 0: the two ends of the "
                 "notebook's entropy table")


@exercise("06.3", "The loss of a uniform guess over BERT-base's vocabulary", difficulty=1, importance=2, minutes=5,
          expects="a float, to two decimals: the masked-LM cross-entropy, in nats, of a model that gives every WordPiece of BERT-base "
                  "the same probability",
          hints=["Every one of the V pieces gets probability 1 / V, the right one included.",
                 "The cross-entropy is −log of the probability given to the right token, with the natural log.",
                 "math.log(bertlab.BertConfig.preset('base').vocab_size)"])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number (a loss in nats)")
    from ..config import BertConfig
    V = BertConfig.preset("base").vocab_size
    truth = math.log(V)
    said = to_decimals(x, truth, 2)
    if said == "rounded":
        return wrong(rounded_message(2), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(2), kind="cut off, not rounded")
    if said == "right":
        return right("the MLM loss of every run with that vocabulary starts near here: a full softmax over the "
                     "vocabulary makes the number comparable from run to run")
    if abs(x - math.log2(V)) < 0.005:
        return wrong("that is in bits (log base 2); losses in torch are in nats", kind="bits, not nats")
    if abs(x - math.log10(V)) < 0.005:
        return wrong("that is log base 10; the cross-entropy uses the natural log", kind="log base 10")
    if abs(x - math.log(2000)) < 0.005 or abs(x - math.log(22000)) < 0.005:
        return wrong("that is another vocabulary (the notebook's run, or bertlab-mini); the question is about "
                     "BERT-base's", kind="the wrong vocabulary")
    if 0 < x < 0.01:
        return wrong("that is the probability of one token, 1 / V; the loss is −log of it", kind="probability, not loss")
    if abs(x - math.log(30_000)) < 0.005:
        return wrong("that is for the paper's round 30,000 WordPieces; BERT-base's released vocabulary, the one "
                     "in its config and in the notebook's table, has a few hundred more", kind="the paper's round vocabulary")
    return wrong("−log(1 / V) with V the size of BERT-base's vocabulary", kind="off")
