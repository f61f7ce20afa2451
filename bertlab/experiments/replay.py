"""`replay`: re-run rows of an experiment card and say, row by row, whether the numbers agree.

Bit for bit on the same machine and thread count, else within the seed spread of the row's variant; timings
(numbers named `..._s`, such as `train_s` or `steps_per_s`) are never compared, though every number's name
must be there as the run makes it (a card that drops a number, or renames it `..._s`, disagrees). The spread is recomputed from the card's rows, never read from its stored summary (a summary can be edited to
make any row "agree"), and a row with no finite number to compare never agrees, nor does one that
recorded a diverged (non-finite) number. The card's `run` is code: it runs only if trusted (trust.py),
and that is decided before anything is imported.
"""

from __future__ import annotations

import math
from pathlib import Path

from .cards import _numbers, data_hash, machine, read_card, summarise
from .grid import JobFailed, run_job
from .trust import allowed, check_trusted, resolve_run


def is_timing(name: str) -> bool:
    """A number named `..._s` (seconds) or `..._per_s` (a rate) is a timing: the card keeps it and the summary
    shows it, but it measures the machine's load as much as the code, so a replay never compares it."""
    return name.rsplit("/", 1)[-1].endswith("_s")


def _all_leaves(result) -> dict[str, float]:
    """Every number of a row's result, timings too, by a path name ("pos", "300/pos", "train_s")."""
    if isinstance(result, list):
        return {f"{p['step']}/{k}": v for p in result for k, v in _numbers(p).items()}
    return _numbers(result)


def _leaves(result) -> dict[str, float]:
    """Every number of a row's result but its timings, by a path name ("pos", "300/pos")."""
    return {k: v for k, v in _all_leaves(result).items() if not is_timing(k)}


def _data_same(card: dict) -> bool | None:
    """Whether the card's data still hashes the same; its paths may be relative to bertlab's parent folder.
    Only regular files are read, size-bounded (records.chunks): a card naming /dev/zero is an error."""
    if not card.get("data") or not card.get("data_sha256"):
        return None
    import bertlab
    root = Path(bertlab.__file__).resolve().parent.parent
    paths = [Path(p) if Path(p).exists() else root / p for p in card["data"]]
    if not all(p.exists() for p in paths):
        return None
    return data_hash(paths) == card["data_sha256"]


def replay(card, row: int | None = None, allow=()) -> list[dict]:
    """Re-run every row of `card` (or only row number `row`) and compare with the stored numbers.

    Returns one report per row: {"row", "variant", "seed", "agree", "mode", "differences", "identical",
    "data_same", "reason"} (`identical`: every number equal, whatever the mode; `data_same`: whether the
    card's data files hash as they did, None when they cannot be found here; `reason`: why a row cannot
    agree, else None). `mode` is "bit-identical" when the row was computed on this machine with the same
    thread count (every number must then be equal), else "within spread" (each number within two of its
    variant's seed standard deviations, computed from the card's rows, or 1e-6 where it has a single seed).
    The card's run must be one of bertlab's studies or in a module named in `allow`.
    """
    card = read_card(card)
    allow = allowed(allow)
    check_trusted(card["run"], allow, "replay CARD")          # before anything is imported or read
    rows = card["rows"]
    if not rows:
        raise ValueError("the card has no rows to replay")
    if row is not None:
        if isinstance(row, bool) or not isinstance(row, int):
            raise ValueError(f"row must be a whole number (0 … {len(rows) - 1}), got {row!r}")
        if not -len(rows) <= row < len(rows):
            raise ValueError(f"the card has {len(rows)} rows (0 … {len(rows) - 1}); there is no row {row}")
    picked = range(len(rows)) if row is None else [row % len(rows)]
    data_same = _data_same(card)
    spread = summarise(rows)                                   # from the rows, not card["summary"]
    fn = resolve_run(card["run"], allow, "replay CARD")
    here = machine()
    reports = []
    for i in picked:
        r = rows[i]
        try:
            fresh = run_job(fn, card["variants"][r["variant"]]["settings"], r["seed"])["result"]
        except KeyboardInterrupt:
            raise
        except Exception as e:
            raise JobFailed(f"row {i} ({r['variant']!r}, seed {r['seed']}) raised {type(e).__name__}: {e} (the "
                            "card's settings for it, or the code since it was written, do not run)") from e
        exact = r.get("machine") == here and r.get("threads", 1) == 1
        old, new = _leaves(r["result"]), _leaves(fresh)
        differences = {}
        for k, v in old.items():
            x = new.get(k)
            if x is None:
                differences[k] = (v, None)
                continue
            if exact or not math.isfinite(v):
                ok = x == v
            else:
                group, metric = (f"{r['variant']} @ {k.split('/')[0]}", k.split("/", 1)[1]) if "/" in k \
                    else (r["variant"], k)
                std = spread.get(group, {}).get(metric, {}).get("std", 0.0)
                ok = abs(x - v) <= max(2 * std, 1e-6)
            if not ok:
                differences[k] = (v, x)
        # the names must match too, timings' included (only their values go unchecked): else a card could drop
        # a number the run makes, or rename it `..._s`, and replay would agree without ever comparing it
        stored, made = _all_leaves(r["result"]), _all_leaves(fresh)
        for k in sorted(made.keys() - stored.keys()):
            differences[k] = (None, made[k])
        for k in sorted(stored.keys() - made.keys()):
            differences.setdefault(k, (stored[k], None))
        finite = [k for k, v in old.items() if math.isfinite(v)]
        reason = ("the row holds no finite number to compare" if not finite else
                  "the row recorded a number that is not finite (the run diverged): nothing to check it against"
                  if len(finite) < len(old) else None)
        reports.append({"row": i, "variant": r["variant"], "seed": r["seed"], "agree": not differences and not reason,
                        "mode": "bit-identical" if exact else "within spread", "differences": differences,
                        "identical": stored.keys() == made.keys() and all(new.get(k) == v for k, v in old.items()), "data_same": data_same,
                        "reason": reason})
    return reports
