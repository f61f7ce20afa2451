"""`experiment`: a grid of variants × seeds, each run in its own process, every result kept as a row.

    def run(settings, seed):                    # any importable function: settings (a dict) + seed → metrics
        ...
        return {"accuracy": 0.83}

    card = bertlab.experiment(run, {"15 %": {"rate": 0.15}, "40 %": {"rate": 0.40}}, seeds=[0, 1, 2],
                              out="runs/mask-rate", jobs=2)
    card["summary"]["40 %"]["accuracy"]         # {"mean", "std", "n", "diff", "clear"} against the first variant

Why it is built this way:
- **A row depends on (settings, seed) only.** Each job seeds Python's and torch's generators with its seed,
  gets its own deep copy of the settings (a run that edits them changes no later job) and runs with one
  torch thread, in a worker process or in this one, so `jobs` changes no number, and the same machine gives
  the same numbers bit for bit on a re-run (`replay`).
- **Resumable.** Each finished job appends one line to `out/rows.jsonl`; a killed experiment started again
  with the same `out` keeps those rows and runs only what is missing. A half-written last line is dropped.
- **Cannot hang or lie.** A worker that dies (a crash, the out-of-memory killer) is an error naming its job,
  the finished rows kept; a result JSON cannot hold is an error before its row is written; a result that is
  not finite is recorded as such and counted as diverged in the summary; while a grid runs, `out` is locked
  (`out/.experiment.lock`), so a second experiment there is refused instead of running every job again.
- **Shardable.** `shard=(k, n)` runs the k-th of n slices of the job list (1-based, as a Slurm array index),
  so a scheduler can spread one grid over machines; `merge_cards` joins the slices' cards into one.
"""

from __future__ import annotations

import contextlib
import copy
import json
import multiprocessing
import numbers
import os
import pickle
import random
import signal
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

import torch

from .. import files
from .cards import check_result, data_hash, jobs_of, machine, make_card, write_card
from .records import dumps, read_jsonl, to_json
from .trust import allowed, check_trusted, resolve_run, run_name

ROWS = "rows.jsonl"
LOCK = ".experiment.lock"
MAX_SEED = 2 ** 63 - 1


class JobFailed(RuntimeError):
    """A job of the grid raised, or its worker process died; the rows finished before it are kept."""


def check_seeds(seeds, where: str) -> list[int]:
    """`seeds` as a list of distinct whole numbers in 0 … 2**63 - 1, else a ValueError saying what to pass."""
    example = "e.g. seeds=[0, 1, 2]"
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (list, tuple, range)):
        raise ValueError(f"{where}: seeds must be a list of distinct whole numbers ({example}), got "
                         f"{type(seeds).__name__} {seeds!r:.40}")
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise ValueError(f"{where}: seed {s!r} is not a whole number ({example})")
        if not 0 <= s <= MAX_SEED:
            raise ValueError(f"{where}: seed {s} is outside 0 … 2**63 - 1 ({example})")
        if int(s) in out:
            raise ValueError(f"{where}: seed {s} is given twice: each seed is one run, and a repeated one would "
                             "count a run twice (and make its spread look smaller)")
        out.append(int(s))
    if not out:
        raise ValueError(f"{where} has no seeds: pass seeds=[0, 1, 2] (or give the variant its own)")
    return out


def _check_settings(settings, where: str) -> dict:
    """A dict that comes back from JSON as it went in (a card stores settings as JSON and resumes by them)."""
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: expected a dict of settings, got {type(settings).__name__}")
    for key, value in settings.items():
        if not isinstance(key, str):
            raise ValueError(f"{where}: setting name {key!r} is not a string (a card stores settings as JSON)")
        try:
            same = json.loads(json.dumps(value, allow_nan=False)) == value
        except (TypeError, ValueError, RecursionError):
            same = False
        if not same or (isinstance(value, float) and value != value):
            raise ValueError(f"{where}: setting {key!r} = {value!r:.60} does not survive JSON (a card stores settings "
                             "as JSON; use numbers, strings, lists, dicts, true/false/null, no tuples or NaN)")
    return copy.deepcopy(settings)


