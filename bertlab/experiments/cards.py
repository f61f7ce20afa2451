"""Experiment cards: one small JSON file that says what was run, on what, where, and what came out.

A card holds the bertlab and torch versions, a content hash of the data the runs read, every variant's full
settings and seeds, each row's result (with the machine and thread count it ran on) and the summary
(mean ± standard deviation over seeds, and whether each variant's difference from the reference variant is
clear of the seed-to-seed noise). `replay` (replay.py) re-runs rows of a card and says, row by row, whether
the numbers agree.

A card may come from someone else, so `read_card` checks every field it will use and says which one is
wrong (file, field, row), and `merge_cards` joins shards only when they are slices of one experiment, made
by one version, that agree wherever they overlap.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from pathlib import Path

import torch

from .. import files
from .records import MAX_DATA_BYTES, MAX_DATA_FILES, chunks, number, read_json, to_json

FORMAT = "bertlab-experiment-card/1"
SKIP = {"step", "seed", "fraction"}         # numbers in a result that are coordinates, not measurements


def machine() -> str:
    """What decides bit-identical floats besides the code: CPU (or GPU) model, architecture, torch build."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{platform.machine()} {cpu}, torch {torch.__version__}"


def _data_files(paths) -> list[Path]:
    """The files under `paths` (folders walked in sorted order), at most MAX_DATA_FILES of them."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for folder, dirs, names in os.walk(p):
                dirs.sort()
                out += [Path(folder) / n for n in sorted(names)]
                if len(out) > MAX_DATA_FILES:
                    raise ValueError(f"data folder {p} holds more than {MAX_DATA_FILES:,} files: name the files "
                                     "the runs read, not a folder above them")
        else:
            out.append(p)
    return out


def data_hash(paths) -> str | None:
    """sha256 over the bytes of every file under `paths`, or None for none.

    Only regular files are read, in chunks, and MAX_DATA_BYTES in all: a card's data path naming /dev/zero,
    a FIFO or a huge file is an error that names it, not a hang or an exhausted memory."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise ValueError(f"data must be a list of paths (files or folders the runs read), got {paths!r:.60}")
    found = _data_files(paths)
    if not found:
        return None
    total = 0
    for f in found:                 # sizes first: a file too big is refused before anything is read
        try:
            total += os.stat(f).st_size
        except FileNotFoundError:
            raise FileNotFoundError(f"data file {f} does not exist") from None
        if total > MAX_DATA_BYTES:
            raise ValueError(f"the data files come to more than the {MAX_DATA_BYTES:,} bytes read here (at {f}): name the files "
                             "the runs read")
    h = hashlib.sha256()
    left = MAX_DATA_BYTES
    for f in found:
        h.update(f.name.encode())
        for block in chunks(f, "data file", left):
            h.update(block)
            left -= len(block)
    return "sha256:" + h.hexdigest()


def jobs_of(variants: dict[str, dict], shard: tuple[int, int] | None = None) -> list[tuple[str, int]]:
    """Every (variant, seed) in grid order; with `shard=(k, n)`, every n-th of them starting at the k-th."""
    jobs = [(name, seed) for name, v in variants.items() for seed in v["seeds"]]
    if shard is None:
        return jobs
    try:
        k, n = shard
    except (TypeError, ValueError):
        raise ValueError(f"shard must be (k, n) with 1 ≤ k ≤ n, got {shard!r} (e.g. shard=(2, 4), --shard 2/4)") from None
    if not (type(k) is int and type(n) is int and 1 <= k <= n):
        raise ValueError(f"shard must be (k, n) with 1 ≤ k ≤ n, got {shard!r} (e.g. shard=(2, 4), --shard 2/4)")
    return jobs[k - 1::n]


def _points(row: dict) -> list[tuple[str, dict]]:
    """(group key, metrics) of a row: a run returns one dict of metrics, or a list of them each with a "step"
    (checkpoints of one run, e.g. a quarter, half and all of the pre-training)."""
    result = row["result"]
    if isinstance(result, list):
        return [(f"{row['variant']} @ {p['step']}", p) for p in result]
    return [(row["variant"], result)]


def _numbers(metrics: dict) -> dict[str, float]:
    """The measurements of one point: every number, finite or not ("nan", "inf" as a card records them)."""
    out = {}
    for k, v in metrics.items():
        x = number(v)
        if k not in SKIP and x is not None:
            out[k] = x
    return out


def clear_of_noise(a: dict, b: dict) -> bool:
    """Whether two summary cells {"mean", "std", "n"} differ by more than their seed spreads added together
    (each over at least two seeds): a plain, conservative rule for a handful of seeds, not a significance test."""
    return bool(a["n"] > 1 and b["n"] > 1 and abs(a["mean"] - b["mean"]) > a["std"] + b["std"])


