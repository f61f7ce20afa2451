"""Notebook 10 (inside the model): answers to its checkable exercises, and known wrong answers.

10.4 (replace a head's z with another sentence's: activation patching) leads into notebook 12 and is open
here; 10.5 (head importance averaged over five sentences) is open on purpose: which sentences, and whether a
ranking is stable, is the point.
"""

import math

import torch

import bertlab

TEXT = "She deposited her money in the [MASK] on Monday."


def ex_10_1():
    def mean_ablate(head):
        def fn(z, name):                              # z: (B, heads, T, head_dim)
            z = z.clone()
            z[:, head] = z[:, head].mean(dim=1, keepdim=True)
            return z
        return fn
    return mean_ablate


def wrong_10_1():
    def zero(head):
        def fn(z, name):
            z = z.clone()
            z[:, head] = 0
            return z
        return fn

    def wrong_axis(head):
        def fn(z, name):
            z = z.clone()
            z[:, head] = z[:, head].mean(dim=2, keepdim=True)
            return z
        return fn

    def forgets_to_return(head):
        def fn(z, name):
            return z
        return fn

    def whole_layer(head):
        def fn(z, name):
            return z.mean(dim=2, keepdim=True).expand_as(z).clone()
        return fn
    def batch_mixed(head):                  # a mean over the batch as well: fine for one sentence, wrong for two
        def fn(z, name):
            z = z.clone()
            z[:, head] = z[:, head].mean(dim=(0, 1), keepdim=True)
            return z
        return fn
    def the_checks_head(head):              # ignores its head: right for head 5 only
        return ex_10_1()(5)

    def first_z_again(head):                # hands back the first z it made, whatever it is given next
        made = []

        def fn(z, name):
            if not made:
                made.append(ex_10_1()(head)(z, name))
            return made[0].clone()
        return fn
    return [(zero, "zero ablation"), (wrong_axis, "the wrong axis"), (batch_mixed, "the batch"), (forgets_to_return, "nothing changed"),
            (whole_layer, "only head"), (lambda head: 3, "not a hook"), ("mean_ablate", "function itself"),
            (the_checks_head, "head 9 of layer 4"), (first_z_again, "sentences of the check's own")]


def _loss(model, tokenizer, heads):
    enc = tokenizer(TEXT)
    m = enc.input_ids.index(tokenizer.mask_id)
    with torch.no_grad(), bertlab.ablate(model, heads):
        logits = model(**enc).prediction_logits[0, m]
    return float(-logits.log_softmax(-1)[tokenizer.token_to_id("bank")])


def ex_10_2():
    """Both heads off in one run, minus the baseline loss."""
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    model.eval()
    return _loss(model, tokenizer, [(5, 10), (5, 7)]) - _loss(model, tokenizer, [])


def wrong_10_2():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    model.eval()
    base = _loss(model, tokenizer, [])
    singles = _loss(model, tokenizer, [(5, 10)]) + _loss(model, tokenizer, [(5, 7)]) - 2 * base
    both = ex_10_2()
    return [(singles, "the sum"), (both + base, "loss, not rise"), (-both, "sign"), (0.0, "off"), ("1.2", "a number"),
            (round(both, 1), "rounded further than asked"), (math.trunc(both * 100) / 100, "cut off after two decimals"),
            (round(_loss(model, tokenizer, [(5, 10)]) - base, 2), "one head only")]


def ex_10_3():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    model.eval()
    s = bertlab.head_importance(model, tokenizer, "Tom went to the [MASK] to open a savings account.",
                                targets=["bank"]).scores
    return divmod(int(s.argmin()), s.shape[1])


def wrong_10_3():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    s = bertlab.head_importance(model.eval(), tokenizer, "Tom went to the [MASK] to open a savings account.",
                                targets=["bank"]).scores
    return [(divmod(int(s.argmax()), s.shape[1]), "the most important"),
            ((0, 0), "not the most" if s[0, 0] < 0 else "does not lower"),
            ((6, 0), "no such head"), ("4, 11", "pair of ints")]
