"""How the checks read an answer: the same way for every exercise.

Why a module of its own: the learner reviews found checks that read the same kind of answer differently
(`tensor(7)` refused where a float exercise took a 0-d tensor; 0.13 called a wrong method where the
question wanted two decimals and the learner rounded). One home for each rule keeps them alike:

- `whole(answer)`: an int, or an integer 0-d tensor or numpy scalar (`tensor(7)`), read as an int; `pair(answer)` does the same for a (layer, head) pair
  (a tuple, a list, or a 1-D integer tensor or array of two).
- `to_decimals(x, truth, decimals)`: right at the precision the question asks ("to two decimals"); a value
  that is the right one rounded to fewer decimals is called a rounding, and one with its digits cut off
  (0.19 for 0.198) a truncation, never a wrong method.
- `nearest(x, candidates, tolerance)`: which known mistake an answer is, and only when exactly one fits
  (two mistakes with the same value are named together instead of one of them by chance).
- `library_call(fn, *library)`: whether a learner's function is, or calls, the library's own function that
  the exercise asks them to write.
- `runs_a_model(fn, *args)`: whether a learner's "rule with no model" ran a torch module.
- `method_calls(cls, name)`: how often a class's method ran in a block, so a check can tell a function
  that looks three rows up from one that calls the embedding layer that adds them for it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from typing import Callable

import torch

from .registry import as_number, wrong

__all__ = ["whole", "whole_or_wrong", "pair", "to_decimals", "truncated_message", "nearest", "library_call", "runs_a_model",
           "method_calls"]


def whole(answer) -> int | None:
    """`answer` as an int when it is one: a Python int, or an integer 0-d tensor or numpy scalar (`tensor(7)`,
    what `.sum()` or `.argmax()` hands back). A float, even 7.0, is not a count: None, as for a bool."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    dtype = getattr(answer, "dtype", None)
    integer = dtype is not None and (getattr(dtype, "is_floating_point", True) is False
                                     and not getattr(dtype, "is_complex", False) and dtype != torch.bool
                                     or getattr(dtype, "kind", "") in ("i", "u"))
    if not integer or getattr(answer, "ndim", 1) != 0:
        return None
    value = as_number(answer)
    return None if value is None else int(value)


def whole_or_wrong(answer, what: str = "an int"):
    """(the int, None) or (None, a `wrong` verdict saying what the exercise takes)."""
    n = whole(answer)
    if n is not None:
        return n, None
    text = repr(answer)
    text = text if len(text) <= 40 else text[:37] + "..."
    return None, wrong(f"this exercise takes {what}, got {type(answer).__name__} {text}", kind="wrong type")


def pair(answer):
    """A (layer, head) answer with its two parts read by `whole` (so `divmod(t.argmax(), 12)`'s tensors count);
    anything else is returned as it came, for `head_pair` to refuse with its message. A 1-D integer tensor or
    array of two (what `(s == s.max()).nonzero()[0]` hands back) is read as the pair it holds."""
    if getattr(answer, "ndim", None) == 1 and len(answer) == 2:
        parts = [whole(x) for x in answer]           # its parts are 0-d: `whole` reads them, or refuses floats
        return tuple(parts) if None not in parts else answer
    if isinstance(answer, (tuple, list)) and len(answer) == 2:
        parts = [whole(x) for x in answer]
        if all(p is not None for p in parts) and not any(isinstance(x, bool) for x in answer):
            return tuple(parts)
    return answer


def to_decimals(x: float, truth: float, decimals: int) -> str | None:
    """'right' when `x` is `truth` to `decimals` decimals (within half a unit of the last one); 'truncated' when
    it is `truth` with the digits after the asked ones cut off (0.19 for 0.198); 'rounded' when it is `truth`
    rounded to fewer decimals than asked; else None."""
    if abs(x - truth) <= 0.5 * 10 ** -decimals + 1e-9:
        return "right"
    if _places(x) == decimals and abs(x - math.trunc(truth * 10 ** decimals) / 10 ** decimals) <= 1e-9:
        return "truncated"                      # the digits cut off after the last one asked for, not rounded
    for d in range(0 if abs(truth) >= 1 else 1, decimals):      # a share rounded to 0 or 1 is no rounding
        if abs(x - round(truth, d)) <= 1e-9 or (abs(x - truth) <= 0.5 * 10 ** -d + 1e-9 and _places(x) == d):
            return "rounded"
    return None


