"""Notebook 10 (inside the model): its checkable exercises.

10.1 runs the learner's hook on bertlab-mini with a sentence of the check's own and compares the output
with a reference hook written here; 10.2 and 10.3 compute their answers at check time by ablating heads of
bertlab-mini. No answer is stored.
"""

from __future__ import annotations

import torch

from .answers import pair, rounded_message, to_decimals, truncated_message
from .registry import as_number, exercise, head_pair, loaded, not_a, right, run_learner, wrong

_TEXT = "She deposited her money in the [MASK] on Monday."         # the notebook's sentence
_SAVINGS = "Tom went to the [MASK] to open a savings account."      # the notebook's second one
_OWN = "The children built a castle of sand by the sea."            # the check's own, for 10.1
# a second sentence of the same 13 tokens (no padding): with B = 2 a mean over the batch as well shows
_OWN_TOO = "The farmers planted a field of corn near the hill."


def _bank_loss(model, tokenizer, text: str, heads) -> float:
    """Cross-entropy of 'bank' at the [MASK] with `heads` switched off (as head_importance measures it)."""
    from ..probe import ablate
    enc = tokenizer(text)
    m = enc.input_ids.index(tokenizer.mask_id)
    with torch.no_grad(), ablate(model, list(heads)):
        logits = model(**enc).prediction_logits[0, m]
    return float(-logits.log_softmax(-1)[tokenizer.token_to_id("bank")])


def _run_with(model, tokenizer, layer: int, texts, fn):
    batch = tokenizer.batch(texts)                               # (2, 13), no padding
    with torch.no_grad(), model.bert.hooks([(f"encoder.layer.{layer}.attention.self.hook_z", fn)]):
        return model.bert(**batch).last_hidden_state


