"""The exercise registry: what `bertlab.check` and `bertlab.hint` look exercises up in.

An exercise is a check function registered under an id "NN.K" (notebook NN, exercise K) with its metadata:

    from .registry import exercise, right, wrong, not_a

    @exercise("01.2", "How many tokens does the model read?", difficulty=1, importance=2, minutes=5,
              expects="an int", hints=["...", "...", "close to the solution"])
    def _(answer):
        if (bad := not_a(answer, int)):
            return bad
        n = len(tokenizer("...").tokens)            # the right answer, computed now: never stored
        if answer == n:
            return right("the [CLS] and [SEP] count too: the model reads them like any token")
        if answer == n - 2:
            return wrong("you left out [CLS] and [SEP]", kind="counted without [CLS]/[SEP]")
        return wrong("count every token the model reads", kind="off")

The check function receives the learner's answer (never None: `check` answers "not answered yet" itself)
and returns `right(...)` or `wrong(...)`. Its rules name the *kind* of mistake; its messages never print
the right answer. The right answer is kept unreadable in one of three ways, whichever fits the question:

1. computed at check time from the model, tokenizer or config (so there is no literal to read);
2. a property check: the learner's function, or their pick (a layer and head, say), is run on inputs of
   the check's own and judged by what it does;
3. `matches(answer, digest)`: a salted SHA-256 of the normalised answer (for answers copied from the
   paper, which no model can compute). Write a digest with `digest(exercise, answer)` in a Python shell;
   the instructor pack (the repository's solutions/) holds the answers in the clear.

A check cannot be fooled or broken by what it is given. `check` first turns the answer into plain values
(`plain`: an int subclass becomes the int it holds, a list subclass a list, a tensor subclass a tensor; an
object of any other class is a ✗ "wrong type"), so an answer whose `__eq__`, `__len__` or `__float__` lies is
not believed; anything the answer raises while it is checked is a ✗ that says what it raised, never a
traceback. A learner's function gets copies (`run_learner`: deep copies of modules and tensors), never the
course's cached models, and what it returns is made plain in turn; and `check` compares every cached model
before and after (its parameters' data, versions and sums, and each module's train/eval mode), so an answer
that reached a cached model some other way is a ✗ and the model is loaded afresh for the next check.

Adding a notebook's exercises is one new file, `bertlab/course/nbNN.py`, full of `@exercise(...)` checks,
and one line in `bertlab/course/__init__.py` that imports it (`from . import nbNN`). The registry refuses a
second exercise with the same id, so two modules cannot silently shadow each other.
"""

from __future__ import annotations

import copy
import hashlib
import html
import logging
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Exercise", "Result", "Hint", "UnknownExercise", "exercise", "right", "wrong", "not_a", "head_pair", "digest", "matches",
           "normalise", "as_number", "ratio_kind", "loaded", "run_learner", "plain", "Unreadable", "get", "exercises",
           "check", "hint", "EXERCISES"]

log = logging.getLogger(__name__)
_ID = re.compile(r"^\d\d\.\d+$")
_SALT = "bertlab-course/v1"


@dataclass(frozen=True)
class Result:
    """What `check` says: right or not, and why. Truthy when right; prints as one line in a notebook."""

    exercise: str
    right: bool
    message: str
    kind: str | None = None      # the kind of mistake ("off by a factor", "counted [CLS]/[SEP]", ...) or None
    answered: bool = True

    def __bool__(self) -> bool:
        return self.right

    def __str__(self) -> str:
        if not self.answered:
            return f"… {self.exercise} not answered yet: {self.message}"
        if self.right:
            return f"✓ {self.exercise} right: {self.message}"
        return f"✗ {self.exercise} not yet" + (f" ({self.kind})" if self.kind else "") + f": {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        color = "#1a7f37" if self.right else ("#6e7781" if not self.answered else "#cf222e")
        return f'<div style="color:{color};font-weight:500">{html.escape(str(self))}</div>'


@dataclass(frozen=True)
class Hint:
    """One tier of an exercise's hints; prints as text with its tier ("hint 2 of 3")."""

    exercise: str
    level: int
    levels: int
    text: str

    def __str__(self) -> str:
        more = (f" (hint({self.exercise!r}, level={self.level + 1}) says more)" if self.level < self.levels
                else " (the last hint: the next step is the solution)")
        return f"hint {self.level} of {self.levels} for {self.exercise}: {self.text}{more}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return f'<div style="color:#0969da">{html.escape(str(self))}</div>'


