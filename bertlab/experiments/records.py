"""Reading and writing what an experiment keeps: cards, specs, `rows.jsonl` and the data files a card hashes.

Cards and specs are shared, so everything here reads a file someone else may have written:
- **regular files only, read in chunks, size-bounded.** A path may name `/dev/zero` (endless), `/dev/stdin`
  or a FIFO (waits for ever) or a folder; each is refused by what it is before a byte is read, and a file
  larger than the bound is refused by its size rather than read into memory.
- **errors that name the file and line.** A JSON error says `card.json: line 3 column 7: …`, a bad line of
  `rows.jsonl` its line number, so the one-line message of the command points at what to fix.
- **results a card can hold.** A run's result becomes JSON before its row is written: a float that is not
  finite is recorded as the string "nan", "inf" or "-inf" (so the card stays strict JSON and the summary
  can count it as diverged); anything JSON cannot hold (a tensor, an object) is an error naming where it sits.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 256 << 20       # a card, spec or rows.jsonl: far above any real one (a 21-row card is 60 kB)
MAX_DATA_BYTES = 4 << 30         # every data file of a card together
MAX_DATA_FILES = 100_000         # files under a card's data folders
CHUNK = 1 << 20
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}   # how a card records a float that is not finite


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "something else")


def chunks(path, what: str, limit: int = MAX_FILE_BYTES):
    """The bytes of the regular file `path`, a chunk at a time; anything else, or more than `limit` bytes,
    is a ValueError naming the file (`what` says what it was meant to be)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO opens without waiting
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {path} is a folder: pass a file") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ValueError(f"{what} {path} is {_kind(st.st_mode)}, not a regular file: only regular files are read")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > limit:
            raise ValueError(f"{what} {path} is {st.st_size:,} bytes, more than the {limit:,} read here: "
                             "is it the right file?")
        os.set_blocking(fd, True)
        total = 0
        while block := f.read(CHUNK):
            total += len(block)
            if total > limit:              # it grew while being read
                raise ValueError(f"{what} {path} holds more than the {limit:,} bytes read here: is it the right file?")
            yield block


def read_text(path, what: str, limit: int = MAX_FILE_BYTES) -> str:
    raw = b"".join(chunks(path, what, limit))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise ValueError(f"{path}: line {line}: not UTF-8 text ({what} is a JSON text file)") from None


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs):
    """An object's pairs as a dict; a key given twice is an error (json keeps the last one silently, so a spec
    with two variants of one name would run only the second)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def parse_json(text: str, where: str, what: str):
    """json.loads with an error that names `where` (a file, or file:line) and says what was expected; a key
    that appears twice in one object is an error too."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as e:
        raise ValueError(f"{where}: the key {e.args[0]!r} appears twice in one object ({what} must name each "
                         "key once): remove or rename one") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: line {e.lineno} column {e.colno}: {e.msg} ({what} must be JSON)") from None
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply ({what} must be JSON of a sensible depth)") from None


def read_json(path, what: str):
    return parse_json(read_text(path, what), str(path), what)


def read_jsonl(path, what: str) -> tuple[list[tuple[int, object]], bool]:
    """[(line number, value)] of a JSON-lines file, and whether its last line was cut short (a kill mid-write:
    no newline at the end and not JSON), which is skipped. Any other line that is not JSON is an error."""
    text = read_text(path, what)
    lines = text.split("\n")
    cut = False
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            if n == len(lines):            # the last piece, with no newline after it
                cut = True
                continue
            raise ValueError(f"{path}: line {n} is not a JSON object ({what} holds one per line): remove or "
                             "fix that line") from None
    return out, cut


def to_json(value, where: str):
    """`value` as a card stores it (see the module's docstring), or a ValueError naming `where` in it."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        if abs(int(value)) > 2 ** 1023:      # beyond any float: the summary could not average it
            raise ValueError(f"{where} is a whole number of {len(str(abs(int(value))))} digits, larger than any "
                             "float: a card stores numbers the summary can average (return a float, or its log)")
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else ("nan" if math.isnan(value) else "inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            bad = bad[0]                      # (a None key too: JSON would store it as "null")
            raise ValueError(f"{where} has the key {bad!r} ({type(bad).__name__}): a card's keys are strings")
        return {k: to_json(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    hint = " (for a tensor: float(x) or x.tolist())" if type(value).__name__ in ("Tensor", "ndarray") else ""
    raise ValueError(f"{where} is a {type(value).__name__}, which a card (JSON) cannot hold: return plain numbers, "
                     f"strings, lists and dicts{hint}")


def number(value) -> float | None:
    """A stored number as a float (the non-finite strings too); None for anything that is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:               # a whole number beyond any float (to_json refuses one; a card may hold it)
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value]
    return None


def dumps(value) -> str:
    """Strict JSON (a NaN here is a bug: to_json records it as "nan")."""
    return json.dumps(value, allow_nan=False)
