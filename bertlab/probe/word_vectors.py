"""Contextual vectors of one word: the same word in different sentences, one vector each.

    v = word_vectors(model, tokenizer, ["the river bank", "the bank account"], "bank")   # (2, H)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._checks import check_texts, layer_index
from .running import base_model, inference, max_length

__all__ = ["word_vectors", "find_word"]


def find_word(enc_ids: list[int], word_ids: list[int | None], pieces: list[int]) -> list[int]:
    """Start positions of every span that is exactly `pieces` and begins and ends on word boundaries."""
    n, T = len(pieces), len(enc_ids)
    starts = []
    for s in range(T - n + 1):
        if word_ids[s] is None or (s > 0 and word_ids[s - 1] == word_ids[s]):
            continue                                                   # not the start of a word
        if s + n < T and word_ids[s + n] is not None and word_ids[s + n] == word_ids[s + n - 1]:
            continue                                                   # the word goes on ("bank" in "banks")
        if enc_ids[s:s + n] == pieces:
            starts.append(s)
    return starts


def word_vectors(model, tokenizer, sentences: Sequence[str], word: str, layer=-1,
                 occurrence: int = 0) -> torch.Tensor:
    """The contextual vector of `word` in each sentence: its sub-token vectors averaged.

    The word is matched as whole words, piece by piece as the tokenizer splits it, so "bank" matches
    "Bank" in an uncased vocabulary but not "banks" or "embankment". `occurrence` picks the n-th match in
    each sentence (0 = first, -1 = last). `layer` indexes `hidden_states`: 0 is the embedding output
    (no context yet), -1 the last layer. Returns (n_sentences, H), or (n_sentences, L + 1, H) for
    `layer="all"`. All sentences run as one padded batch.
    """
    sentences = check_texts(sentences, "sentences")
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"word is {word!r}: pass the word to look for, e.g. 'bank'")
    if isinstance(occurrence, bool) or not isinstance(occurrence, int):
        raise ValueError(f"occurrence must be an int (0 = first match, -1 = last), got {occurrence!r}")
    bert = base_model(model)
    index = layer_index(layer, bert.config.num_hidden_layers)
    pieces = tokenizer.tokenize(word)
    if tokenizer.unk_id is not None and "[UNK]" in pieces:
        raise ValueError(f"{word!r} is not in this vocabulary (it tokenizes to {pieces}), so its vector would "
                         "be [UNK]'s: choose a word the tokenizer can spell")
    piece_ids = [tokenizer.token_to_id(p) for p in pieces]

    batch = tokenizer.batch(sentences, max_length=max_length(model, tokenizer))
    spans = []
    for i, (enc, sentence) in enumerate(zip(batch.encodings, sentences)):
        starts = find_word(enc.input_ids, enc.word_ids, piece_ids)
        if not starts:
            raise ValueError(f"{word!r} (pieces {pieces}) is not a word of sentence {i} ({sentence!r}), whose "
                             f"tokens are {enc.tokens}: check the spelling, match the whole word (\"bank\" does "
                             "not match \"banks\"), or drop that sentence")
        if not -len(starts) <= occurrence < len(starts):
            raise ValueError(f"sentence {i} ({sentence!r}) has {len(starts)} occurrence(s) of {word!r}, so "
                             f"occurrence={occurrence} does not exist: pass 0 … {len(starts) - 1}")
        s = starts[occurrence]
        spans.append((s, s + len(pieces)))

    with inference(model):
        out = bert(**batch, output_hidden_states=True)
    states = torch.stack(out.hidden_states, dim=1).float().cpu()        # (B, L + 1, T, H)
    vectors = torch.stack([states[i, :, s:e].mean(dim=1) for i, (s, e) in enumerate(spans)])  # (B, L + 1, H)
    return vectors if index is None else vectors[:, index]
