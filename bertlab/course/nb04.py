"""Notebook 04 (the masked LM): its checkable exercises.

04.1 computes its answer from `mask_tokens`'s own defaults at check time; 04.2 runs `mask_tokens` on a
sequence of its own; 04.3 runs bertlab-mini on the learner's sentence and judges what it does.
"""

from __future__ import annotations

import inspect

import torch

from ..pretraining.masking import REPLACE_BERT, mask_tokens
from .answers import rounded_message, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, loaded, not_a, right, wrong


def _recipe() -> tuple[float, float, float, float]:
    """(probability, mask, random, keep): mask_tokens's defaults, the paper's recipe."""
    p = inspect.signature(mask_tokens).parameters["probability"].default
    return (p, *REPLACE_BERT)


@exercise("04.1", "What share of all the tokens that may be chosen ends up as [MASK]?", difficulty=1,
          importance=3, minutes=5,
          expects="a float between 0 and 1, to two decimals: over a large corpus, the share of the non-special "
                  "tokens that the model sees as [MASK]",
          hints=["Two steps: first a token must be chosen, then a chosen token must become [MASK].",
                 "The two shares multiply: 15 % chosen, and 80 % of those replaced by [MASK].",
                 "In the corpus cell: int(to_mask.sum()) / int(candidates.sum())"])
def _(answer):
    value = as_number(answer)
    if value is None:
        return not_a(answer, float, what="a number between 0 and 1")
    p, to_mask, to_random, keep = _recipe()
    truth = p * to_mask
    said = to_decimals(value, truth, 2)
    if said == "rounded":
        return wrong(rounded_message(2), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(2), kind="cut off, not rounded")
    if said == "right":
        return right("the model sees [MASK] in about one token in eight; it must predict about one in seven")
    if abs(value / 100 - truth) <= 0.003:
        return wrong("give a share between 0 and 1, not a percentage", kind="off by a factor of 100")
    for other, message, kind in (
            (to_mask, "that is the share of the *chosen* tokens; the question asks about all the tokens",
             "share of the chosen, not of all"),
            (p, "that is the share chosen for prediction; not all of them become [MASK]", "chosen, not masked"),
            (p * to_random, "that is the share replaced by a random token", "the random share"),
            (p * keep, "that is the share chosen but left unchanged", "the unchanged share"),
            (p * (to_mask + to_random), "that counts the random replacements as well", "counted random as masked")):
        if abs(value - other) <= 0.003:
            return wrong(message, kind=kind)
    return wrong("multiply the share chosen by the share of those that become [MASK]", kind="off")


@exercise("04.2", "mode='bert', max_predictions=20: how many tokens are chosen in a 200-token sequence?",
          difficulty=1, importance=2, minutes=5,
          expects="an int: how many positions mask_tokens(..., mode='bert') chooses in a sequence of 200 tokens "
                  "([CLS] + 198 word pieces + [SEP]) with the default max_predictions",
          hints=["mode='bert' chooses round(15 % of the candidate tokens), but Google stored the positions in a "
                 "fixed-size array.",
                 "[CLS] and [SEP] are never candidates, and the count is capped at max_predictions.",
                 "min(max_predictions, round(0.15 × 198)); or build a (1, 200) tensor of word ids between [CLS] "
                 "and [SEP] and count (labels != -100)"])
def _(answer):
    answer, bad = whole_or_wrong(answer)
    if bad:
        return bad
    _, tokenizer = loaded("bertlab-tiny")
    word = tokenizer.token_to_id("the")
    ids = torch.tensor([[tokenizer.cls_id] + [word] * 198 + [tokenizer.sep_id]])                 # (1, 200)
    _, labels = mask_tokens(ids, tokenizer, mode="bert", generator=torch.Generator().manual_seed(0))
    truth = int((labels != -100).sum())
    p = inspect.signature(mask_tokens).parameters["probability"].default
    if answer == truth:
        return right("the cap binds: 15 % of a 512-token sequence is about 76 positions, so Google raised "
                     "max_predictions_per_seq with the length")
    if answer in (round(p * 198), round(p * 200), int(p * 200)):
        return wrong("that is 15 % of the tokens; in mode='bert' the count is also capped by max_predictions",
                     kind="forgot the cap")
    if answer > truth:
        return wrong("mode='bert' never chooses more than max_predictions", kind="over the cap")
    return wrong("run mask_tokens on a 200-token row in mode='bert' and count the labels that are not -100",
                 kind="off")


@exercise("04.3", "Find a sentence where bertlab-mini's layer 5 and layer 6 disagree on the [MASK]", difficulty=2,
          importance=2, minutes=15,
          expects="a str: a sentence with exactly one [MASK], for which fill_mask(..., by_layer=True) gives a "
                  "different first guess at layer 5 than at layer 6",
          hints=["The notebook's letter sentence has layer 5 on 'we' and layer 6 on 'he'; find your own.",
                 "Sentences whose gap needs a word chosen late (a pronoun, a verb agreeing with a far subject) "
                 "often change their first guess in the last layer.",
                 "Loop over a few sentences: r = bertlab.fill_mask(model, tokenizer, s, by_layer=True); keep s "
                 "when r.by_layer[4][0][0].token != r.by_layer[5][0][0].token"])
def _(answer):
    if (bad := not_a(answer, str, what="a sentence (a str) with one [MASK]")):
        return bad
    n = answer.count("[MASK]")
    if n == 0 and "[mask]" in answer.lower():
        return wrong("the tokenizer knows the mask only as [MASK], in capitals", kind="no [MASK]")
    if n != 1:
        return wrong(f"the sentence needs exactly one [MASK], it has {n}", kind="no single [MASK]" if n else "no [MASK]")
    if "She opened the [MASK]" in answer or "folded the letter" in answer:
        return wrong("find a sentence of your own, not one of the notebook's", kind="the notebook's sentence")
    from ..probe import fill_mask
    model, tokenizer = loaded("bertlab-mini")
    try:
        result = fill_mask(model, tokenizer, answer, top_k=1, by_layer=True)
    except ValueError as e:
        return wrong(str(e), kind="not a sentence the model can read")
    five, six = result.by_layer[-2][0][0].token, result.by_layer[-1][0][0].token
    if five != six:
        return right(f"layer 5 says {five!r}, layer 6 {six!r}: the last layer still changes the model's mind")
    return wrong(f"here both layers guess {six!r}: try a gap whose word depends on something far away",
                 kind="the layers agree")
