"""Old spellings that keep working for one release, with a DeprecationWarning that names the new one.

bertlab settled on one name for the tokenizer argument (`tokenizer`, as in transformers) and one calling
convention for the probes (`model, tokenizer, text` first). Code written against the old names must not
break the day it upgrades: it warns, says what to write instead, and runs as before.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

__all__ = ["renamed_arguments", "warn_renamed", "RENAMED_IN"]

RENAMED_IN = "0.2"   # the release after which the old spellings go


def warn_renamed(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn once per call site that `old` is now spelled `new`."""
    warnings.warn(f"{old} is deprecated and goes after bertlab {RENAMED_IN}: use {new}",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed_arguments(**old_to_new: str) -> Callable[[Callable], Callable]:
    """Decorate a function so that keyword arguments under their old names still work, with a warning.

        @renamed_arguments(tok="tokenizer")
        def head_view(model, tokenizer, text): ...
        head_view(model, tok=t, text="...")     # DeprecationWarning: tok= … use tokenizer=

    Passing both the old and the new name is a TypeError, as passing one argument twice is.
    """
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__qualname__}() got both {old}= (its old name) and {new}=: pass only {new}=")
                    warn_renamed(f"{fn.__qualname__}({old}=...)", f"{new}= (or pass it by position)", stacklevel=3)
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        return wrapper
    return decorate