def summarise(rows: list[dict], reference: str | None = None) -> dict:
    """{group: {metric: {"mean", "std", "min", "max", "n", and against the reference: "diff", "clear"}}}.

    `std` is the sample standard deviation over seeds (0 with one seed); "clear" is `clear_of_noise`. A seed
    whose number is not finite (the run diverged) is left out of the mean and counted: "diverged": k, and
    "n" counts the finite ones (a metric no seed kept finite has only "n": 0 and "diverged").
    """
    groups: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for key, metrics in _points(row):
            for m, v in _numbers(metrics).items():
                groups.setdefault(key, {}).setdefault(m, []).append(v)
    summary = {}
    for key, metrics in groups.items():
        summary[key] = {}
        for m, values in metrics.items():
            finite = [v for v in values if math.isfinite(v)]
            cell: dict = {"n": 0}
            if finite:
                t = torch.tensor(finite, dtype=torch.float64)
                cell = {"mean": float(t.mean()), "std": float(t.std()) if len(finite) > 1 else 0.0,
                        "min": float(t.min()), "max": float(t.max()), "n": len(finite)}
            if len(finite) < len(values):
                cell["diverged"] = len(values) - len(finite)
            summary[key][m] = cell
    if reference is not None:
        for key, metrics in summary.items():
            variant, _, step = key.partition(" @ ")
            ref = summary.get(reference + (f" @ {step}" if step else ""))
            if ref is None or variant == reference:
                continue
            for m, s in metrics.items():
                if m in ref and s["n"] and ref[m]["n"]:
                    r = ref[m]
                    s["diff"] = s["mean"] - r["mean"]
                    s["clear"] = clear_of_noise(s, r)
    return summary


def make_card(run: str, variants: dict, rows: list[dict], *, reference=None, data=(), name=None, notes=None,
              jobs=1, shard=None, data_sha=None, versions=None) -> dict:
    """A card. For a merge, `versions` = (bertlab, torch) and `data_sha` are the shards' own (else the versions
    are this process's and `data` is hashed here)."""
    if versions is None:
        import bertlab
        versions, data_sha = (bertlab.__version__, torch.__version__), data_hash(data)
    reference = reference if reference is not None else next(iter(variants))
    if reference not in variants:
        raise ValueError(f"reference {reference!r} is not one of the variants: {', '.join(variants)}")
    return {"format": FORMAT, "name": name or run, "run": run, "bertlab": versions[0],
            "torch": versions[1], "data": [str(p) for p in data],
            "data_sha256": data_sha,
            "variants": variants, "reference": reference, "jobs": jobs,
            "shard": None if shard is None else list(shard),
            "machines": sorted({r.get("machine", "unknown") for r in rows}),
            "rows": rows, "summary": summarise(rows, reference), "notes": notes or {}}


def write_card(card: dict, path) -> Path:
    """Write atomically (a new file renamed over the old one), so a kill never leaves half a card."""
    path = Path(path)
    files.replace_text(path, json.dumps(card, indent=1, allow_nan=False) + "\n")
    return path


# ---- reading a card someone else wrote -------------------------------------------------------------------

def _is_int(x) -> bool:
    return type(x) is int


def check_card(card, where: str = "the card") -> dict:
    """`card` when every field replay, merge and the summary use is there and of its type; else a ValueError
    naming `where` and the field."""
    def bad(field: str, problem: str):
        raise ValueError(f"{where}: {field} {problem}")

    if not isinstance(card, dict):
        bad("", f"is a JSON {type(card).__name__}, not an experiment card (an object with \"format\": {FORMAT!r})")
    if card.get("format") != FORMAT:
        bad("format", f"is {card.get('format')!r}, not {FORMAT!r}: not an experiment card (or from another version "
                      "of the format)")
    for key, kind in (("run", str), ("name", str), ("bertlab", str), ("torch", str), ("reference", str),
                      ("variants", dict), ("rows", list), ("data", list), ("summary", dict), ("notes", dict)):
        if not isinstance(card.get(key), kind):
            bad(key, f"is missing or not a {'string' if kind is str else 'list' if kind is list else 'JSON object'}")
    if card.get("data_sha256") is not None and not isinstance(card["data_sha256"], str):
        bad("data_sha256", "is not a string")
    if not all(isinstance(p, str) for p in card["data"]):
        bad("data", "holds something other than path strings")
    if not card["variants"]:
        bad("variants", "is empty")
    for name, v in card["variants"].items():
        if not (isinstance(v, dict) and isinstance(v.get("settings"), dict) and isinstance(v.get("seeds"), list)):
            bad(f"variants[{name!r}]", "is not {\"settings\": {...}, \"seeds\": [...]}")
        if not all(_is_int(s) and 0 <= s < 2 ** 63 for s in v["seeds"]) or len(set(v["seeds"])) != len(v["seeds"]):
            bad(f"variants[{name!r}].seeds", "are not distinct whole numbers in 0 … 2**63 - 1")
    if card["reference"] not in card["variants"]:
        bad("reference", f"{card['reference']!r} is not one of the variants")
    for i, r in enumerate(card["rows"]):
        field = f"rows[{i}]"
        if not isinstance(r, dict):
            bad(field, "is not a JSON object")
        if not isinstance(r.get("variant"), str) or r["variant"] not in card["variants"]:
            bad(f"{field}.variant", f"{r.get('variant')!r} is not one of the card's variants")
        if not _is_int(r.get("seed")) or r["seed"] not in card["variants"][r["variant"]]["seeds"]:
            bad(f"{field}.seed", f"{r.get('seed')!r} is not one of variant {r['variant']!r}'s seeds")
        check_result(r.get("result"), f"{field}.result", bad)
        if "machine" in r and not isinstance(r["machine"], str):
            bad(f"{field}.machine", "is not a string")
        if "threads" in r and not _is_int(r["threads"]):
            bad(f"{field}.threads", "is not a whole number")
    return card


