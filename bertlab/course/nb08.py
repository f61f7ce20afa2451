"""Notebook 08 (fine-tuning): its checkable exercises.

08.1 computes its answer at check time from bertlab-mini's config and a freshly built classifier; 08.2 from
the shipped QA scores (`assets/finetune/qa_scores.json`) with bertlab's own `qa_exact_match`; 08.3 runs the
learner's SQuAD 2.0 decision function on start and end scores of the check's own and compares it with a
reference computed there. No answer is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .answers import whole_or_wrong
from .registry import as_number, exercise, loaded, not_a, right, run_learner, wrong

_N_TOPICS = 4          # the topic task's four corpus files (the notebook's TOPICS)


@exercise("08.1", "How many new parameters does the topic classifier add?", difficulty=1, importance=3, minutes=5,
          expects="an int: the number of parameters BertForSequenceClassification adds on top of bertlab-mini's "
                  "pre-trained encoder and pooler for the four topics",
          hints=["The notebook prints the new layers of the classifier: a dropout and one linear layer.",
                 "Dropout has no parameters; a linear layer from H inputs to C outputs has a weight matrix and a bias.",
                 "sum(p.numel() for p in clf.classifier.parameters())"])
def _(answer):
    answer, bad = whole_or_wrong(answer, "an int (a parameter count)")
    if bad:
        return bad
    from ..model.heads import BertForSequenceClassification
    model, _ = loaded("bertlab-mini")
    clf = BertForSequenceClassification(model.bert, num_labels=_N_TOPICS)
    truth = sum(p.numel() for p in clf.classifier.parameters())
    H = model.config.hidden_size
    whole = sum(p.numel() for p in clf.parameters())
    pooler = sum(p.numel() for p in model.bert.pooler.parameters()) if model.bert.pooler is not None else 0
    if answer == truth:
        return right(f"one linear layer: about {100 * truth / whole:.3f} % of the classifier's parameters are new; "
                     "everything else starts from pre-training, which is why a few steps are enough")
    if answer == H * _N_TOPICS:
        return wrong("that is the weight matrix alone; the linear layer has a bias per class too", kind="forgot the bias")
    if answer == truth + pooler:
        return wrong("the pooler (dense + tanh on [CLS]) is not new: bertlab-mini's pooler was pre-trained with NSP",
                     kind="counted the pooler")
    if answer == whole:
        return wrong("that is every parameter of the classifier; the question asks for the new ones",
                     kind="the whole model")
    if answer in (H * 2 + 2, H + 1, H * 2):
        return wrong("that is another task's head (QA or multiple choice); the topic task has four classes",
                     kind="the wrong head")
    return wrong("count the parameters of the layer the classifier adds after the pooled output", kind="off")


def _qa_scored(split):
    """The notebook's `scored(questions)`: (span said, ŝ_ij, s_null, gold span) per stored question."""
    path = Path(__file__).resolve().parents[1] / "assets" / "finetune" / "qa_scores.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    return [((1, 1) if q["span_is_gold"] else (-1, -1), q["s_best"], q["s_null"], (1, 1) if q["answer"] else (0, 0))
            for q in run[split]]


@exercise("08.2", "Exact match with a stricter threshold", difficulty=1, importance=2, minutes=5,
          expects="a float between 0 and 1, to three decimals: exact match on the 200 stored test questions "
                  "with τ = 1.0",
          hints=["The notebook's last QA cell prints exact match for four values of τ; add one.",
                 "A larger τ answers only when the best span beats [CLS] by more than 1: fewer answers.",
                 "qa_exact_match(scored(qa_run['test']), 1.0)"])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number between 0 and 1 (an exact-match score)")
    from ..finetuning import qa_exact_match
    test = _qa_scored("test")
    truth = qa_exact_match(test, 1.0)
    if abs(x - truth) < 5e-4:
        zero = qa_exact_match(test, 0.0)
        return right(f"compare it with τ = 0: a stricter threshold says 'no answer' more often, which "
                     f"{'helps' if truth > zero else 'costs more than it helps'} here")
    if abs(x - 100 * truth) < 5e-2:
        return wrong("that is a percentage; give a share between 0 and 1", kind="percent, not share")
    if abs(x - qa_exact_match(test, -1.0)) < 5e-4:
        return wrong("that is τ = −1.0: the rule answers when ŝ_ij > s_null + τ, so a positive τ makes it stricter",
                     kind="the sign of τ")
    answerable = [q for q in test if q[3] != (0, 0)]
    unanswerable = [q for q in test if q[3] == (0, 0)]
    if abs(x - qa_exact_match(answerable, 1.0)) < 5e-4 or abs(x - qa_exact_match(unanswerable, 1.0)) < 5e-4:
        return wrong("that is one group of questions only; score all 200 test questions", kind="one group only")
    if abs(x - qa_exact_match(_qa_scored("val"), 1.0)) < 5e-4:
        return wrong("that is the validation split; the question asks for the test questions", kind="the wrong split")
    if abs(x - qa_exact_match(test, 0.0)) < 5e-4:
        return wrong("that is τ = 0; use τ = 1.0", kind="the wrong threshold")
    return wrong("run qa_exact_match on the scored test questions with τ = 1.0", kind="off")