@exercise("10.1", "Mean ablation: replace a head's output by its average over the tokens", difficulty=2,
          importance=2, minutes=15,
          expects="a function mean_ablate(head) that returns a hook fn(z, name) → z, with z of shape "
                  "(B, heads, T, head_dim)",
          hints=["Start from the notebook's zero_head(head): it returns a function that changes z and returns it.",
                 "Instead of z[:, head] = 0, put in the mean of z[:, head] over the token axis (dim 1 of z[:, head]), "
                 "the same vector at every position. Clone z first.",
                 "z = z.clone(); z[:, head] = z[:, head].mean(dim=1, keepdim=True); return z"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (mean_ablate, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    model, tokenizer = loaded("bertlab-mini")
    # two heads of two layers, each hook run on two batches: a hook that hard-codes the check's head, or hands
    # back the first z it made, is right on one of them only
    for layer, head in ((2, 5), (4, 9)):
        fn, bad = run_learner(answer, head)
        if bad:
            return bad
        if not callable(fn):
            return wrong("mean_ablate(head) should return the hook function (like the notebook's zero_head does), "
                         f"got {type(fn).__name__}", kind="not a hook")
        for texts in ([_OWN, _OWN_TOO], [_OWN_TOO, _OWN]):
            verdict = _judge_hook(model, tokenizer, layer, head, fn, texts)
            if verdict is not None:
                if (layer, head, texts[0]) != (2, 5, _OWN):
                    verdict.message += f" (with head {head} of layer {layer}, on sentences of the check's own)"
                return verdict
    return right("every position now gets the head's average output: the head still adds its typical "
                 "vector, but nothing that depends on which tokens it looked at")


def _judge_hook(model, tokenizer, layer: int, head: int, fn, texts):
    """10.1 for one head and batch: a `wrong` verdict naming the mistake, or None when the hook is right."""
    def safe(z, name):
        out, bad = run_learner(fn, z.clone(), name, edits_allowed=True)   # a hook may edit z
        if bad:
            raise RuntimeError(bad.message)
        return out
    try:
        mine = _run_with(model, tokenizer, layer, texts, safe)
    except RuntimeError as e:
        return wrong(str(e), kind="your function failed")

    def reference(dims):
        def hook(z, name):
            z = z.clone()
            z[:, head] = z[:, head].mean(dim=dims, keepdim=True) if dims is not None else 0
            return z
        return hook
    if torch.allclose(mine, _run_with(model, tokenizer, layer, texts, reference(1)), atol=1e-5):
        return None
    if torch.allclose(mine, _run_with(model, tokenizer, layer, texts, reference(None)), atol=1e-5):
        return wrong("that zeroes the head, as the notebook's zero_head does; mean ablation puts in its average "
                     "over the tokens instead", kind="zero ablation")
    if torch.allclose(mine, _run_with(model, tokenizer, layer, texts, reference((0, 1))), atol=1e-5):
        return wrong("that averages over the sentences of the batch too: each sentence's head output should be its own "
                     "mean over its own tokens", kind="the batch mixed in")
    if torch.allclose(mine, _run_with(model, tokenizer, layer, texts, reference(2)), atol=1e-5):
        return wrong("that averages over head_dim, the features of the vector; average over the tokens",
                     kind="the wrong axis")
    with torch.no_grad():
        clean = model.bert(**tokenizer.batch(texts)).last_hidden_state
    if torch.allclose(mine, clean, atol=1e-6):
        return wrong("the output is unchanged: return the changed z from your hook", kind="nothing changed")
    return wrong("only head `head` should change, and it should hold its mean over the token axis at every position",
                 kind="off")


@exercise("10.2", "Two heads off at once: is the damage the sum of the two?", difficulty=2, importance=3,
          minutes=10,
          expects="a float, to two decimals: the rise in the loss of 'bank' (nats) with heads (5, 10) and (5, 7) "
                  "switched off together",
          hints=["bertlab.ablate takes a list of heads: both go in one with-block.",
                 "Compute the cross-entropy of 'bank' at the [MASK] with both heads off, and subtract the loss "
                 "with every head on (importance.baseline).",
                 "with bertlab.ablate(model, [(5, 10), (5, 7)]): logits = model(**enc).prediction_logits[0, mask_at]; "
                 "rise = -logits.log_softmax(-1)[tokenizer.token_to_id('bank')] - importance.baseline"])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number (a rise in loss, in nats)")
    model, tokenizer = loaded("bertlab-mini")
    base = _bank_loss(model, tokenizer, _TEXT, [])
    both = _bank_loss(model, tokenizer, _TEXT, [(5, 10), (5, 7)]) - base
    one = [_bank_loss(model, tokenizer, _TEXT, [head]) - base for head in ((5, 10), (5, 7))]
    singles = sum(one)
    said = to_decimals(x, both, 2)
    if said == "rounded":
        return wrong(rounded_message(2), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(2), kind="cut off, not rounded")
    if said == "right":
        more = "more" if both > singles else "less"
        return right(f"{more} than the two single rises added up: heads of one layer are not independent parts, "
                     "so one-head-at-a-time importance does not add")
    if abs(x - singles) < 0.005:
        return wrong("that is the sum of the two single-head rises; switch both off in one run and measure",
                     kind="the sum, not the joint ablation")
    if any(abs(x - r) < 0.005 for r in one):
        return wrong("that is the rise with one of the two heads off; switch both off in the same run",
                     kind="one head only")
    if abs(x - (both + base)) < 0.005:
        return wrong("that is the loss itself; the question asks for the rise above the loss with every head on",
                     kind="loss, not rise")
    if abs(x + both) < 0.005:
        return wrong("the sign is flipped: a rise is ablated loss minus baseline", kind="sign")
    return wrong("ablate (5, 10) and (5, 7) together with bertlab.ablate and compare the loss of 'bank' with the "
                 "baseline", kind="off")


@exercise("10.3", "The head whose removal helps most on the savings-account sentence", difficulty=1, importance=2,
          minutes=5,
          expects="a (layer, head) pair of bertlab-mini, counted from 0",
          hints=["head_importance(model, tokenizer, text, targets=['bank']) scores all 72 heads on a sentence.",
                 "A negative score means the loss of 'bank' fell when the head was off: look for the most "
                 "negative one, not the largest.",
                 "s = importance.scores; divmod(int(s.argmin()), s.shape[1])"])
def _(answer):
    from ..probe import head_importance
    model, tokenizer = loaded("bertlab-mini")
    head, bad = head_pair(pair(answer), model)
    if bad:
        return bad
    s = head_importance(model, tokenizer, _SAVINGS, targets=["bank"]).scores
    low, high = divmod(int(s.argmin()), s.shape[1]), divmod(int(s.argmax()), s.shape[1])
    if head == low:
        return right("without it the loss of 'bank' falls: a head can work against the right answer on one "
                     "sentence and for it on others, so judge heads over many sentences")
    if head == high:
        return wrong("that head matters most (its removal raises the loss most); the question asks for the one "
                     "whose removal helps", kind="the most important head")
    if (head[0] - 1, head[1] - 1) == low:
        return wrong("layers and heads count from 0 here", kind="counted from 1")
    if _bank_loss(model, tokenizer, _SAVINGS, [head]) < _bank_loss(model, tokenizer, _SAVINGS, []):
        return wrong("its removal does help, but another head's removal helps more", kind="not the most")
    return wrong("its removal does not lower the loss of 'bank' on this sentence", kind="off")