def normalise_variants(variants, seeds) -> dict[str, dict]:
    """{name: {"settings": dict, "seeds": [...]}}; a variant given as a plain dict of settings runs `seeds`."""
    if not isinstance(variants, dict) or not variants:
        raise ValueError("variants must be a non-empty dict {name: settings dict} (or {name: {'settings': ..., "
                         "'seeds': [...]}} for a variant with its own seeds)")
    out = {}
    for name, v in variants.items():
        if not isinstance(name, str) or " @ " in name or not name.strip():
            raise ValueError(f"variant name {name!r}: a name is a non-empty string without ' @ ' (the summary "
                             "writes 'variant @ step')")
        if not isinstance(v, dict):
            raise ValueError(f"variant {name!r}: expected a dict of settings, got {type(v).__name__}")
        own = set(v) <= {"settings", "seeds"} and "settings" in v
        settings, vseeds = (v["settings"], v.get("seeds", seeds)) if own else (v, seeds)
        if vseeds is None:
            raise ValueError(f"variant {name!r} has no seeds: pass seeds=[0, 1, 2] (or give the variant its own)")
        out[name] = {"settings": _check_settings(settings, f"variant {name!r}"),
                     "seeds": check_seeds(vseeds, f"variant {name!r}")}
    return out


def run_job(run: Callable | str, settings: dict, seed: int, allow=()) -> dict:
    """One row: the run with every generator seeded by `seed`, its own copy of the settings and one torch
    thread, timed in CPU seconds; the result as a card stores it (`records.to_json`).

    `run` is a function or its "module:function" name (resolved only if trusted: see trust.py).
    """
    fn = resolve_run(run, allow, "experiment SPEC") if isinstance(run, str) else run
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        random.seed(seed)
        torch.manual_seed(seed)
        t0 = time.process_time()
        result = fn(copy.deepcopy(settings), seed)
        cpu = round(time.process_time() - t0, 2)
    finally:
        torch.set_num_threads(threads)
    result = to_json(result, "the run's result")

    def bad(field, problem):
        raise ValueError(f"{field} {problem}: a run returns {{metric: number}}, or a list of them each with a "
                         "\"step\"")
    check_result(result, "the run's result", bad)
    return {"result": result, "cpu_s": cpu}


def read_rows(out) -> list[dict]:
    """The finished rows in `out/rows.jsonl` (a last line cut short by a kill is skipped); a line that is not
    a row is an error naming the file and line."""
    rows, _ = _read_rows(Path(out) / ROWS)
    return rows


def _read_rows(path: Path) -> tuple[list[dict], bool]:
    if not path.exists() and not path.is_symlink():
        return [], False
    lines, cut = read_jsonl(path, "rows.jsonl")
    rows = []
    for n, row in lines:
        if not (isinstance(row, dict) and isinstance(row.get("variant"), str) and type(row.get("seed")) is int
                and "result" in row):
            raise ValueError(f"{path}: line {n} is not a row of an experiment ({{\"variant\", \"seed\", \"result\", …}}):"
                             " remove or fix that line")
        rows.append(row)
    return rows, cut


