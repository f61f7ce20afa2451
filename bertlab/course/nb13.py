"""Notebook 13 (features and changes): its checkable exercises.

13.1 and 13.2 run the shipped autoencoder on bertlab-mini at check time; 13.3 reads the task from the
shipped card (the script that made the mystery model wrote it there, as it writes every setting); 13.4 measures
bertlab-mini's heads at check time. No answer is stored in this file.
"""

from __future__ import annotations

import json
import math

from .answers import nearest, pair, rounded_message, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, head_pair, loaded, normalise, not_a, right, wrong

_BANK = "He took his money to the bank this morning."      # the notebook's sentence: its feature is printed there
_RIVER = "The boat drifted to the muddy bank."             # the exercise's sentence: the learner traces it


def _tasks() -> tuple[str, ...]:
    """The shipped tasks' names, read from the package (not written here)."""
    from ..finetuning import SHIPPED
    return tuple(SHIPPED)


def _sae():
    from ..inside import SparseAutoencoder, assets
    return SparseAutoencoder.load(assets()["sae"])


def _features_at_bank(text: str = _RIVER) -> list[int]:
    from ..inside import trace
    model, tokenizer = loaded("bertlab-mini")
    tokens, z = trace(model, tokenizer, _sae(), text)
    return z[tokens.index("bank")].argsort(descending=True).tolist()


@exercise("13.1", "The feature that fires most at a river 'bank'", difficulty=1, importance=2, minutes=10,
          expects="an int: the feature of the shipped autoencoder (0 up to its width − 1) largest at 'bank' in "
                  "'The boat drifted to the muddy bank.'",
          hints=["bertlab.inside.trace(model, tok, sae, text) gives the tokens and every feature's value at each, "
                 "as the notebook's cell for the money sentence does.",
                 "tokens, z = trace(model, tok, sae, 'The boat drifted to the muddy bank.'); the row of "
                 "'bank' is z[tokens.index('bank')].",
                 "Take the argmax of that row, as an int."])
def _(answer):
    answer, bad = whole_or_wrong(answer, "an int: a feature number")
    if bad:
        return bad
    width = _sae().width
    if not 0 <= answer < width:
        return wrong(f"the shipped autoencoder has features 0 to {width - 1}", kind="no such feature")
    order = _features_at_bank()
    if answer == order[0]:
        return right("now read it: its top contexts in Features(...) and the words it promotes, beside the money "
                     "sentence's feature; is either about money, about rivers, or about the token 'bank'?")
    if answer == _features_at_bank(_BANK)[0]:
        return wrong("that is the feature largest at 'bank' in the notebook's money sentence; trace the river "
                     "sentence", kind="the money sentence")
    if answer in order[1:32]:
        return wrong("that feature is active at 'bank', but not the largest one", kind="not the largest")
    from ..inside import trace
    model, tokenizer = loaded("bertlab-mini")
    tokens, z = trace(model, tokenizer, _sae(), _RIVER)
    if answer in z.argmax(-1).tolist():
        return wrong("that feature is the largest at another token of the sentence: read the row of 'bank'",
                     kind="another token")
    return wrong("read the row of 'bank' in the trace and take its largest value", kind="off")


def _loss_recovered(n: int = 40) -> float:
    """On the first `n` held-out sentences: 40 for 13.2, whose answer the notebook's 60-sentence report would print."""
    from ..inside import heldout_sentences, sae_report
    model, tokenizer = loaded("bertlab-mini")
    return sae_report(model, tokenizer, _sae(), heldout_sentences(n)).loss_recovered


@exercise("13.2", "How much of the model survives the autoencoder?", difficulty=1, importance=3, minutes=10,
          expects="a float between 0 and 1, to three decimals: the loss recovered on the first 40 held-out sentences",
          hints=["sae_report gives the MLM loss clean, with the autoencoder spliced in, and with the layer zeroed.",
                 "Loss recovered = (zeroed − spliced) / (zeroed − clean); the report computes it as .loss_recovered.",
                 "bertlab.sae_report(model, tok, sae, heldout_sentences(40)).loss_recovered, rounded to 3 decimals."])
