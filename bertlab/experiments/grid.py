"""`experiment`: a grid of variants × seeds, each run in its own process, every result kept as a row.

    def run(settings, seed):                    # any importable function: settings (a dict) + seed → metrics
        ...
        return {"accuracy": 0.83}

    card = bertlab.experiment(run, {"15 %": {"rate": 0.15}, "40 %": {"rate": 0.40}}, seeds=[0, 1, 2],
                              out="runs/mask-rate", jobs=2)
    card["summary"]["40 %"]["accuracy"]         # {"mean", "std", "n", "diff", "clear"} against the first variant

Why it is built this way:
- **A row depends on (settings, seed) only.** Each job seeds Python's and torch's generators with its seed and
  runs with one torch thread, in a fresh process or in this one, so `jobs` changes no number, and the same
  machine gives the same numbers bit for bit on a re-run (`replay`).
- **Resumable.** Each finished job appends one line to `out/rows.jsonl`; a killed experiment started again
  with the same `out` keeps those rows and runs only what is missing. A half-written last line is ignored.
- **Shardable.** `shard=(k, n)` runs the k-th of n slices of the job list (1-based, as a Slurm array index),
  so a scheduler can spread one grid over machines; `merge_cards` joins the slices' cards into one.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import random
import time
from pathlib import Path
from typing import Callable

import torch

from .cards import machine, make_card, write_card

ROWS = "rows.jsonl"


def run_name(run: Callable | str) -> str:
    """"module:function" for an importable function (what a card records, so it can be replayed)."""
    if isinstance(run, str):
        return run
    return f"{run.__module__}:{run.__qualname__}"


def resolve_run(name: str) -> Callable:
    module, _, attr = name.partition(":")
    if not attr:
        raise ValueError(f"a run is named 'module:function', got {name!r}")
    fn = importlib.import_module(module)
    for part in attr.split("."):
        fn = getattr(fn, part)
    return fn


def normalise_variants(variants, seeds) -> dict[str, dict]:
    """{name: {"settings": dict, "seeds": [...]}}; a variant given as a plain dict of settings runs `seeds`."""
    if not isinstance(variants, dict) or not variants:
        raise ValueError("variants must be a non-empty dict {name: settings dict} (or {name: {'settings': ..., "
                         "'seeds': [...]}} for a variant with its own seeds)")
    out = {}
    for name, v in variants.items():
        if not isinstance(v, dict):
            raise ValueError(f"variant {name!r}: expected a dict of settings, got {type(v).__name__}")
        own = set(v) <= {"settings", "seeds"} and "settings" in v
        settings, vseeds = (v["settings"], v.get("seeds", seeds)) if own else (v, seeds)
        if vseeds is None or not list(vseeds):
            raise ValueError(f"variant {name!r} has no seeds: pass seeds=[0, 1, 2] (or give the variant its own)")
        json.dumps(settings)      # a card is JSON: a setting that is not (a function, a tensor) fails here, early
        out[name] = {"settings": dict(settings), "seeds": [int(s) for s in vseeds]}
    return out


def jobs_of(variants: dict[str, dict], shard: tuple[int, int] | None = None) -> list[tuple[str, int]]:
    """Every (variant, seed) in grid order; with `shard=(k, n)`, every n-th of them starting at the k-th."""
    jobs = [(name, seed) for name, v in variants.items() for seed in v["seeds"]]
    if shard is None:
        return jobs
    k, n = shard
    if not (isinstance(k, int) and isinstance(n, int) and 1 <= k <= n):
        raise ValueError(f"shard must be (k, n) with 1 ≤ k ≤ n, got {shard!r} (e.g. --shard 2/4)")
    return jobs[k - 1::n]


def run_job(run: Callable | str, settings: dict, seed: int) -> dict:
    """One row: the run with every generator seeded by `seed` and one torch thread, timed in CPU seconds.

    `run` is a function or its "module:function" name (a function defined in a notebook has no importable
    name, so it is called as it is, in this process).
    """
    fn = resolve_run(run) if isinstance(run, str) else run
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        random.seed(seed)
        torch.manual_seed(seed)
        t0 = time.process_time()
        result = fn(dict(settings), seed)
        return {"result": result, "cpu_s": round(time.process_time() - t0, 2)}
    finally:
        torch.set_num_threads(threads)


def _pool_job(args):
    name, variant, settings, seed = args
    return variant, seed, run_job(name, settings, seed)


def read_rows(out: Path) -> list[dict]:
    """The finished rows in `out/rows.jsonl`; a last line cut short by a kill is skipped."""
    path = Path(out) / ROWS
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def experiment(run: Callable | str, variants: dict, seeds=None, *, out, jobs: int = 1,
               shard: tuple[int, int] | None = None, reference: str | None = None, data=(), name: str | None = None,
               notes: dict | None = None) -> dict:
    """Run every (variant, seed) of the grid not yet in `out/rows.jsonl`; write and return the card.

    `run(settings, seed) -> dict` must be importable (a module-level function) when `jobs > 1`, and for the
    card to be replayed. `variants`: {name: settings} (or {name: {"settings", "seeds"}}). `reference`: the
    variant the summary compares every other one with (default: the first). `data`: files the runs read,
    hashed into the card. The card goes to `out/card.json` (with a shard: `out/card-K-of-N.json`).
    """
    name_of_run = run_name(run)
    variants = normalise_variants(variants, seeds)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of processes, at least 1, got {jobs!r}")
    if jobs > 1 and callable(run) and getattr(run, "__module__", None) == "__main__":
        raise ValueError(f"run {name_of_run} is not importable by a worker process: define it in a module "
                         "(a .py file on the path), or use jobs=1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = jobs_of(variants, shard)
    done = {(r["variant"], r["seed"]): r for r in read_rows(out)
            if r.get("run") == name_of_run and r.get("settings") == variants.get(r["variant"], {}).get("settings")}
    missing = [(v, s) for v, s in todo if (v, s) not in done]

    def finished(variant: str, seed: int, job: dict) -> None:
        row = {"variant": variant, "seed": seed, "run": name_of_run, "settings": variants[variant]["settings"],
               "result": job["result"], "cpu_s": job["cpu_s"], "threads": 1, "machine": machine()}
        done[variant, seed] = row
        with open(out / ROWS, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    if jobs > 1 and len(missing) > 1:
        work = [(name_of_run, v, variants[v]["settings"], s) for v, s in missing]
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(work))) as pool:
            for variant, seed, job in pool.imap_unordered(_pool_job, work):
                finished(variant, seed, job)
    else:
        for v, s in missing:
            finished(v, s, run_job(run, variants[v]["settings"], s))
    rows = [_public(done[j]) for j in todo]
    card = make_card(name_of_run, variants, rows, reference=reference, data=data, name=name, notes=notes,
                     jobs=jobs, shard=shard)
    write_card(card, out / ("card.json" if shard is None else f"card-{shard[0]}-of-{shard[1]}.json"))
    return card


def _public(row: dict) -> dict:
    return {k: row[k] for k in ("variant", "seed", "result", "cpu_s", "threads", "machine")}
