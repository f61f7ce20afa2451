"""Experiment cards: one small JSON file that says what was run, on what, where, and what came out.

A card holds the bertlab and torch versions, a content hash of the data the runs read, every variant's full
settings and seeds, each row's result (with the machine and thread count it ran on) and the summary
(mean ± standard deviation over seeds, and whether each variant's difference from the reference variant is
clear of the seed-to-seed noise). `replay` re-runs rows of a card and says, row by row, whether the numbers
agree: bit for bit on the same machine and thread count, else within the card's own seed spread.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from pathlib import Path

import torch

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


def data_hash(paths) -> str | None:
    """sha256 over the bytes of every file under `paths` (folders walked in sorted order), or None for none."""
    files = []
    for p in map(Path, paths):
        files += sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return "sha256:" + h.hexdigest()


def _points(row: dict) -> list[tuple[str, dict]]:
    """(group key, metrics) of a row: a run returns one dict of metrics, or a list of them each with a "step"
    (checkpoints of one run, e.g. a quarter, half and all of the pre-training)."""
    result = row["result"]
    if isinstance(result, list):
        return [(f"{row['variant']} @ {p['step']}", p) for p in result]
    return [(row["variant"], result)]


def _numbers(metrics: dict) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items()
            if k not in SKIP and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def clear_of_noise(a: dict, b: dict) -> bool:
    """Whether two summary cells {"mean", "std", "n"} differ by more than their seed spreads added together
    (each over at least two seeds): a plain, conservative rule for a handful of seeds, not a significance test."""
    return bool(a["n"] > 1 and b["n"] > 1 and abs(a["mean"] - b["mean"]) > a["std"] + b["std"])


def summarise(rows: list[dict], reference: str | None = None) -> dict:
    """{group: {metric: {"mean", "std", "min", "max", "n", and against the reference: "diff", "clear"}}}.

    `std` is the sample standard deviation over seeds (0 with one seed); "clear" is `clear_of_noise`.
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
            t = torch.tensor(values, dtype=torch.float64)
            summary[key][m] = {"mean": float(t.mean()), "std": float(t.std()) if len(values) > 1 else 0.0,
                               "min": float(t.min()), "max": float(t.max()), "n": len(values)}
    if reference is not None:
        for key, metrics in summary.items():
            variant, _, step = key.partition(" @ ")
            ref = summary.get(reference + (f" @ {step}" if step else ""))
            if ref is None or variant == reference:
                continue
            for m, s in metrics.items():
                if m in ref:
                    r = ref[m]
                    s["diff"] = s["mean"] - r["mean"]
                    s["clear"] = clear_of_noise(s, r)
    return summary


def make_card(run: str, variants: dict, rows: list[dict], *, reference=None, data=(), name=None, notes=None,
              jobs=1, shard=None, data_sha=None) -> dict:
    import bertlab
    reference = reference or next(iter(variants))
    if reference not in variants:
        raise ValueError(f"reference {reference!r} is not one of the variants: {', '.join(variants)}")
    return {"format": FORMAT, "name": name or run, "run": run, "bertlab": bertlab.__version__,
            "torch": torch.__version__, "data": [str(p) for p in data],
            "data_sha256": data_sha if data_sha is not None else data_hash(data),
            "variants": variants, "reference": reference, "jobs": jobs,
            "shard": None if shard is None else list(shard),
            "machines": sorted({r.get("machine", "unknown") for r in rows}),
            "rows": rows, "summary": summarise(rows, reference), "notes": notes or {}}


def write_card(card: dict, path) -> Path:
    """Write atomically (a temporary file renamed over the old one), so a kill never leaves half a card."""
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_card(card) -> dict:
    """A card from a path, or the dict itself."""
    if isinstance(card, dict):
        return card
    card = json.loads(Path(card).read_text(encoding="utf-8"))
    if card.get("format") != FORMAT:
        raise ValueError(f"not an experiment card (format {card.get('format')!r}, expected {FORMAT!r})")
    return card