# ---- 08.3: the SQuAD 2.0 decision --------------------------------------------------------------------------

def _decide(start, end, tau, *, first=1, ordered=True):
    """Reference (and its known mistakes): the best span (i, j), i ≤ j, or (0, 0) when [CLS] wins by τ."""
    T = start.shape[0]
    s = start[:, None] + end[None, :]                                                      # (T, T)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = (i >= first) & (j >= first) & ((j >= i) if ordered else torch.ones_like(s, dtype=torch.bool))
    s = s.masked_fill(~allowed, float("-inf"))
    k = int(s.flatten().argmax())
    best, span = float(s.flatten()[k]), (k // T, k % T)
    null = float(start[0] + end[0])
    return span if best > null + tau else (0, 0)


def _cases():
    g = torch.Generator().manual_seed(8)
    cases = []
    for T in (5, 9, 16, 16, 30, 30, 30, 12):
        start, end = torch.randn(T, generator=g) * 3, torch.randn(T, generator=g) * 3
        for tau in (-2.0, 0.0, 1.5):
            cases.append((start, end, tau))
    # the null score just below and just above the best span's, so τ decides
    start, end = torch.tensor([1.0, 0.2, 3.0, -1.0, 0.5]), torch.tensor([1.0, -2.0, 0.1, 2.0, 0.3])
    cases += [(start, end, 2.5), (start, end, 3.5), (start, end, 0.0), (start, end, -3.5)]
    # [CLS] far ahead: 'no answer' whatever a moderate τ
    start, end = torch.tensor([5.0, -1.0, 0.5, 0.0]), torch.tensor([5.0, 0.2, -1.0, 0.4])
    cases += [(start, end, 0.0), (start, end, -2.0)]
    # a case where the two argmaxes give an end before the start
    start, end = torch.tensor([0.0, -3.0, -3.0, 4.0]), torch.tensor([0.0, 1.0, 3.0, -3.0])
    cases.append((start, end, 0.0))
    return cases


@exercise("08.3", "The SQuAD 2.0 rule, as a function", difficulty=2, importance=3, minutes=15,
          expects="a function decide(start, end, tau) → (i, j): start and end are (T,) tensors of start and end "
                  "scores with token 0 = [CLS] and tokens 1 … T−1 the passage; return the best span (i, j) with "
                  "1 ≤ i ≤ j, or (0, 0) for 'no answer' unless the span's score beats s_null + tau",
          hints=["s_null = start[0] + end[0]; a span (i, j) scores start[i] + end[j]; only spans inside the passage, "
                 "with the end not before the start, count.",
                 "Build the (T, T) table start[:, None] + end[None, :], mask every (i, j) with i < 1 or j < i to −∞, "
                 "and take its argmax.",
                 "k = int(s.flatten().argmax()); span = (k // T, k % T); return span if s.flatten()[k] > "
                 "start[0] + end[0] + tau else (0, 0)"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (decide, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    cases = _cases()
    said = []
    for start, end, tau in cases:
        out, bad = run_learner(answer, start.clone(), end.clone(), tau)
        if bad:
            return bad
        try:
            pair = tuple(int(x) for x in out)
        except (TypeError, ValueError):
            return wrong(f"return a pair of token positions (i, j), got {out!r}", kind="wrong type")
        if len(pair) != 2:
            return wrong(f"return a pair of token positions (i, j), got {out!r}", kind="wrong type")
        said.append(pair)
    if said != [_decide(s, e, t) for s, e, t in cases]:
        mistakes = [  # (a wrong rule, its diagnosis, its kind): a learner's function that is one of these everywhere
            (lambda s, e, t: _decide(s, e, 0.0), "your function ignores τ: with τ > 0 it must say 'no answer' more "
             "often, with τ < 0 less often", "τ ignored"),
            (lambda s, e, t: _decide(s, e, -t), "τ works the other way: answer a span only when it beats s_null + τ",
             "the sign of τ"),
            (lambda s, e, t: _decide(s, e, t, first=0), "token 0 is [CLS], the null answer: a real span starts at "
             "token 1 or later", "[CLS] as a span"),
        ]
        for rule, message, kind in mistakes:
            if said == [rule(s, e, t) for s, e, t in cases]:
                return wrong(message, kind=kind)
        for (start, end, tau), pair in zip(cases, said):
            truth = _decide(start, end, tau)
            if pair == truth:
                continue
            if pair[0] > pair[1]:
                return wrong("an answer cannot end before it starts: only spans with i ≤ j count (choosing the start "
                             "and the end separately can give j < i)", kind="end before start")
            if pair != (0, 0) and truth == (0, 0):
                return wrong("on some inputs [CLS] wins (the best span does not beat s_null + τ) and your function "
                             "still answers a span", kind="answered where there is none")
            return wrong(f"on a passage of {start.shape[0] - 1} tokens at τ = {tau} your answer is not the rule's: "
                         "the best span by start[i] + end[j] with 1 ≤ i ≤ j, unless [CLS] wins by τ",
                         kind="not the best span")
    return right("that is the rule the paper used for SQuAD 2.0; τ is then chosen on the dev set to maximise F1 "
                 "(the notebook's choose_tau maximises exact match)")
