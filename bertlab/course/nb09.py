"""Notebook 09 (the paper's ablations at toy scale): its checkable exercises.

09.1 and 09.2 run the learner's function on inputs of the check's own (a padded batch of token ids; pairs of
summary cells) and compare it with bertlab's own `next_token_labels` and `clear_of_noise`, run there; 09.3
computes its answer at check time from the shipped experiment card. No answer is stored.
"""

from __future__ import annotations

import math
import re

import torch

from .answers import library_call
from .registry import exercise, normalise, not_a, right, run_learner, wrong


def _batch(lengths=(7, 4, 9, 2), seed=9):
    """Token ids (B, T) with padding (id 0) at the end of the shorter rows, and their attention mask."""
    g = torch.Generator().manual_seed(seed)
    T = max(lengths)
    ids = torch.zeros(len(lengths), T, dtype=torch.long)
    mask = torch.zeros(len(lengths), T, dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(5, 500, (n,), generator=g)
        mask[b, :n] = 1
    return ids, mask


@exercise("09.1", "Next-token labels for a left-to-right model", difficulty=2, importance=3, minutes=10,
          expects="a function next_token_labels(input_ids, attention_mask) → (B, T) labels: position t's label is "
                  "the token at t + 1, and −100 (ignored by the loss) where there is no next real token",
          hints=["A masked LM's label at t is the token at t itself (where masked); a left-to-right LM's label at t "
                 "is the token that comes next.",
                 "Start from a (B, T) tensor full of −100 and fill positions 0 … T−2 with input_ids[:, 1:], but "
                 "only where the next position is a real token (attention_mask[:, 1:] == 1).",
                 "labels[:, :-1] = torch.where(attention_mask[:, 1:].bool(), input_ids[:, 1:], -100)"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (next_token_labels, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    from ..experiments.ablations import next_token_labels
    if (name := library_call(answer, next_token_labels)):
        return wrong(f"your function is, or calls, bertlab's own {name}: the exercise is to write it yourself "
                     "(the check compares with that one)", kind="the library's function")
    # two batches of different shapes: a function that hands back one stored (B, T) answer is right on one only
    for (ids, mask), where in ((_batch(), ""),
                               (_batch(lengths=(3, 6, 1), seed=10), " (on a second batch of the check's own, (3, 6))")):
        verdict = _judge_labels(answer, ids, mask, next_token_labels)
        if verdict is not None:
            verdict.message += where
            return verdict
    return right("each position predicts the next token and sees only what is left of it: the objective of "
                 "GPT and of the paper's LTR ablation")


def _judge_labels(answer, ids, mask, next_token_labels):
    """09.1 on one batch: a `wrong` verdict naming the mistake, or None when the labels are right."""
    out, bad = run_learner(answer, ids.clone(), mask.clone())
    if bad:
        return bad
    if not isinstance(out, torch.Tensor):
        return wrong(f"return a tensor of labels, got {type(out).__name__}", kind="wrong type")
    if tuple(out.shape) != tuple(ids.shape):
        return wrong(f"one label per position: shape (B, T) = {tuple(ids.shape)}, got {tuple(out.shape)}",
                     kind="wrong shape")
    truth = next_token_labels(ids, mask)
    out = out.long()
    if torch.equal(out, truth):
        return None
    if torch.equal(out, ids) or torch.equal(out, ids.masked_fill(mask == 0, -100)):
        return wrong("those are the tokens themselves: a left-to-right model predicts the *next* token",
                     kind="not shifted")
    previous = torch.full_like(ids, -100)
    previous[:, 1:] = ids[:, :-1]
    if torch.equal(out.masked_fill(mask == 0, -100), previous.masked_fill(mask == 0, -100)):
        return wrong("that labels each position with the token before it: shift the other way", kind="shifted the wrong way")
    shifted = torch.full_like(ids, -100)
    shifted[:, :-1] = ids[:, 1:]
    if torch.equal(out, shifted):
        return wrong("the last real token of a short row is asked to predict [PAD]: use the attention mask to give "
                     "it −100", kind="padding predicted")
    if torch.equal(out[truth != -100], truth[truth != -100]):
        return wrong("the real labels are right, but where there is no next real token the label must be −100 "
                     "(the loss's ignore index)", kind="not ignored")
    return wrong("position t's label is input_ids[t + 1] where t + 1 is a real token, −100 everywhere else",
                 kind="off")


def _variant_key(name: str) -> str:
    """A variant's name as 09.3 compares it: `normalise`'s form (case, quotes, a final full stop, as 00.4 and 13.3
    read a name), with spaces and hyphens dropped and "and" read as "&" ('No-NSP' is 'No NSP', 'X and Y' is 'X & Y')."""
    return re.sub(r"[\s\-]", "", re.sub(r"\band\b", "&", normalise(name)))


def _cells():
    """Pairs of summary cells {"mean", "std", "n"}, built so that every simpler rule gets one of them wrong."""
    def c(mean, std, n=3):
        return {"mean": mean, "std": std, "n": n}
    return [(c(0.50, 0.01), c(0.53, 0.01)), (c(0.50, 0.02), c(0.53, 0.02)), (c(0.50, 0.02), c(0.53, 0.00)),
            (c(0.53, 0.02), c(0.50, 0.02)), (c(0.60, 0.05), c(0.50, 0.04)), (c(0.60, 0.05), c(0.50, 0.06)),
            (c(0.60, 0.0, 1), c(0.50, 0.0, 1)), (c(0.60, 0.0, 3), c(0.50, 0.01, 1)), (c(0.44, 0.059), c(0.356, 0.0)),
            (c(0.50, 0.03), c(0.53, 0.0)), (c(0.5, 0.0), c(0.5, 0.0)), (c(0.70, 0.08), c(0.50, 0.08)),
            (c(0.50, 0.01, 2), c(0.60, 0.01, 2)), (c(0.50, 0.05), c(0.53, 0.01)),
            (c(0.50, 0.03), c(0.545, 0.04))]   # 0.045 apart: above the larger spread, below √(0.03² + 0.04²) = 0.05


@exercise("09.2", "When is a difference clear of seed noise?", difficulty=1, importance=3, minutes=5,
          expects="a function clear(a, b) → bool: a and b are summary cells {'mean', 'std', 'n'} (n = number of "
                  "seeds); True when the two means differ by more than the two standard deviations added, each "
                  "over at least two seeds",
          hints=["With one seed there is no spread to compare with: such a difference is never clear.",
                 "Compare |a['mean'] − b['mean']| with a['std'] + b['std'], strictly larger.",
                 "return a['n'] > 1 and b['n'] > 1 and abs(a['mean'] - b['mean']) > a['std'] + b['std']"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (clear, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    from ..experiments import clear_of_noise
    if (name := library_call(answer, clear_of_noise)):
        return wrong(f"your function is, or calls, bertlab's own {name}: the exercise is to write the rule "
                     "yourself (the check compares with that one)", kind="the library's function")
    said = []
    for a, b in _cells():
        out, bad = run_learner(answer, dict(a), dict(b))
        if bad:
            return bad
        if out is None or not isinstance(out, (bool, int, torch.Tensor)):
            return wrong(f"return True or False, got {out!r}", kind="wrong type")
        said.append(bool(out))
    if said != [clear_of_noise(a, b) for a, b in _cells()]:
        def gap(a, b):
            return abs(a["mean"] - b["mean"])
        mistakes = [  # (a wrong rule, its diagnosis, its kind)
            (lambda a, b: gap(a, b) > a["std"] + b["std"],
             "a cell with one seed has no spread: a difference against it cannot be called clear", "one seed"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and gap(a, b) > math.hypot(a["std"], b["std"]),
             "that combines the spreads in quadrature, as the standard deviation of a difference would; the card's "
             "rule adds them, which is stricter", "spreads in quadrature"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and gap(a, b) > max(a["std"], b["std"]),
             "compare with the two spreads added, not with one of them", "one spread"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and a["mean"] - b["mean"] > a["std"] + b["std"],
             "the difference counts in either direction: use the absolute difference", "direction"),
            (lambda a, b: a["n"] > 2 and b["n"] > 2 and gap(a, b) > a["std"] + b["std"],
             "two seeds already give a spread: the rule asks for at least two seeds, not more than two",
             "two seeds refused"),
            (lambda a, b: gap(a, b) > max(a["std"], b["std"]),
             "compare with the two spreads added, not with one of them; and a cell with one seed has no spread: "
             "a difference against it cannot be called clear", "one spread, one seed"),
            (lambda a, b: gap(a, b) > 0,
             "any two means differ a little; compare the difference with the seed spreads", "no spread"),
        ]
        for rule, message, kind in mistakes:
            if said == [bool(rule(a, b)) for a, b in _cells()]:
                return wrong(message, kind=kind)
        for (a, b), s in zip(_cells(), said):
            if s != clear_of_noise(a, b):
                return wrong(f"means {a['mean']} ± {a['std']} ({a['n']} seeds) and {b['mean']} ± {b['std']} "
                             f"({b['n']} seeds): look at this pair again", kind="off")
    return right("a plain, conservative rule for three seeds; it is not a significance test, and with more seeds "
                 "a standard error would be the better yardstick")


@exercise("09.3", "Which variant knows parts of speech best?", difficulty=1, importance=2, minutes=5,
          expects="a str: the name of the card's variant (as the card spells it) with the highest mean `pos` probe "
                  "score at its last step",
          hints=["The explorer at the end shows `pos` for every variant, group by group; or read CARD['summary'].",
                 "The summary's keys are 'variant @ step'; take each variant's last step and compare the means.",
                 "max(S, key=lambda k: S[k]['pos']['mean']) over the keys at the last step (or 'random init @ 0')"])
def _(answer):
    if (bad := not_a(answer, str, what="a str: a variant's name, e.g. 'No NSP'")):
        return bad
    from ..experiments import ablations, read_card
    card = read_card(ablations.CARD)
    last = {}
    for key, stats in card["summary"].items():
        name, step = key.rsplit(" @ ", 1)
        if "pos" in stats and int(step) >= last.get(name, (-1,))[0]:
            last[name] = (int(step), stats["pos"]["mean"])
    names = {_variant_key(n): n for n in last}
    said = names.get(_variant_key(answer))
    if said is None:
        return wrong(f"no such variant; the card's variants are: {', '.join(sorted(last))}", kind="no such variant")
    truth = max(last, key=lambda n: last[n][1])
    if said == truth:
        return right("a surprise worth a minute: why might a model that reads only leftwards, trained to predict "
                     "every next token (not 15 % of them), know parts of speech best?")
    if said == "MLM + NSP":
        return wrong("the full BERT recipe is the natural guess, but the card says otherwise: read the pos column",
                     kind="the expected winner")
    if said == "random init":
        return wrong("the never pre-trained model is the lowest, not the highest", kind="the lowest")
    return wrong(f"{said} scores {last[said][1]:.3f}; another variant scores higher", kind="not the highest")