@dataclass(frozen=True)
class Exercise:
    """One checkable exercise: its id, what the notebook calls it, its tags, its hints and its check."""

    id: str
    title: str
    difficulty: int              # 1 (a few lines, following the notebook) … 3 (a small project of your own)
    importance: int              # 1 (a detour) … 3 (the idea the notebook is about)
    minutes: int
    expects: str                 # what kind of answer the check takes, said to a learner who passes the wrong one
    hints: tuple[str, ...]
    rule: Callable[[Any], "Result"] = field(repr=False)

    @property
    def notebook(self) -> str:
        return self.id.split(".")[0]


EXERCISES: dict[str, Exercise] = {}


class UnknownExercise(KeyError):
    """No exercise has this id; the message lists those that do (a KeyError, printed as plain text)."""

    def __str__(self) -> str:
        return str(self.args[0])


def exercise(id: str, title: str, *, difficulty: int, importance: int, minutes: int, expects: str,
             hints) -> Callable:
    """Register the decorated function as the check of exercise `id` (see the module docstring)."""
    if not isinstance(id, str) or not _ID.match(id):
        raise ValueError(f"exercise id {id!r} must read 'NN.K' (notebook NN, exercise K), e.g. '04.3'")
    for name, value in (("difficulty", difficulty), ("importance", importance)):
        if value not in (1, 2, 3):
            raise ValueError(f"{id}: {name} must be 1, 2 or 3, got {value!r}")
    hints = tuple(hints)
    if not hints or not all(isinstance(h, str) and h.strip() for h in hints):
        raise ValueError(f"{id}: give at least one hint, each a non-empty str (the last close to the solution)")

    def register(rule: Callable) -> Callable:
        if id in EXERCISES:
            raise ValueError(f"exercise {id} is registered twice (by {EXERCISES[id].rule.__module__} and "
                             f"{rule.__module__}): give the new one the next free number")
        EXERCISES[id] = Exercise(id, title, difficulty, importance, minutes, expects, hints, rule)
        return rule

    return register


# ---- what a rule returns -------------------------------------------------------------------------------

class _Verdict:
    """What a rule returns; `check` turns it into a Result carrying the exercise id."""

    def __init__(self, is_right: bool, message: str, kind: str | None = None):
        self.right, self.message, self.kind = is_right, message, kind


def right(message: str = "well done") -> _Verdict:
    return _Verdict(True, message)


def wrong(message: str, kind: str | None = None) -> _Verdict:
    """Not right: `message` says what to look at again, `kind` names the mistake; neither gives the answer."""
    return _Verdict(False, message, kind)


def not_a(answer, *types, what: str | None = None) -> _Verdict | None:
    """A `wrong` verdict when `answer` is not one of `types` (bool never counts as int), else None."""
    ok = isinstance(answer, types) and not (isinstance(answer, bool) and bool not in types)
    if ok:
        return None
    wanted = what or " or ".join(t.__name__ for t in types)
    return wrong(f"this exercise takes {wanted}, got {_type_name(answer)} {_short(answer)}", kind="wrong type")


def as_number(answer) -> float | None:
    """`answer` as a float when it is a real number (int, float, a 0-d tensor or numpy scalar), else None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        return float(answer)
    item = getattr(answer, "item", None)
    if callable(item) and getattr(answer, "ndim", 1) == 0:
        try:
            value = item()
        except Exception:       # noqa: BLE001 -- anything that does not give a number is not a number
            return None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return None


def head_pair(answer, model) -> tuple[tuple[int, int] | None, _Verdict | None]:
    """A learner's (layer, head) answer checked against `model`: (the pair, None) or (None, what is wrong)."""
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in answer)):
        return None, wrong(f"this exercise takes a (layer, head) pair of ints, e.g. (3, 7); got {_short(answer)}",
                           kind="wrong type")
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    if not (0 <= answer[0] < L and 0 <= answer[1] < A):
        return None, wrong(f"bertlab-mini has layers 0 to {L - 1} and heads 0 to {A - 1}, counted from 0",
                           kind="no such head")
    return tuple(answer), None


def ratio_kind(answer: float, truth: float, factors=(2, 3, 4, 8, 10, 12, 100, 1000, 1e6)) -> str | None:
    """'off by a factor of F' when answer ≈ truth × F or truth / F (within 2 %), else None."""
    if truth == 0 or answer == 0 or not math.isfinite(answer):
        return None
    r = answer / truth
    for f in factors:
        for target, word in ((f, "too large"), (1 / f, "too small")):
            if abs(r / target - 1) < 0.02:
                return f"off by a factor of {f:g} ({word})"
    return None


