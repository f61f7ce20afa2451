"""Settings declared once: a dataclass field carries its help, the range in which it means something, and whether
a resumed run may change it; the command line, the checks, resume and the docs all read that one place.

    @dataclass
    class PretrainArgs:
        lr: float = setting(1e-4, "peak learning rate", range=Range(low=0, low_ok=False, what="e.g. 1e-4"))
        steps: int = setting(1000, "optimizer steps", range=Range(whole=True, low=1), resumable=True)

    check_given(PretrainArgs, {"lr": float("inf")})   # ValueError: --lr inf (lr=inf) is out of range: ...

`bertlab pretrain`'s flags are generated from PretrainArgs (cli.py, with `add_flags`), pretraining/checks.py checks
the given values with `check_given`, and pretraining/runfolder.py lets a resumed run change only the `resumable`
fields. The mechanism knows nothing about pre-training: FineTuneSettings (finetuning/loop.py) declares its fields
the same way, and `bertlab finetune`'s flags and `finetune`'s checks read them.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Range", "setting", "ranges", "resumable", "help_of", "check_value", "check_given", "flag_of",
           "flag_help", "add_flags"]


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
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"expected a settings dataclass (PretrainArgs, FineTuneSettings, …), got {cls!r}")
    return {f.name: f for f in dataclasses.fields(cls)}


def _field(cls, name: str) -> dataclasses.Field:
    fields = _fields(cls)
    if name not in fields:
        raise ValueError(f"{cls.__name__} has no field {name!r}: its fields are {', '.join(fields)}")
    return fields[name]


def ranges(cls) -> dict[str, Range]:
    """{field: Range} for every field of `cls` that declares one."""
    return {name: f.metadata["range"] for name, f in _fields(cls).items() if f.metadata.get("range") is not None}


def resumable(cls) -> tuple[str, ...]:
    """The fields a resumed run may change (the rest must stay as the run was started)."""
    return tuple(name for name, f in _fields(cls).items() if f.metadata.get("resumable"))


def help_of(cls, name: str) -> str:
    return _field(cls, name).metadata.get("help", "")


def flag_of(name: str) -> str:
    """The command-line flag of a field: `max_len` is `--max-len`."""
    return "--" + name.replace("_", "-")


def check_value(cls, name: str, value, flags: bool = True) -> None:
    """`value` for field `name` of `cls` in its declared range, or a ValueError naming the value, the field and
    what is allowed: as a command line spells it (`--max-len 3 (max_len=3)`), or with `flags=False` as a Python
    call does (`max_length=2`, and the type of a value of the wrong kind)."""
    r = ranges(cls).get(name)
    if r is None or (value is None and r.optional):
        return
    given, allowed = f"{flag_of(name)} {value!r} ({name}={value!r})" if flags else f"{name}={value!r}", r.describe()
    what = f", {r.what}" if r.what else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if r.whole else numbers.Real):
        kind = "" if flags else f" ({type(value).__name__})"
        raise ValueError(f"{given}{kind}: must be {allowed}{what}")
    if not r.contains(value):
        raise ValueError(f"{given} is out of range: it must be {allowed}{what}")


def check_given(cls, options: dict, flags: bool = True) -> None:
    """Every value in `options` (field: value, as a caller passed them) in its declared range."""
    for name, value in options.items():
        check_value(cls, name, value, flags)


def flag_help(cls, name: str) -> str:
    """A field's help as its flag shows it: the help, the range, whether resume may change it (% escaped for
    argparse)."""
    meta = _field(cls, name).metadata
    said = meta.get("help", "") + (f"; {meta['range'].describe()}" if meta.get("range") else "")
    return (said + ("; may change with --resume" if meta.get("resumable") else "")).replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> None:
    """One flag per field of `cls` but those in `skip`, typed by its annotation: a bool is --x / --no-x, a list
    takes one or more values, a number or a string one; each with the field's default and `flag_help`."""
    fields = _fields(cls)
    if isinstance(skip, str) or set(skip) - set(fields):
        raise ValueError(f"skip must be a tuple of {cls.__name__}'s field names ({', '.join(fields)}), got {skip!r}")
    for f in fields.values():
        if f.name in skip:
            continue
        flag, default, kind, said = flag_of(f.name), f.default, str(f.type), flag_help(cls, f.name)
        if kind.startswith("bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=said)
        elif kind.startswith("list"):
            parser.add_argument(flag, nargs="+", default=default, help=said)
        else:
            cast = int if kind.startswith("int") else float if kind.startswith("float") else str
            parser.add_argument(flag, type=cast, default=default, help=said + f" (default: {default})")