@contextlib.contextmanager
def _locked(out: Path):
    """Hold out/.experiment.lock (an flock, dropped by the system however this process ends)."""
    from ..pretraining import runfolder
    if runfolder.fcntl is None:      # Windows: no flock, the folder goes unlocked
        yield
        return
    path = out / LOCK
    try:
        fd = runfolder._lock(path)
    except FileExistsError as e:
        holder = str(e).partition("(")[2].partition(")")[0]
        raise FileExistsError(f"{out} is in use by another experiment (its lock {path} is held by {holder}): wait "
                              "for it to end, stop it, or choose another out") from None
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def experiment(run: Callable | str, variants: dict, seeds=None, *, out, jobs: int = 1,
               shard: tuple[int, int] | None = None, reference: str | None = None, data=(), name: str | None = None,
               notes: dict | None = None, allow=()) -> dict:
    """Run every (variant, seed) of the grid not yet in `out/rows.jsonl`; write and return the card.

    `run(settings, seed) -> dict` must be importable (a module-level function) when `jobs > 1`, and for the
    card to be replayed. Given by name ("module:function"), it must be one of bertlab's studies or in a module
    named in `allow`. `variants`: {name: settings} (or {name: {"settings", "seeds"}}); `seeds`: a list of
    distinct whole numbers. `reference`: the variant the summary compares every other one with (default: the
    first). `data`: files the runs read, hashed into the card. The card goes to `out/card.json` (with a
    shard: `out/card-K-of-N.json`).
    """
    allow = allowed(allow)
    if isinstance(run, str):
        check_trusted(run, allow, "experiment SPEC")
    elif not callable(run):
        raise ValueError(f"run must be a function run(settings, seed) or its 'module:function' name, got "
                         f"{type(run).__name__}")
    name_of_run = run_name(run)
    variants = normalise_variants(variants, seeds)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of processes, at least 1, got {jobs!r}")
    if reference is not None and reference not in variants:
        raise ValueError(f"reference {reference!r} is not one of the variants: {', '.join(variants)}")
    if notes is not None and not isinstance(notes, dict):
        raise ValueError(f"notes must be a dict (what the card's reader needs beside the rows), got {type(notes).__name__}")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"name must be a non-empty string (the card's title), got {name!r:.40}")
    if notes is not None:
        notes = to_json(notes, "notes")
    todo = jobs_of(variants, shard)
    if jobs > 1 and not isinstance(run, str):
        try:
            pickle.dumps(run)
        except Exception:
            raise ValueError(f"run {name_of_run} is not importable by a worker process: define it in a module "
                             "(a .py file on the path), or use jobs=1") from None
        if getattr(run, "__module__", None) == "__main__":
            raise ValueError(f"run {name_of_run} is not importable by a worker process: define it in a module "
                             "(a .py file on the path), or use jobs=1")
    if isinstance(data, (str, os.PathLike)):
        data = [data]
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ValueError(f"out must be a folder path (for rows.jsonl and the card), got {out!r:.60}")
    import bertlab
    versions = (bertlab.__version__, torch.__version__)
    data_sha = data_hash(data)                  # a bad data path fails now, not after the runs
    out = make_out(out)
    with _locked(out):
        rows_path = out / ROWS
        stored, cut = _read_rows(rows_path)
        if cut:                                 # drop the half line, so the next row starts on a line of its own
            files.replace_text(rows_path, "".join(dumps(to_json(r, "a row")) + "\n" for r in stored))
        done = {(r["variant"], r["seed"]): r for r in stored
                if r.get("run") == name_of_run and r.get("settings") == variants.get(r["variant"], {}).get("settings")}
        missing = [(v, s) for v, s in todo if (v, s) not in done]
        here = machine()

        def finished(variant: str, seed: int, job: dict) -> None:
            row = {"variant": variant, "seed": seed, "run": name_of_run, "settings": variants[variant]["settings"],
                   "result": job["result"], "cpu_s": job["cpu_s"], "threads": 1, "machine": here}
            files.append_line(rows_path, dumps(row), "the experiment's rows.jsonl")
            done[variant, seed] = row

        if jobs > 1 and len(missing) > 1:
            _run_in_workers(run, allow, variants, missing, min(jobs, len(missing)), finished, out)
        else:
            for v, s in missing:
                try:
                    job = run_job(run, variants[v]["settings"], s, allow)
                except (KeyboardInterrupt, JobFailed):
                    raise
                except BaseException as e:
                    raise JobFailed(f"job ({v!r}, seed {s}) raised {type(e).__name__}: {e}{_kept(done, out)}") from e
                finished(v, s, job)
        rows = [_public(done[j]) for j in todo]
        card = make_card(name_of_run, variants, rows, reference=reference, data=data, name=name, notes=notes,
                         jobs=jobs, shard=shard, data_sha=data_sha, versions=versions)
        write_card(card, out / ("card.json" if shard is None else f"card-{shard[0]}-of-{shard[1]}.json"))
    return card


def missing_jobs(run: Callable | str, variants: dict, out) -> list[tuple[str, int]]:
    """The (variant, seed) jobs of the whole grid that `out/rows.jsonl` does not hold yet (any shard's)."""
    variants = normalise_variants(variants, None)
    name = run_name(run)
    have = {(r["variant"], r["seed"]) for r in read_rows(out)
            if r.get("run") == name and r.get("settings") == variants.get(r["variant"], {}).get("settings")}
    return [j for j in jobs_of(variants) if j not in have]