def _short(answer) -> str:
    """A short repr of the answer for a message; an answer whose repr raises is named by its class."""
    try:
        text = repr(answer)
        if not isinstance(text, str):
            raise TypeError
    except Exception:       # noqa: BLE001 -- a repr that raises must not turn a ✗ into a traceback
        return f"(a {_type_name(answer)} whose repr fails)"
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value) -> str:
    return getattr(type(value), "__name__", "object")


# ---- answers as plain values ------------------------------------------------------------------------------

class Unreadable(TypeError):
    """An answer `plain` cannot read as plain values (an object of a class the checks do not take)."""


_MAX_DEPTH = 32


def plain(value, _depth: int = 0):
    """`value` as plain Python and torch values, read through the base classes' own methods, so an answer
    cannot lie to a check: an int subclass becomes the int it holds (its own `__eq__` is not asked), a float,
    str, bytes or complex subclass likewise, lists, tuples, sets and dicts (and their subclasses, torch.Size,
    namedtuples) are rebuilt from their items, a tensor of any subclass (nn.Parameter too) becomes a plain
    detached tensor, a numpy scalar its Python number. Functions (anything callable) and the builtins'
    own objects (range, a generator) are kept as they are; an object of any other class is `Unreadable`."""
    if value is None or value is ... or type(value) in (bool, int, float, complex, str, bytes):
        return value
    if _depth > _MAX_DEPTH:
        raise Unreadable(f"a value nested more than {_MAX_DEPTH} deep")
    if isinstance(value, int):                      # a subclass (bool cannot be subclassed)
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, complex):
        return complex(float.__float__(complex.real.__get__(value)), float.__float__(complex.imag.__get__(value)))
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return bytes(memoryview(value))
    if isinstance(value, (list, tuple)):
        items = [plain(v, _depth + 1) for v in (list.__iter__(value) if isinstance(value, list)
                                                  else tuple.__iter__(value))]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, (set, frozenset)):
        items = {plain(v, _depth + 1) for v in (set.__iter__(value) if isinstance(value, set)
                                                  else frozenset.__iter__(value))}
        return items if isinstance(value, set) else frozenset(items)
    if isinstance(value, dict):
        return {plain(k, _depth + 1): plain(v, _depth + 1) for k, v in dict.items(value)}
    import torch

    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            return torch.Tensor.detach(torch.Tensor.as_subclass(value, torch.Tensor))
    module = getattr(type(value), "__module__", "") or ""
    if module == "numpy" or module.startswith("numpy."):
        import numpy as np

        if isinstance(value, np.generic) and type(value).__module__ == "numpy":
            return plain(value.item(), _depth + 1)
        if isinstance(value, np.ndarray):
            return value.view(np.ndarray)
    if callable(value) or module == "builtins":
        return value
    raise Unreadable(f"an object of class {_type_name(value)}")


def _copy(value, _depth: int = 0):
    """A copy of an argument for the learner's code: tensors cloned (detached), modules deep-copied (their
    train/eval mode with them), containers copied item by item, anything else deep-copied."""
    import torch

    if isinstance(value, torch.Tensor):
        out = value.detach().clone()
        return out.requires_grad_(True) if value.requires_grad and value.is_leaf else out
    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value)
    if _depth < _MAX_DEPTH and type(value) in (list, tuple, set, frozenset):
        return type(value)(_copy(v, _depth + 1) for v in value)
    if _depth < _MAX_DEPTH and type(value) is dict:
        return {k: _copy(v, _depth + 1) for k, v in value.items()}
    try:
        return copy.deepcopy(value)
    except Exception:       # noqa: BLE001 -- an argument that cannot be copied is one the check made for this call
        return value


# ---- hashed answers --------------------------------------------------------------------------------------

def normalise(answer) -> str:
    """The form a hashed answer is compared in: str of it, Unicode NFKC, lower case, spaces squeezed,
    surrounding quotes and a final full stop dropped ("  'CoLA'. " → "cola")."""
    text = unicodedata.normalize("NFKC", str(answer)).strip().lower()
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"^[\s'\"`]+|[\s'\"`.]+$", "", text)
    return text


def digest(exercise: str, answer) -> str:
    """The salted SHA-256 a rule stores instead of the answer (salted per exercise, so equal answers to two
    exercises do not look alike)."""
    return hashlib.sha256(f"{_SALT}|{exercise}|{normalise(answer)}".encode()).hexdigest()


