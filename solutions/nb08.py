"""Notebook 08 (fine-tuning): answers to its checkable exercises, and known wrong answers.

08.4 (the random start given 200 steps) and 08.5 (single middle layers as features) are open on purpose: the
learner runs them and the question is what the result means.
"""

import json
from pathlib import Path

import torch

import bertlab
from bertlab.finetuning import qa_exact_match


def _classifier():
    model, _ = bertlab.load("bertlab-mini", device="cpu")
    return bertlab.BertForSequenceClassification(model.bert, num_labels=4)


def ex_08_1():
    """The new layer of the notebook's classifier: one linear layer, H × 4 weights and 4 biases."""
    return sum(p.numel() for p in _classifier().classifier.parameters())


def wrong_08_1():
    clf = _classifier()
    H = clf.config.hidden_size
    pooler = sum(p.numel() for p in clf.bert.pooler.parameters())
    return [(H * 4, "forgot the bias"), (H * 4 + 4 + pooler, "counted the pooler"),
            (sum(p.numel() for p in clf.parameters()), "the whole model"), (2 * H + 2, "the wrong head"),
            (1.5, "an int")]


def _scored(split):
    run = json.loads((Path(bertlab.__file__).parent / "assets" / "finetune" / "qa_scores.json").read_text("utf-8"))
    return [((1, 1) if q["span_is_gold"] else (-1, -1), q["s_best"], q["s_null"], (1, 1) if q["answer"] else (0, 0))
            for q in run[split]]


def ex_08_2():
    return qa_exact_match(_scored("test"), 1.0)


def wrong_08_2():
    test = _scored("test")
    answerable = [q for q in test if q[3] != (0, 0)]
    return [(100 * qa_exact_match(test, 1.0), "percent"), (qa_exact_match(test, -1.0), "the sign of τ"),
            (qa_exact_match(answerable, 1.0), "one group only"), (qa_exact_match(_scored("val"), 1.0), "the wrong split"),
            (qa_exact_match(test, 0.0), "the wrong threshold"), ("0.7", "a number")]


def ex_08_3():
    def decide(start, end, tau):
        T = start.shape[0]
        s = start[:, None] + end[None, :]                                  # (T, T): span (i, j) scores
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        s = s.masked_fill((i < 1) | (j < i), float("-inf"))                # inside the passage, end ≥ start
        k = int(s.flatten().argmax())
        span = (k // T, k % T)
        return span if s.flatten()[k] > start[0] + end[0] + tau else (0, 0)
    return decide


def _known_wrong_08_3():
    right = ex_08_3()

    def argmaxes(start, end, tau):          # start and end chosen separately: the end may come first
        i, j = int(start[1:].argmax()) + 1, int(end[1:].argmax()) + 1
        return (i, j) if start[i] + end[j] > start[0] + end[0] + tau else (0, 0)

    def with_cls(start, end, tau):          # token 0 allowed as a span
        T = start.shape[0]
        s = start[:, None] + end[None, :]
        s = s.masked_fill(torch.arange(T)[None, :] < torch.arange(T)[:, None], float("-inf"))
        k = int(s.flatten().argmax())
        return (k // T, k % T) if s.flatten()[k] > start[0] + end[0] + tau else (0, 0)

    return [(lambda s, e, t: right(s, e, 0.0), "τ ignored"), (lambda s, e, t: right(s, e, -t), "the sign of τ"),
            (argmaxes, "end before start"), (with_cls, "[cls]"), (lambda s, e, t: (0, 0), "not the rule's"),
            (lambda s, e, t: right(s, e, t - 100.0), "answered where there is none"),
            (lambda s, e, t: 1 / 0, "your function failed"), (right(torch.zeros(3), torch.zeros(3), 0.0), "wrong type")]


def wrong_08_3():
    """08.3's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_08_3() + _edits_08_3()


def _edits_08_3():
    def rules_out_cls_in_place(start, end, tau):  # right span, but the caller's start scores are changed
        out = ex_08_3()(start.clone(), end, tau)
        start[0] = float("-inf")
        return out
    return [(rules_out_cls_in_place, "in place")]
