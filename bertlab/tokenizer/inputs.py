"""What the tokenizer takes as text, words and ids: one-line errors for anything else, and lone surrogates mended.

Kept apart from the WordPiece tokenizer itself (wordpiece.py) because every entry point that takes text from a
user (`tokenizer(...)`, `batch`, `decode`, pre-split words for tagging) passes through these few checks.
"""

from __future__ import annotations

import logging
import operator
import re
from collections.abc import Iterable, Sequence
from typing import Any

logger = logging.getLogger(__name__)


def _check_text(value: object, name: str) -> str:
    """``value`` if it is a str, with any lone surrogate replaced (see :func:`_replace_surrogates`)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    return _replace_surrogates(value, name)


def _check_words(value: object, name: str) -> list[str]:
    """``value`` as a list of words (each a str, lone surrogates replaced), for ``is_split_into_words=True``."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a list of words (str) with is_split_into_words=True, got "
                         f"{type(value).__name__}: split the text into words, or leave is_split_into_words out")
    return [_check_text(w, f"{name}[{i}]") for i, w in enumerate(value)]


def _check_ids(ids: Iterable[Any], vocab_size: int) -> list[int]:
    """``ids`` as a list of ints, each a token of the vocabulary, else a ValueError naming the first bad one."""
    checked = []
    for i, x in enumerate(ids):
        try:
            if isinstance(x, bool):
                raise TypeError
            v = operator.index(x)  # ints and numpy integers; never a float, not even 3.0
        except TypeError:
            raise ValueError(f"token ids must be integers, got {x!r} ({type(x).__name__}) at position {i}: "
                             "pass ids (e.g. logits.argmax(-1)), not scores or probabilities") from None
        if not 0 <= v < vocab_size:
            raise ValueError(f"token id {v} at position {i} is outside the vocabulary (0 … {vocab_size - 1}): "
                             "were the ids made by a different tokenizer or model?")
        checked.append(v)
    return checked


_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_surrogates(text: str, name: str = "text") -> str:
    """Replace lone surrogates (U+D800 … U+DFFF) with U+FFFD, logging a warning; other text is returned as is.

    A lone surrogate is half of a UTF-16 pair, not a character: debris from a bad decode (``surrogateescape``,
    an emoji cut in half, a JSON ``"\\ud83d"`` escape). The Rust tokenizer cannot take one (it would fail
    with "TextInputSequence must be str"). Replacing rather than refusing, because BERT's own text cleanup
    drops U+FFFD, so the tokens are those of the text without the broken half-character, as any UTF-8
    encoder with ``errors="replace"`` would give; a whole text is not lost to one invisible code unit.
    A well-formed pair that arrived as two code points is joined into its character.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    logger.warning("%s held %d lone surrogate(s) (half of a UTF-16 pair, not a character): replaced with U+FFFD",
                   name, fixed.count("\ufffd") - text.count("\ufffd"))
    return fixed