def matches(exercise: str, answer, digests) -> bool:
    """Whether the normalised `answer` hashes to `digests` (one hex digest or several accepted ones)."""
    digests = (digests,) if isinstance(digests, str) else tuple(digests)
    return digest(exercise, answer) in digests


# ---- the public functions ---------------------------------------------------------------------------------

def loaded(name: str) -> tuple:
    """`bertlab.load(name, device="cpu")`, once per process, in eval mode: the model a check computes with."""
    if name not in _LOADED:
        from ..checkpoint import load
        model, tokenizer = load(name, device="cpu")
        _LOADED[name] = (model.eval(), tokenizer)
    return _LOADED[name]


_LOADED: dict[str, tuple] = {}


def run_learner(fn, *args, edits_allowed: bool = False):
    """(fn(*copies of args), None) with the result made `plain`, or (None, a `wrong` verdict saying what the
    learner's function raised or returned). The function gets copies, never the check's own tensors or the
    course's cached model: an answer that edits its input in place changes nothing for the check, or for the
    checks after it. But a function that edits its input is ✗ all the same: in the learner's notebook that
    input is their model's output or their data, which the call would quietly spoil. `edits_allowed` is for
    functions whose job is to change what they are given (a hook on an activation)."""
    copies = [_copy(a) for a in args]
    try:
        out = fn(*copies)
    except (Exception, SystemExit) as e:    # noqa: BLE001 -- the learner's code may raise anything (exit() too)
        return None, wrong(f"your function raised {type(e).__name__}: {_message(e)}", kind="your function failed")
    for k, (before, after) in enumerate(zip(args, copies)):
        if not edits_allowed and not _unchanged(before, after):
            which = f"its input {k + 1} ({_type_name(before)})" if len(args) > 1 else f"its input ({_type_name(before)})"
            return None, wrong(f"your function changed {which} in place: work on a copy (x.clone(), list(x), "
                               "dict(x)) or build a new value, so the caller's data stays as it was",
                               kind="changed its input")
    try:
        return plain(out), None
    except Unreadable as e:
        return None, wrong(f"your function returned {e}, which the check cannot read: return plain values "
                           "(numbers, str, lists, tuples, tensors)", kind="wrong type")
    except Exception as e:      # noqa: BLE001 -- reading what it returned raised
        return None, wrong(f"what your function returned raised {type(e).__name__} when read: {_message(e)}",
                           kind="your function failed")


def _unchanged(before, after, _depth: int = 0) -> bool:
    """Whether the learner's copy `after` still equals the original `before`: tensors by value (NaN equal to
    NaN) and shape, containers item by item; modules and anything else are not compared (the cached models
    have their own guard)."""
    import torch

    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return False
        return bool(torch.equal(after.detach(), before.detach()) or
                    (before.is_floating_point() and torch.allclose(after.detach(), before.detach(), rtol=0, atol=0,
                                                                   equal_nan=True)))
    if _depth >= _MAX_DEPTH or isinstance(before, torch.nn.Module):
        return True
    if type(before) in (list, tuple):
        return (type(after) is type(before) and len(after) == len(before)
                and all(_unchanged(b, a, _depth + 1) for b, a in zip(before, after)))
    if type(before) is dict:
        return (type(after) is dict and after.keys() == before.keys()
                and all(_unchanged(before[k], after[k], _depth + 1) for k in before))
    if type(before) in (set, frozenset, str, int, float, bool, bytes, type(None)):
        try:
            return bool(before == after) or (before != before and after != after)
        except Exception:       # noqa: BLE001 -- an element whose comparison raises: not judged
            return True
    return True