def _(answer):
    x = as_number(answer)
    if x is None or not math.isfinite(x):
        return wrong("answer with a number, e.g. 0.5", kind="not a number")
    truth = _loss_recovered()
    said = to_decimals(x, truth, 3)          # three: the notebook's 60 and the card's 120 sentences are ≥ 0.01 away
    if said == "rounded":
        return wrong(rounded_message(3), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(3), kind="cut off, not rounded")
    if said == "right":
        return right("a reconstruction that explains most of the variance can still cost the model a visible "
                     "part of its loss: that gap is what 'loss recovered' measures")
    if abs(x / 100 - truth) < 0.006:
        return wrong("that is a percentage: give the share, between 0 and 1", kind="percent, not a share")
    if abs((1 - x) - truth) < 0.006:
        return wrong("that is the share lost, not the share recovered", kind="one minus it")
    from ..inside import load_card_rows
    card = load_card_rows().get("sae: bertlab-mini", {}).get("loss_recovered")
    found = nearest(x, [(card, "that is the card's number on 120 sentences: measure it on the first 40", "other texts"),
                        (_loss_recovered(60), "that is the notebook's number, on 60 sentences: measure it on the first 40",
                         "other texts")], 0.002)      # the two are 0.004 apart
    if found:
        return wrong(*found)
    return wrong("compute (zeroed − spliced) / (zeroed − clean) from the report on the 40 sentences", kind="off")


def _mystery_task() -> str:
    from ..inside import assets
    card = json.loads(assets()["card"].read_text(encoding="utf-8"))
    return card["variants"]["diff: fine-tuned on ?"]["settings"]["task"]


@exercise("13.3", "Which task was the mystery model fine-tuned on?", difficulty=2, importance=3, minutes=20,
          expects="a str: the name of one of the shipped tasks (bertlab.load_task's names)",
          hints=["Load the shipped diff with ModelDiff.load(assets()['diff_mystery']) and print residual and "
                 "residual_cls beside the topic model's.",
                 "In the last layer, is the change larger at [CLS] than at the average token, or smaller? Which was "
                 "it for the topic model, whose loss reads [CLS] only?",
                 "Which task's loss reads every word but never [CLS]?"])
def _(answer):
    if (bad := not_a(answer, str, what=f"a str: one of {', '.join(_tasks())}")):
        return bad
    name = normalise(answer)
    if name not in _tasks():
        return wrong(f"choose one of the shipped tasks: {', '.join(_tasks())}", kind="no such task")
    if name == _mystery_task():
        return right("the change sits at the words, not at [CLS]: the diff found the task's shape without its data, "
                     "where the lens could not")
    if name == "topic":
        return wrong("the topic model is the one the notebook shows openly; the mystery model is another",
                     kind="the open one")
    return wrong("compare where the last layer changed most, [CLS] or the words, with which positions that task's "
                 "loss reads", kind="another task")


def _heads(measure: str, k: int = 2) -> list[tuple[int, int]]:
    from ..inside import pos_corpus
    from ..probe import head_types
    model, tokenizer = loaded("bertlab-mini")
    texts, _ = pos_corpus()
    share = head_types(model, tokenizer, texts[:60]).share[measure]
    H = share.shape[1]
    return [(i // H, i % H) for i in share.flatten().argsort(descending=True)[:k].tolist()]


@exercise("13.4", "bertlab-mini's previous-token head", difficulty=1, importance=2, minutes=10,
          expects="a (layer, head) pair of bertlab-mini",
          hints=["The atlas keeps every head's share of attention on the previous token.",
                 "atlas.top('previous', 1) on the notebook's atlas (the first 60 POS sentences).",
                 "Its first entry is (layer, head, share): answer the first two."])
def _(answer):
    model, _ = loaded("bertlab-mini")
    head, bad = head_pair(pair(answer), model)
    if bad:
        return bad
    best = _heads("previous")
    if head == best[0]:
        return right("click it in the atlas view: every row looks one step to the left, in every sentence")
    if head == best[1]:
        return wrong("that is the second strongest", kind="not the top head")
    if head == _heads("next", 1)[0]:
        return wrong("that head looks at the next token, not the previous one", kind="next, not previous")
    if (head[0] - 1, head[1] - 1) == best[0]:
        return wrong("layers and heads count from 0", kind="counted from 1")
    return wrong("take the head with the largest 'previous' share", kind="off")