def _places(x: float) -> int:
    """How many decimals `x` is written with (0.13 → 2, 10.3 → 1, 7.0 → 0)."""
    text = f"{x:.10f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def rounded_message(decimals: int) -> str:
    word = {1: "one decimal", 2: "two decimals", 3: "three decimals"}.get(decimals, f"{decimals} decimals")
    return f"that is the right number rounded further than asked: give it to {word}"


def truncated_message(decimals: int) -> str:
    word = {1: "one decimal", 2: "two decimals", 3: "three decimals"}.get(decimals, f"{decimals} decimals")
    return f"that is the right number with its digits cut off after {word}: round it to {word} instead"


def nearest(x: float, candidates, tolerance: float):
    """The (message, kind) of the one mistake of `candidates` [(value, message, kind), ...] within `tolerance`
    of `x`; a joint message naming each when several different ones fit; None when none does."""
    fits = sorted(((abs(x - v), m, k) for v, m, k in candidates if v is not None and abs(x - v) <= tolerance),
                  key=lambda f: f[0])
    if not fits:
        return None
    messages = list(dict.fromkeys(m for _, m, _ in fits))
    if len(messages) == 1:
        return fits[0][1], fits[0][2]
    kinds = {k for _, _, k in fits}
    return ("that value fits more than one mistake: " + "; or ".join(messages),
            kinds.pop() if len(kinds) == 1 else "a different quantity")


def _referenced(fn, seen=None) -> tuple[list, set]:
    """(every object a function's code can name, every attribute name it reads): its globals and closure
    cells, followed into nested functions and lambdas (a thin wrapper of a wrapper is still a wrapper). A
    global is judged by what it is, not its name, so a learner's own `next_token_labels` is not refused."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return [], set()
    seen.add(id(fn))
    if isinstance(fn, functools.partial):
        objects, names = _referenced(fn.func, seen)
        return [fn.func] + objects, names
    code = getattr(fn, "__code__", None)
    if code is None:
        return [], set()
    names, codes = set(), [code]
    while codes:
        c = codes.pop()
        names |= set(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    scope = getattr(fn, "__globals__", {})
    found = [scope.get(n) for n in names]
    names = {n for n in names if n not in scope}           # the rest: attributes (`ablations.next_token_labels`)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    objects = []
    for obj in found:
        if obj is None:
            continue
        objects.append(obj)
        if isinstance(obj, (types.FunctionType, functools.partial)):
            more, more_names = _referenced(obj, seen)
            objects += more
            names |= more_names
    return objects, names


def library_call(fn: Callable, *library: Callable | str) -> str | None:
    """The name of the library function `fn` is or calls (by any name, or as `module.attribute`), else None. A
    str in `library` is an attribute name to look for, for functions whose `__name__` is not the name they are
    called by (`torch.special.entr` calls itself `special_entr`)."""
    objects, names = _referenced(fn)
    for lib in library:
        if isinstance(lib, str):
            if lib in names:
                return lib
            continue
        if fn is lib or getattr(fn, "__wrapped__", None) is lib or any(obj is lib for obj in objects) \
                or lib.__name__ in names:
            return lib.__name__
    return None


@contextlib.contextmanager
def method_calls(cls: type, name: str):
    """Yields a list that gets one entry each time `cls.name` runs inside the block, however it is reached
    (`module(...)`, `module.forward(...)`, a helper's call). Patched on the class, not on an object: the learner's
    function gets copies of the check's modules (`run_learner`). The method is put back when the block ends."""
    original = cls.__dict__[name]
    calls: list[int] = []

    @functools.wraps(original)
    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    setattr(cls, name, counted)
    try:
        yield calls
    finally:
        setattr(cls, name, original)


def runs_a_model(fn: Callable, *args):
    """(fn(*args), whether any torch module's forward ran during the call). Exceptions propagate."""
    ran = []
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda module, inputs: ran.append(1))
    try:
        return fn(*args), bool(ran)
    finally:
        handle.remove()