def _message(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:       # noqa: BLE001 -- an exception whose str raises
        text = ""
    text = " ".join(text.split())
    return (text[:200] + "…" if len(text) > 200 else text) or "(no message)"


# ---- the course's cached models, guarded ---------------------------------------------------------------------

def _fingerprint(model) -> tuple:
    """What an answer could change in a cached model: each module's train/eval mode, and each parameter's
    and buffer's storage, version counter and sum (the sum catches edits through `.data`, which the version
    counter does not see). About 30 ms for MiniLM."""
    import torch

    with torch.no_grad():
        tensors = [(t.data_ptr(), t._version, t.float().sum().item().hex() if t.is_floating_point() else
                    int(t.sum().item())) for t in list(model.parameters()) + list(model.buffers()) if t.numel()]
    return tuple(m.training for m in model.modules()), tuple(tensors)


def _fingerprints() -> dict[str, tuple]:
    return {name: _fingerprint(model) for name, (model, _) in _LOADED.items()}


def _changed_since(before: dict[str, tuple]) -> list[str]:
    """The cached models whose fingerprint changed since `before`; each is dropped from the cache (the next
    check loads it afresh from its files)."""
    changed = [name for name, fp in before.items() if name in _LOADED and _fingerprint(_LOADED[name][0]) != fp]
    for name in changed:
        log.info("an answer changed the course's copy of %s; it is loaded afresh for the next check", name)
        del _LOADED[name]
    return changed


def exercises(notebook: str | int | None = None) -> list[Exercise]:
    """Every registered exercise in id order, or only notebook `notebook`'s ("04" or 4)."""
    items = sorted(EXERCISES.values(), key=lambda e: (e.notebook, int(e.id.split(".")[1])))
    if notebook is None:
        return items
    nn = f"{int(notebook):02d}" if not isinstance(notebook, str) else notebook.zfill(2)
    return [e for e in items if e.notebook == nn]


def get(exercise: str) -> Exercise:
    """The exercise registered as `exercise`, or an error listing the ones that exist."""
    if not isinstance(exercise, str):
        raise TypeError(f"the exercise is named by its id, a str such as '04.3' (notebook 04, exercise 3), "
                        f"got {type(exercise).__name__} {_short(exercise)}")
    key = exercise.strip()
    if re.fullmatch(r"\d\.\d+", key):        # "4.3" means "04.3"
        key = "0" + key
    if key not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise UnknownExercise(f"there is no exercise {exercise!r}: the checkable exercises are {known}")
    return EXERCISES[key]


def check(exercise: str, answer) -> Result:
    """Whether `answer` is right for `exercise` ("NN.K"), and if not, what kind of wrong; never the answer.

    `answer` is whatever the exercise asks for (a number, a word, a (layer, head) pair, or a function,
    which the check runs on inputs of its own). None means "not answered yet" and is not an error, so a
    notebook's `answer = None` cell runs unattended.
    """
    ex = get(exercise)
    if answer is None or answer is ...:
        return Result(ex.id, False, f"replace None with {ex.expects}, then run the cell again "
                                    f"(stuck? bertlab.hint({ex.id!r}))", answered=False)
    try:
        answer = plain(answer)
    except Unreadable as e:
        return Result(ex.id, False, f"this exercise takes {ex.expects}; got {e}, which the check does not read "
                                    f"(stuck? bertlab.hint({ex.id!r}))", "wrong type")
    except Exception as e:      # noqa: BLE001 -- reading the answer raised (a subclass's base method failed)
        return Result(ex.id, False, f"reading your answer raised {type(e).__name__}: {_message(e)}; pass "
                                    f"{ex.expects} (stuck? bertlab.hint({ex.id!r}))", "could not read the answer")
    before = _fingerprints()
    import torch

    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()    # torch's global switches, as they were
    try:
        verdict = ex.rule(answer)
    except Exception as e:      # noqa: BLE001 -- the answer made the check fail: a ✗ that says so, not a traceback
        log.debug("check %s raised", ex.id, exc_info=True)
        verdict = wrong(f"checking your answer raised {type(e).__name__}: {_message(e)}; pass {ex.expects}",
                        kind="could not check the answer")
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
    changed = _changed_since(before)
    if changed and isinstance(verdict, _Verdict):
        verdict = wrong(f"your answer changed the course's own copy of {' and '.join(changed)} (its weights or its "
                        "train/eval mode) while it was checked, so the check could not trust what it computed: "
                        "leave the models you are given as they are", kind="changed the model")
    if not isinstance(verdict, _Verdict):
        raise TypeError(f"the check of {ex.id} returned {verdict!r}: a rule returns right(...) or wrong(...)")
    message = verdict.message
    if not verdict.right:
        message += f" (stuck? bertlab.hint({ex.id!r}))"
    from .progress import record  # the learner's progress file keeps each answered attempt (progress.py)
    record(ex.id, verdict.right)
    return Result(ex.id, verdict.right, message, verdict.kind)


def hint(exercise: str, level: int = 1) -> Hint:
    """Hint number `level` (1 = a nudge … the last = close to the solution) for `exercise`."""
    ex = get(exercise)
    n = len(ex.hints)
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= n:
        raise ValueError(f"exercise {ex.id} has hints 1 to {n}; got level={level!r}")
    return Hint(ex.id, level, n, ex.hints[level - 1])
