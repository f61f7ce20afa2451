"""Minimal pairs: two sentences that differ in one word, and what that word does to the guess at the [MASK].

    c = compare_fill(model, tok, "He sat on the river [MASK].", "He sat on the money [MASK].")
    c.shifts      # the words whose probability moved most, with P in each text and the log-ratio

This is the comparison Google PAIR's "What have language models learned?" explorable draws (Pearce et al.
2021): change one word, and watch which completions gain and which lose. It is still an observation (the
output changed); `patch` on the same pair then asks *where inside the model* the change travels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .running import base_model, inference, max_length, mlm_head

__all__ = ["compare_fill", "FillComparison", "FillShift"]


@dataclass
class FillShift:
    """One word's probability at the [MASK] in each text, and log P(b) − log P(a) (nats: + means b favours it)."""
    token: str
    p_a: float
    p_b: float
    log_ratio: float


@dataclass
class FillComparison:
    """`shifts`: the `top_k` words whose probability moved most (|P_b − P_a|), ordered from most raised by
    text b to most raised by text a. `top_a`, `top_b`: each text's own most probable word."""
    text_a: str
    text_b: str
    shifts: list[FillShift]
    top_a: FillShift
    top_b: FillShift


def _one_mask(tokenizer, text, name: str, limit: int):
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} must be a non-empty str with one [MASK], got {text!r}")
    enc = tokenizer(text)
    if len(enc.input_ids) > limit:
        raise ValueError(f"{name} is {len(enc.input_ids)} tokens, more than the {limit} this model takes")
    masks = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
    if len(masks) != 1:
        raise ValueError(f"{name} needs exactly one [MASK] (the gap both texts fill), found {len(masks)} in "
                         f"{text!r}")
    return enc, masks[0]


def compare_fill(model, tokenizer, text_a: str, text_b: str, top_k: int = 10) -> FillComparison:
    """How the [MASK] distribution moves from `text_a` to `text_b` (each with one [MASK]; lengths may differ).

    "Moved most" is the probability mass that moved, |P_b − P_a|, not the ratio: a ratio alone would rank
    words that go from one in a million to one in ten thousand above the words a reader sees change.
    The log-ratio is given beside it, in nats.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
    head, bert = mlm_head(model), base_model(model)
    limit = max_length(model, tokenizer)
    encs = [_one_mask(tokenizer, t, n, limit) for t, n in ((text_a, "text_a"), (text_b, "text_b"))]
    probs = []
    with inference(model):
        for enc, pos in encs:
            hidden = bert(**enc.to_tensors(bert.device)).last_hidden_state          # (1, T, H)
            probs.append(head(hidden[0, pos]).float().softmax(-1).cpu()[:tokenizer.vocab_size])   # (V,)
    pa, pb = probs
    moved = (pb - pa).abs().topk(min(top_k, pa.numel())).indices                    # the words that moved most

    def shift(i: int) -> FillShift:
        a, b = float(pa[i]), float(pb[i])
        return FillShift(tokenizer.id_to_token(i), a, b, math.log(max(b, 1e-30)) - math.log(max(a, 1e-30)))

    shifts = sorted((shift(i) for i in moved.tolist()), key=lambda s: s.p_b - s.p_a, reverse=True)
    return FillComparison(text_a, text_b, shifts, shift(int(pa.argmax())), shift(int(pb.argmax())))
