"""Notebook 03 (self-attention): its checkable exercises.

03.1 runs the learner's attention function on MiniLM's own q, k, v and on random inputs of its own; 03.2
and 03.3 compute their answers at check time from MiniLM.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .answers import library_call, nearest, rounded_message, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, loaded, not_a, ratio_kind, right, run_learner, wrong

_TEXT = "The river bank was muddy after the rain."
_PREFIX = "encoder.layer.0.attention.self."


def _qkv(text: str = _TEXT):
    model, tokenizer = loaded("minilm")
    with torch.no_grad():
        _, cache = model.run_with_cache(**tokenizer(text))
    return tuple(cache[_PREFIX + n][0] for n in ("hook_q", "hook_k", "hook_v"))     # each (heads, T, d)


def _reference(q, k, v, scale=True):
    scores = q @ k.transpose(-1, -2)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    w = scores.softmax(-1)
    return w, w @ v


@exercise("03.1", "Write my_attention(q, k, v) for one head: the weights and the output", difficulty=1,
          importance=3, minutes=10,
          expects="a function of (q, k, v), each (T, d_k) for one head, returning (weights (T, T), output (T, d_k))",
          hints=["softmax(QKᵀ/√d_k) V: four operations, in that order.",
                 "Scores are q @ k.T divided by the square root of d_k = q.shape[-1]; each *row* of the softmax "
                 "sums to 1 (dim=-1).",
                 "w = (q @ k.T / math.sqrt(q.shape[-1])).softmax(dim=-1); return w, w @ v"])
def _(answer):
    if not callable(answer):
        return not_a(answer, type(len), what="a function my_attention(q, k, v) -> (weights, output)")
    if (name := library_call(answer, F.scaled_dot_product_attention, F.multi_head_attention_forward)):
        return wrong(f"your function hands the attention to torch's own {name}: compute softmax(QKᵀ/√d_k) "
                     "and multiply by V yourself", kind="the library's function")
    gen = torch.Generator().manual_seed(3)
    q, k, v = _qkv()
    cases = [(q[3], k[3], v[3], "MiniLM layer 0 head 3"), (q[8], k[8], v[8], "MiniLM layer 0 head 8")]
    cases += [tuple(torch.randn(7, 16, generator=gen) * 3 for _ in range(3)) + ("random 7 × 16 inputs",)]
    cases += [(torch.randn(5, 64, generator=gen) * 2, torch.randn(9, 64, generator=gen) * 2,
               torch.randn(9, 64, generator=gen), "5 queries, 9 keys, d_k = 64")]
    for q1, k1, v1, where in cases:
        with torch.no_grad():
            got, bad = run_learner(answer, q1.clone(), k1.clone(), v1.clone())
        if bad:
            return bad
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
            return wrong(f"return two tensors, (weights, output); got {type(got).__name__} ({where})",
                         kind="wrong type")
        w, z = (t.detach().double() for t in got)
        tw, tz = (t.double() for t in _reference(q1, k1, v1))
        if w.shape != tw.shape or z.shape != tz.shape:
            return wrong(f"weights are (queries, keys) = {tuple(tw.shape)}, the output (queries, d_k) = "
                         f"{tuple(tz.shape)}; got {tuple(w.shape)} and {tuple(z.shape)} ({where})", kind="wrong shape")
        if torch.allclose(w, tw, atol=1e-5) and torch.allclose(z, tz, atol=1e-4):
            continue
        uw, _ = _reference(q1.double(), k1.double(), v1.double(), scale=False)
        if torch.allclose(w, uw, atol=1e-5):
            return wrong(f"the scores are not scaled: divide by √d_k before the softmax ({where})",
                         kind="missing 1/√d_k")
        dw = (q1.double() @ k1.double().T / q1.shape[-1]).softmax(-1)
        if torch.allclose(w, dw, atol=1e-5):
            return wrong(f"divide by the square root of d_k, not by d_k ({where})", kind="divided by d_k")
        if w.shape[0] == w.shape[1] and torch.allclose(w, (q1.double() @ k1.double().T / math.sqrt(q1.shape[-1])).softmax(0), atol=1e-5):
            return wrong(f"the softmax ran down the columns: each query's row must sum to 1 ({where})",
                         kind="softmax over the wrong dimension")
        if w.shape[0] == w.shape[1] and torch.allclose(
                w, (k1.double() @ q1.double().T / math.sqrt(q1.shape[-1])).softmax(-1), atol=1e-5):
            return wrong(f"the scores are keys against queries (k @ q.T): row i must be query i against every key "
                         f"({where})", kind="queries and keys swapped")
        if k1.shape[0] != q1.shape[-1] and torch.allclose(
                w, (q1.double() @ k1.double().T / math.sqrt(k1.shape[0])).softmax(-1), atol=1e-5):
            return wrong(f"that divides by the square root of the number of keys; d_k is the head's width, "
                         f"q.shape[-1] ({where})", kind="divided by √T")
        if torch.allclose(w, tw, atol=1e-5):
            return wrong(f"the weights are right; the output is the weights times the values ({where})",
                         kind="output wrong")
        return wrong(f"compare with bertlab's hook_pattern and hook_z ({where})", kind="off")
    return right("on MiniLM's heads and on shapes of the check's own, non-square included")


def _row_peaks(scores: torch.Tensor) -> float:
    """The mean over the rows of each row's largest softmax weight: 1 means every row one-hot."""
    return float(scores.softmax(-1).max(-1).values.mean())


