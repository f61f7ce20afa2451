"""Notebook 03 (self-attention): answers to its checkable exercises, and known wrong answers.

Open on purpose (no check): 03.4 (BatchNorm with a batch of one: what happens and why) and 03.5 (zero the
next-token head and measure how far the vectors move), whose point is the explanation.
"""

import math

import torch

import bertlab

TEXT = "The river bank was muddy after the rain."


def ex_03_1():
    def my_attention(q, k, v):
        w = (q @ k.T / math.sqrt(q.shape[-1])).softmax(dim=-1)       # (T_q, T_k): each row sums to 1
        return w, w @ v                                                # (T_q, d_k)
    return my_attention


def _known_wrong_03_1():
    def unscaled(q, k, v):
        w = (q @ k.T).softmax(-1)
        return w, w @ v

    def by_d(q, k, v):
        w = (q @ k.T / q.shape[-1]).softmax(-1)
        return w, w @ v

    def columns(q, k, v):
        w = (q @ k.T / math.sqrt(q.shape[-1])).softmax(0)
        return w, w @ v

    def only_weights(q, k, v):
        return ex_03_1()(q, k, v)[0]

    def torch_output(q, k, v):                      # the weights by hand, the output from torch's own attention
        w = (q @ k.T / math.sqrt(q.shape[-1])).softmax(-1)
        return w, torch.nn.functional.scaled_dot_product_attention(q, k, v)
    def keys_first(q, k, v):                        # k @ q.T: row i is key i against every query
        w = (k @ q.T / math.sqrt(q.shape[-1])).softmax(-1)
        return w, w @ v

    def by_length(q, k, v):                         # √T (the number of keys) for √d_k
        w = (q @ k.T / math.sqrt(k.shape[0])).softmax(-1)
        return w, w @ v
    return [(unscaled, "1/√d_k"), (by_d, "by d_k"), (columns, "wrong dimension"), (only_weights, "two tensors"),
            (keys_first, "keys against queries"), (by_length, "number of keys"),
            (torch_output, "library's function"),
            (torch.nn.functional.scaled_dot_product_attention, "library's function")]


def _qk():
    model, tokenizer = bertlab.load("minilm", device="cpu")
    model.eval()
    with torch.no_grad():
        _, cache = model.run_with_cache(**tokenizer(TEXT))
    p = "encoder.layer.0.attention.self."
    return cache[p + "hook_q"], cache[p + "hook_k"]


def ex_03_2():
    """Each row's largest weight, averaged over the rows, with no scaling (about 0.66; 0.26 scaled)."""
    q, k = _qk()
    return float((q[0, 3] @ k[0, 3].T).softmax(-1).max(-1).values.mean())


def wrong_03_2():
    q, k = _qk()
    scores = q[0, 3] @ k[0, 3].T
    return [(float((scores / math.sqrt(32)).softmax(-1).max(-1).values.mean()), "still scaled"),
            (float(scores.softmax(-1).max()), "whole table"), (1.0, ""), (ex_03_2() * 100, "percentage"),
            ("big", "number"), (round(ex_03_2(), 1), "rounded further than asked"),
            # head 2's rows are all one-hot (1.0), the same value as the whole table's maximum: both are named
            (float((q[0, 2] @ k[0, 2].T).softmax(-1).max(-1).values.mean()), "another head"),
            (float((q[0, 4] @ k[0, 4].T).softmax(-1).max(-1).values.mean()), "another head")]


def ex_03_3():
    _, tokenizer = bertlab.load("minilm", device="cpu")
    return len(tokenizer("The river bank was muddy.", "We sat on the grass.")) - 1


def wrong_03_3():
    _, tokenizer = bertlab.load("minilm", device="cpu")
    enc = tokenizer("The river bank was muddy.", "We sat on the grass.")
    return [(0, "[CLS]"), (enc.tokens.index("[SEP]"), "only A"), (len(enc), "off by one"), (ex_03_3() - 2, "part of B"),
            ("last", "int")]


def wrong_03_1():
    """03.1's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_03_1() + _edits_03_1()


def _edits_03_1():
    def scales_q_in_place(q, k, v):             # right weights, but q /= √d_k changes the caller's q
        q /= q.shape[-1] ** 0.5
        w = (q @ k.transpose(-2, -1)).softmax(-1)
        return w, w @ v
    return [(scales_q_in_place, "in place")]
