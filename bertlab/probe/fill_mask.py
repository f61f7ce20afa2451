"""Masked-word guesses: what a BERT with its MLM head puts in each [MASK], per layer too (the logit lens).

    fill_mask(model, tokenizer, "The river [MASK] was muddy.")         # top-5 guesses with probabilities
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from .running import base_model, inference, max_length, mlm_head

__all__ = ["Guess", "GuessChange", "FillMask", "fill_mask"]


@dataclass
class Guess:
    """One guess for a [MASK]: the token and the probability the model gives it.

    It unpacks like the (token, probability) pair it replaced: `for token, p in guesses`.
    """
    token: str
    probability: float

    def __iter__(self) -> Iterator:
        return iter((self.token, self.probability))


@dataclass
class GuessChange:
    """One token's probability at a [MASK] before and after an intervention (`AblationEffect.compared`).

    It unpacks like the (token, before, after) triple it replaced.
    """
    token: str
    before: float          # every head on
    after: float           # the chosen heads off

    def __iter__(self) -> Iterator:
        return iter((self.token, self.before, self.after))



@dataclass
class FillMask:
    """The model's guesses for each `[MASK]` in a text.

    `guesses[i]` are the top-k for the i-th mask, most probable first; `by_layer[l][i]` the same read off
    layer l + 1's hidden state through the MLM head (the "logit lens": what each layer would predict if it
    were the last), so `by_layer[-1] == guesses`.
    """
    text: str
    tokens: list[str]
    mask_positions: list[int]
    guesses: list[list[Guess]]
    by_layer: list[list[list[Guess]]] = field(default_factory=list)


def fill_mask(model, tokenizer, text: str, top_k: int = 5, by_layer: bool = False,
              positions: Sequence[int] | None = None, text_pair: str | None = None) -> FillMask:
    """Top-k tokens for every `[MASK]` in `text`, with probabilities (and per layer with `by_layer=True`).

    Each mask is guessed on its own from the same forward pass (all masks stay masked), as BERT was trained.
    `positions` hides those token positions of `text` behind [MASK] first and guesses only them: their ids
    are replaced, nothing is re-tokenized (what clicking a token in MaskPlayground does), so `text` need
    not contain [MASK]; `FillMask.text` is then the masked text. With `text_pair` the two texts are
    encoded as a pair ([CLS] A [SEP] B [SEP]) and the masks of both are guessed.
    """
    head = mlm_head(model)
    if text_pair is not None and not isinstance(text_pair, str):
        raise ValueError(f"text_pair must be a str (the second text) or None, got {type(text_pair).__name__}")
    if positions is None and (not isinstance(text, str) or "[MASK]" not in text + (text_pair or "")):
        raise ValueError("text must contain [MASK] where the model should guess a word, e.g. "
                         "'The river [MASK] was muddy.'")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass the sentence whose tokens to hide behind [MASK]")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
    max_len = max_length(model, tokenizer)
    enc = tokenizer(text, text_pair, max_length=max_len)
    ids, tokens = list(enc.input_ids), list(enc.tokens)
    if positions is None:
        positions = [i for i, t in enumerate(ids) if t == tokenizer.mask_id]
        if not positions:
            raise ValueError(f"no [MASK] left in {text!r} after truncation to {max_len} tokens: "
                             "put the [MASK] earlier or shorten the text")
    else:
        positions = _maskable(positions, ids, tokenizer)
        for i in positions:
            ids[i], tokens[i] = tokenizer.mask_id, tokenizer.id_to_token(tokenizer.mask_id)
        text = tokenizer.decode(ids[1:-1], skip_special_tokens=False)

    def top(states: torch.Tensor) -> list[list[Guess]]:                 # states: (n, H), one row per guess list
        probs = head(states).float().softmax(-1).cpu()                  # (n, V)
        probs = probs[:, :tokenizer.vocab_size]   # ids the tokenizer has no token for are never guesses
        p, top_ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)    # sorted, most probable first
        return [[Guess(tokenizer.id_to_token(i), q) for q, i in zip(pr, ir)]
                for pr, ir in zip(p.tolist(), top_ids.tolist())]

    inputs = dict(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc.token_type_ids]),
                  attention_mask=torch.tensor([enc.attention_mask]))
    bert, m = base_model(model), len(positions)
    with inference(model):
        out = bert(**{k: v.to(bert.device) for k, v in inputs.items()}, output_hidden_states=by_layer)
        if by_layer:      # every layer through the head at once: its decoder weights are read once, not L times
            rows = top(torch.cat([h[0, positions] for h in out.hidden_states[1:]]))      # L · masks lists
            layers = [rows[l:l + m] for l in range(0, len(rows), m)]
            guesses = layers[-1]
        else:
            layers = []
            guesses = top(out.last_hidden_state[0, positions])
    return FillMask(text, tokens, list(positions), guesses, layers)


def _maskable(positions, ids: list[int], tokenizer) -> list[int]:
    """`positions` checked: ints that name word pieces (not [CLS], [SEP] or padding) of the encoded text."""
    if isinstance(positions, (str, int)) or not isinstance(positions, Sequence) or not positions:
        raise ValueError(f"positions must be a non-empty list of token positions, got {positions!r}"
                         + (f": write [{positions}]" if isinstance(positions, int) else ""))
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id}
    for i in positions:
        if (isinstance(i, bool) or not isinstance(i, int) or not 0 < i < len(ids) - 1 or ids[i] in special):
            raise ValueError(f"position {i!r} cannot be masked: choose one of the word pieces, positions 1 … "
                             f"{len(ids) - 2} ([CLS] and [SEP] are never masked)")
    return list(positions)