def merge_cards(cards) -> dict:
    """One card from the cards of a grid's shards: the same run, variants and data; rows in grid order."""
    from .grid import jobs_of
    cards = [read_card(c) for c in cards]
    if not cards:
        raise ValueError("merge_cards needs at least one card")
    first = cards[0]
    for c in cards[1:]:
        for key in ("run", "variants", "data_sha256", "reference"):
            if c[key] != first[key]:
                raise ValueError(f"these cards are not slices of one experiment: their {key!r} differ")
    by_job = {(r["variant"], r["seed"]): r for c in cards for r in c["rows"]}
    missing = [j for j in jobs_of(first["variants"]) if j not in by_job]
    if missing:
        raise ValueError(f"the shards leave {len(missing)} job(s) unrun, e.g. {missing[0]}: run every slice k/N")
    rows = [by_job[j] for j in jobs_of(first["variants"])]
    return make_card(first["run"], first["variants"], rows, reference=first["reference"], data=first["data"],
                     name=first["name"], notes=first["notes"], jobs=first["jobs"], data_sha=first["data_sha256"])


def _leaves(result) -> dict[str, float]:
    """Every number of a row's result, by a path name ("pos", "300/pos")."""
    if isinstance(result, list):
        return {f"{p['step']}/{k}": v for p in result for k, v in _numbers(p).items()}
    return _numbers(result)


def _data_same(card: dict) -> bool | None:
    """Whether the card's data still hashes the same; its paths may be relative to bertlab's parent folder."""
    if not card.get("data") or not card.get("data_sha256"):
        return None
    import bertlab
    root = Path(bertlab.__file__).resolve().parent.parent
    paths = [p if Path(p).exists() else root / p for p in card["data"]]
    if not all(Path(p).exists() for p in paths):
        return None
    return data_hash(paths) == card["data_sha256"]


def replay(card, row: int | None = None) -> list[dict]:
    """Re-run every row of `card` (or only row number `row`) and compare with the stored numbers.

    Returns one report per row: {"row", "variant", "seed", "agree", "mode", "differences", "identical",
    "data_same"} (`identical`: every number equal, whatever the mode; `data_same`: whether the card's data
    files hash as they did, None when they cannot be found here). `mode` is
    "bit-identical" when the row was computed on this machine with the same thread count (every number
    must then be equal), else "within spread" (each number within two of its variant's seed standard
    deviations, or 1e-6 where the card has a single seed).
    """
    from .grid import run_job
    card = read_card(card)
    rows = card["rows"]
    data_same = _data_same(card)
    if row is not None:
        if not -len(rows) <= row < len(rows):
            raise ValueError(f"the card has {len(rows)} rows (0 … {len(rows) - 1}); there is no row {row}")
    picked = range(len(rows)) if row is None else [row % len(rows)]
    here = machine()
    reports = []
    for i in picked:
        r = rows[i]
        settings = card["variants"][r["variant"]]["settings"]
        fresh = run_job(card["run"], settings, r["seed"])["result"]
        exact = r.get("machine") == here and r.get("threads", 1) == 1
        old, new = _leaves(r["result"]), _leaves(fresh)
        differences = {}
        for k, v in old.items():
            if k not in new:
                differences[k] = (v, None)
                continue
            if exact:
                ok = new[k] == v
            else:
                group, _, metric = (f"{r['variant']} @ {k.split('/')[0]}", None, k.split("/")[1]) if "/" in k \
                    else (r["variant"], None, k)
                s = card["summary"].get(group, {}).get(metric, {})
                ok = abs(new[k] - v) <= max(2 * s.get("std", 0.0), 1e-6)
            if not ok:
                differences[k] = (v, new[k])
        reports.append({"row": i, "variant": r["variant"], "seed": r["seed"], "agree": not differences,
                        "mode": "bit-identical" if exact else "within spread", "differences": differences,
                        "identical": all(new.get(k) == v for k, v in old.items()), "data_same": data_same})
    return reports
