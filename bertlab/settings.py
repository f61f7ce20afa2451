"""Settings declared once: a dataclass field carries its help, the range in which it means something, and whether
a resumed run may change it; the command line, the checks, resume and the docs all read that one place.

    @dataclass
    class PretrainArgs:
        lr: float = setting(1e-4, "peak learning rate", range=Range(low=0, low_ok=False, what="e.g. 1e-4"))
        steps: int = setting(1000, "optimizer steps", range=Range(whole=True, low=1), resumable=True)

    check_given(PretrainArgs, {"lr": float("inf")})   # ValueError: --lr inf (lr=inf) is out of range: ...

`bertlab pretrain`'s flags are generated from PretrainArgs (cli.py), pretraining/checks.py checks the given
values with `check_given`, and pretraining/runfolder.py lets a resumed run change only the `resumable` fields.
The mechanism knows nothing about pre-training, so another settings dataclass (FineTuneSettings) can use it.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Range", "setting", "ranges", "resumable", "help_of", "check_value", "check_given", "flag_of"]


@dataclass(frozen=True)
class Range:
    """Where a number means something: whole or not, the lowest value (allowed or not), the highest (or None)."""
    whole: bool = False
    low: float | None = None
    low_ok: bool = True
    high: float | None = None
    high_ok: bool = False
    what: str = ""               # what the number is, said after the range in an error
    optional: bool = False       # None is allowed (the default: a preset's value, a share of steps, …)

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a finite number"
        if self.high is None:
            return kind if self.low is None else f"{kind} {'≥' if self.low_ok else '>'} {_num(self.low)}"
        if self.low is None:
            return f"{kind} {'≤' if self.high_ok else '<'} {_num(self.high)}"
        if self.low_ok and self.high_ok:
            return f"{kind} from {_num(self.low)} to {_num(self.high)}"
        return f"{kind} in {'[' if self.low_ok else '('}{_num(self.low)}, {_num(self.high)}{']' if self.high_ok else ')'}"

    def contains(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if self.whole else numbers.Real):
            return False
        try:
            if not math.isfinite(value):
                return False
        except (TypeError, OverflowError):
            return False
        if self.low is not None and (value < self.low or (value == self.low and not self.low_ok)):
            return False
        return self.high is None or value < self.high or (value == self.high and self.high_ok)


def _num(x) -> str:
    if x == 2**63 - 1:
        return "2**63 - 1"
    return str(x) if isinstance(x, int) else f"{x:g}"


def setting(default: Any = dataclasses.MISSING, help: str = "", *, range: Range | None = None,
            resumable: bool = False, default_factory: Callable[[], Any] | Any = dataclasses.MISSING):
    """A dataclass field with its help text, its `Range` (numbers only) and whether resume may change it."""
    metadata = {"help": help, "range": range, "resumable": resumable}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def ranges(cls) -> dict[str, Range]:
    """{field: Range} for every field of `cls` that declares one."""
    return {name: f.metadata["range"] for name, f in _fields(cls).items() if f.metadata.get("range") is not None}


def resumable(cls) -> tuple[str, ...]:
    """The fields a resumed run may change (the rest must stay as the run was started)."""
    return tuple(name for name, f in _fields(cls).items() if f.metadata.get("resumable"))


def help_of(cls, name: str) -> str:
    return _fields(cls)[name].metadata.get("help", "")


def flag_of(name: str) -> str:
    """The command-line flag of a field: `max_len` is `--max-len`."""
    return "--" + name.replace("_", "-")


def check_value(cls, name: str, value) -> None:
    """`value` for field `name` of `cls` in its declared range, or a ValueError naming the flag, the value, the
    field and what is allowed."""
    r = ranges(cls).get(name)
    if r is None or (value is None and r.optional):
        return
    flag, allowed = flag_of(name), r.describe()
    what = f", {r.what}" if r.what else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if r.whole else numbers.Real):
        raise ValueError(f"{flag} {value!r} ({name}={value!r}): must be {allowed}{what}")
    if not r.contains(value):
        raise ValueError(f"{flag} {value!r} ({name}={value!r}) is out of range: it must be {allowed}{what}")


def check_given(cls, options: dict) -> None:
    """Every value in `options` (field: value, as a caller passed them) in its declared range."""
    for name, value in options.items():
        check_value(cls, name, value)