@exercise("03.2", "Without the √d_k: how peaked do head 3's rows get?", difficulty=2, importance=2, minutes=10,
          expects="a float, to two decimals: the mean over the rows of each row's largest weight in softmax(QKᵀ) "
                  "(no scaling), MiniLM layer 0, head 3, 'The river bank was muddy after the rain.'",
          hints=["Recompute the notebook's head-by-hand cell with the division left out, then look at each row's "
                 "largest weight.",
                 "One number per row (its largest weight, .max(-1).values), then their mean over the 11 rows.",
                 "(q[0, 3] @ k[0, 3].T).softmax(-1).max(-1).values.mean()"])
def _(answer):
    value = as_number(answer)
    if value is None:
        return not_a(answer, float, what="a number between 0 and 1")
    q, k, v = _qkv()
    scores = q[3] @ k[3].T                                        # (T, T), not scaled
    truth = _row_peaks(scores)
    said = to_decimals(value, truth, 2)
    if said == "rounded":
        return wrong(rounded_message(2), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(2), kind="cut off, not rounded")
    if said == "right":
        return right("without the scaling each row's weight piles onto one key; with d_k = 64 the dot products "
                     "grow further, the softmax saturates and its gradients vanish")
    d = q.shape[-1]
    candidates = [
        (_row_peaks(scores / math.sqrt(d)), "that is with the scaling still in: leave out the division by √d_k",
         "still scaled"),
        (_row_peaks(scores / d), "that divides by d_k; the question leaves the division out entirely",
         "divided by d_k"),
        (float(scores.softmax(-1).max()), "the largest weight of the whole table, not each row's largest "
         "averaged over the rows", "a different quantity"),
        (float(scores.softmax(0).max(0).values.mean()), "the softmax runs along each row (dim=-1)",
         "softmax over the wrong dimension")]
    # another head's rows (counted from 1, or any other head): a head whose rows are all one-hot gives 1.0,
    # which is also the whole table's maximum, so `nearest` names both rather than one by chance
    candidates += [(_row_peaks(q[h] @ k[h].T), f"another head's rows (head {h}); the question is about head 3, "
                    "counted from 0", "a different quantity") for h in range(q.shape[0]) if h != 3]
    found = nearest(value, candidates, 0.005)
    if found:
        return wrong(*found)
    if abs(value / 100 - truth) <= 0.005:
        return wrong("give a weight between 0 and 1, not a percentage", kind="off by a factor of 100")
    return wrong("each row's largest weight after the softmax, averaged over the rows", kind=ratio_kind(value, truth)
                 or "off")


_PAIR = ("The river bank was muddy.", "We sat on the grass.")


@exercise("03.3", "Under a causal mask, which position could classify a sentence pair?", difficulty=2,
          importance=2, minutes=10,
          expects="an int: the index, in MiniLM's tokenizer('The river bank was muddy.', 'We sat on the grass.'), "
                  "of the one position whose vector may depend on every token of the pair under the causal mask",
          hints=["Under the causal mask, position i reads positions 0 … i. Which position reads them all?",
                 "[CLS] at position 0 sees only itself. The token that sees the whole pair is the one nothing "
                 "comes after.",
                 "len(tokenizer(a, b)) - 1, the final [SEP] (as GPT classifies from its last token)"])
def _(answer):
    answer, bad = whole_or_wrong(answer)
    if bad:
        return bad
    _, tokenizer = loaded("minilm")
    enc = tokenizer(*_PAIR)
    T = len(enc)
    if answer in (T - 1, -1):
        return right("the last position reads everything before it: GPT classifies from its final token for "
                     "exactly this reason")
    if answer == 0:
        return wrong("[CLS] comes first, so under the causal mask it sees only itself", kind="[CLS] sees nothing")
    first_sep = enc.tokens.index("[SEP]")
    if 0 < answer <= first_sep:
        return wrong("that position has not seen sentence B: it comes before B", kind="sees only A")
    if answer == T:
        return wrong(f"positions count from 0: the pair has {T} tokens", kind="off by one")
    if answer > T or answer < -T:
        return wrong(f"the pair has only {T} tokens", kind="no such position")
    return wrong("that position has not seen the last tokens of B", kind="sees part of B")
