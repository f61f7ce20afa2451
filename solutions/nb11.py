"""Notebook 11 (looking inside): answers to its checkable exercises, and known wrong answers.

11.3 (contextuality on 500 sentences), 11.4 (SaliencyExplorer: grad × input against integrated gradients)
and 11.5 (probe_layers on bertlab-mini) are open on purpose: each asks what a measurement means, with the
learner's own data.
"""

import torch

import bertlab
from bertlab.probe.attention_maps import merge_word_pieces
from bertlab.probe.head_types import head_types
from bertlab.probe.layers import load_probing_set


def _share():
    model, tokenizer = bertlab.load("minilm", device="cpu")
    sentences = sorted({s for s, _ in load_probing_set("senses").examples})[:40]
    return head_types(model.eval(), tokenizer, sentences).share


def ex_11_1():
    s = _share()["[CLS]"]
    return divmod(int(s.argmax()), s.shape[1])


def wrong_11_1():
    share = _share()
    sep = share["[SEP]"]
    best = ex_11_1()
    ranked = share["[CLS]"].flatten().argsort(descending=True)
    third = divmod(int(ranked[2]), share["[CLS]"].shape[1])          # the top two are both right (0.002 apart)
    return [(divmod(int(sep.argmax()), sep.shape[1]), "[sep], not [cls]"), ((best[0] + 1, best[1] + 1), "counted from 1"),
            (third, "not the top two"), ((9, 0), "no such head"), ("3, 7", "pair of ints")]


def ex_11_2():
    def merge(weights, groups):
        cols = torch.stack([weights[:, g].sum(1) for g in groups], 1)       # (T, W): keys summed
        return torch.stack([cols[g].mean(0) for g in groups])              # (W, W): queries averaged
    return merge


def _known_wrong_11_2():
    def summed(weights, groups):
        cols = torch.stack([weights[:, g].sum(1) for g in groups], 1)
        return torch.stack([cols[g].sum(0) for g in groups])

    def averaged(weights, groups):
        cols = torch.stack([weights[:, g].mean(1) for g in groups], 1)
        return torch.stack([cols[g].mean(0) for g in groups])

    def transposed(weights, groups):
        return ex_11_2()(weights, groups).T

    def thin_wrapper(weights, groups):
        # the library's own merge, handed the tokens back: the exercise is to write it
        tokens = ["w"] * weights.shape[0]
        for g in groups:
            for i in g[1:]:
                tokens[i] = "##w"
        return merge_word_pieces(weights, tokens)[1]

    return [(summed, "queries summed"), (averaged, "keys averaged"), (transposed, "transposed"),
            (lambda w, g: w, "wrong shape"), (lambda w, g: w.tolist(), "tensor"),
            (thin_wrapper, "bertlab's own merge_word_pieces"),
            (lambda w, g: w[[x[0] for x in g]][:, [x[0] for x in g]], "first piece only")]


def wrong_11_2():
    """11.2's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_11_2() + _edits_11_2()


def _edits_11_2():
    def normalises_in_place(weights, groups):    # right merge, but the caller's map is zeroed
        out = ex_11_2()(weights.clone(), groups)
        weights.zero_()
        return out
    return [(normalises_in_place, "in place")]