def check_result(result, field: str, bad) -> None:
    """A row's result: a dict of metrics, or a non-empty list of them each with a number "step"."""
    if isinstance(result, dict):
        return
    if not isinstance(result, list) or not result:
        bad(field, "is not a dict of metrics (or a list of them, one per checkpoint)")
    for j, p in enumerate(result):
        if not isinstance(p, dict) or number(p.get("step")) is None:
            bad(f"{field}[{j}]", "is not a dict of metrics with a number \"step\"")


def read_card(card) -> dict:
    """A card from a path (a regular JSON file, size-bounded), or the dict itself; checked by `check_card`."""
    if isinstance(card, dict):
        return check_card(card)
    if not isinstance(card, (str, os.PathLike)):
        raise ValueError(f"a card is a path to card.json or the card's dict, got {type(card).__name__}")
    return check_card(read_json(card, "an experiment card"), str(card))


def merge_cards(cards) -> dict:
    """One card from the cards of a grid's shards: the same run, variants and data; rows in grid order.

    Refused, with the reason: cards of different experiments, made by different bertlab or torch versions
    (the merge would claim one version for all), or holding one (variant, seed) with different results.
    The merged card keeps the shards' versions, never the merging process's."""
    if isinstance(cards, (str, os.PathLike, dict)) or not hasattr(cards, "__iter__"):
        raise ValueError("merge_cards takes a list of cards (paths or dicts), one per shard")
    named = [(c if isinstance(c, dict) else read_card(c), "card" if isinstance(c, dict) else str(c)) for c in cards]
    named = [(check_card(c, w) if w == "card" else c, w) for c, w in named]
    if not named:
        raise ValueError("merge_cards needs at least one card")
    first, w0 = named[0]
    for c, w in named[1:]:
        for key in ("bertlab", "torch"):
            if c[key] != first[key]:
                raise ValueError(f"{w0} was made with {key} {first[key]} and {w} with {key} {c[key]}: shards of "
                                 "one card must come from one version (re-run the odd shard with it)")
        for key in ("run", "variants", "data_sha256", "reference", "name", "notes"):
            if c.get(key) != first.get(key):
                raise ValueError(f"{w0} and {w} are not slices of one experiment: their {key!r} differ")
    by_job: dict[tuple, tuple[dict, str]] = {}
    for c, w in named:
        for r in c["rows"]:
            job = (r["variant"], r["seed"])
            if job in by_job and by_job[job][0]["result"] != r["result"]:
                raise ValueError(f"row ({job[0]!r}, seed {job[1]}) is in {by_job[job][1]} and in {w} with different "
                                 "results: replay it (bertlab replay CARD --row N) to see which is right, and merge "
                                 "without the other")
            by_job.setdefault(job, (r, w))
    grid = jobs_of(first["variants"])
    missing = [j for j in grid if j not in by_job]
    if missing:
        raise ValueError(f"the shards leave {len(missing)} job(s) unrun, e.g. {missing[0]}: run every slice k/N")
    rows = [to_json(by_job[j][0], f"row {j}") for j in grid]     # an older card's bare NaN becomes "nan"
    return make_card(first["run"], first["variants"], rows, reference=first["reference"], data=first["data"],
                     name=first["name"], notes=first["notes"], jobs=first.get("jobs", 1),
                     data_sha=first["data_sha256"], versions=(first["bertlab"], first["torch"]))