def adopt_rows(card, out) -> int:
    """Append to `out/rows.jsonl` the rows of `card` (another shard's, or a merge of them) that it lacks, so a
    study that chooses its next runs from all earlier ones can go on in this shard; returns how many.
    The card must be of the same run as the rows already in `out`; its rows are checked as any card's."""
    from .cards import read_card
    card = read_card(card)
    out = make_out(out)
    with _locked(out):
        rows_path = out / ROWS
        stored, cut = _read_rows(rows_path)
        if cut:
            files.replace_text(rows_path, "".join(dumps(to_json(r, "a row")) + "\n" for r in stored))
        runs = {r.get("run") for r in stored} - {card["run"]}
        if runs:
            raise ValueError(f"{out} holds rows of {sorted(map(str, runs))[0]}, the card rows of {card['run']}: "
                             "adopt a card of the same study")
        have = {(r["variant"], r["seed"], json.dumps(r.get("settings"), sort_keys=True)) for r in stored}
        added = 0
        for r in card["rows"]:
            settings = card["variants"][r["variant"]]["settings"]
            if (r["variant"], r["seed"], json.dumps(settings, sort_keys=True)) in have:
                continue
            row = {"variant": r["variant"], "seed": r["seed"], "run": card["run"], "settings": settings,
                   "result": r["result"], "cpu_s": r.get("cpu_s"), "threads": r.get("threads", 1),
                   "machine": r.get("machine", "unknown")}
            files.append_line(rows_path, dumps(row), "the experiment's rows.jsonl")
            added += 1
    return added


def make_out(out) -> Path:
    """The folder `out`, made if missing; a path that is (or lies under) a file, or cannot be made, is one
    error saying so."""
    out = Path(out)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(f"out {out} is not a folder ({folder} is a file): pass a folder for "
                                         "rows.jsonl and the card")
            break
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PermissionError(f"cannot make the folder {out} ({e.strerror}): choose a folder you may write to") from None
    return out


def _kept(done: dict, out: Path) -> str:
    return (f"; the {len(done)} finished row(s) are kept in {out / ROWS}, and running the experiment again "
            "runs only the rest")


# ---- worker processes ------------------------------------------------------------------------------------

def _worker(conn, run, allow) -> None:
    """A worker: run the jobs it is sent, one at a time, until it is sent None."""
    while True:
        message = conn.recv()
        if message is None:
            return
        settings, seed = message
        try:
            conn.send(("ok", run_job(run, settings, seed, allow)))
        except BaseException as e:   # noqa: BLE001 - reported to the parent, which names the job
            conn.send(("error", f"{type(e).__name__}: {e}", traceback.format_exc()))


def _death(code) -> str:
    if code is not None and code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
        oom = " (the out-of-memory killer sends SIGKILL)" if -code == signal.SIGKILL else ""
        return f"was killed by {sig}{oom}"
    return f"exited with code {code} without finishing it"


def _run_in_workers(run, allow, variants, missing, n, finished, out) -> None:
    """Run `missing` on `n` spawned workers; a worker that raises or dies stops the grid with JobFailed naming
    the job, after the jobs still running elsewhere have finished (and been kept)."""
    ctx = multiprocessing.get_context("spawn")
    pending = list(missing)
    workers, busy = [], {}
    failures: list[tuple[int, str]] = []        # (place in the grid, what happened)
    try:
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, run, allow), daemon=True)
            proc.start()
            child.close()
            workers.append((proc, parent))

        def assign(w):
            if pending and not failures:
                v, s = pending.pop(0)
                w[1].send((variants[v]["settings"], s))
                busy[w] = (v, s)

        for w in workers:
            assign(w)
        while busy:
            ready = wait([w[1] for w in busy] + [w[0].sentinel for w in busy])
            for w in list(busy):
                proc, conn = w
                if conn not in ready and proc.sentinel not in ready:
                    continue
                v, s = busy.pop(w)
                try:
                    message = conn.recv() if conn.poll() else None
                except (EOFError, OSError):
                    message = None
                if message is None:
                    proc.join(1)
                    failures.append((missing.index((v, s)), f"job ({v!r}, seed {s}): its worker process "
                                                            f"{_death(proc.exitcode)}"))
                elif message[0] == "ok":
                    finished(v, s, message[1])
                    assign(w)
                else:
                    failures.append((missing.index((v, s)), f"job ({v!r}, seed {s}) raised {message[1]}"))
    finally:
        for proc, conn in workers:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        for proc, conn in workers:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
            conn.close()
    if failures:
        failures.sort()
        more = f" (and {len(failures) - 1} more job(s) failed)" if len(failures) > 1 else ""
        raise JobFailed(failures[0][1] + more + f"; the finished row(s) are kept in {out / ROWS}, and running the "
                        "experiment again runs only the rest")


def _public(row: dict) -> dict:
    """A row as the card shows it (a NaN that an older version wrote as a bare float becomes "nan")."""
    return {k: to_json(row[k], f"row ({row['variant']!r}, seed {row['seed']}) {k}")
            for k in ("variant", "seed", "result", "cpu_s", "threads", "machine") if k in row}
