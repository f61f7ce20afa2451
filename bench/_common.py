"""Shared helpers for bertlab's benchmarks: device choice, timing, matmul peak, machine header, table, JSON.

Every benchmark follows the same method:
- the candidate and the reference run in the same process, on the same inputs, *alternating* (A, B, A, B, ...)
  after a warm-up, so that a slow stretch of a noisy machine hits both sides alike;
- each side's time is the *median* of its repeats, and the comparison is a ratio of medians;
- on CUDA every timed region is bracketed by `torch.cuda.synchronize()`, so kernels launched asynchronously
  are counted where they run.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import torch

# ---- device and logging ------------------------------------------------------------------------

def pick_device(name: str | None) -> torch.device:
    """The device asked for, else CUDA when there is one, else the CPU."""
    if name:
        device = torch.device(name)
        if device.type == "cuda" and not torch.cuda.is_available():
            sys.exit(f"--device {name}: CUDA is not available in this torch ({torch.__version__})")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def log(*args) -> None:
    """Progress goes to stderr, so stdout holds only the report."""
    print(*args, file=sys.stderr, flush=True)


# ---- timing ------------------------------------------------------------------------------------

class CpuMeter:
    """How much CPU *other* processes used over an interval, in cores, from /proc/stat and /proc/self/stat.

    Busy time of the whole machine (steal included: a hypervisor's other guests compete too) minus this
    process's own CPU time. Linux only; elsewhere `available` is False and every reading is 0. Both counters
    tick at CLK_TCK (100 Hz), so a reading over a short interval is uncertain by a tick or two.
    """

    def __init__(self):
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.available = Path("/proc/stat").exists() and Path("/proc/self/stat").exists()

    def snapshot(self) -> tuple[float, int, int]:
        if not self.available:
            return time.perf_counter(), 0, 0
        f = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[:8])
        busy = user + nice + system + irq + softirq + steal
        own = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        self_ticks = int(own[11]) + int(own[12])  # utime, stime (fields 14 and 15)
        return time.perf_counter(), busy, self_ticks

    def others(self, a, b) -> tuple[float, int]:
        """(cores used by others between snapshots a and b, their ticks)."""
        ticks = max(0, (b[1] - a[1]) - (b[2] - a[2]))
        return ticks / self.hz / max(b[0] - a[0], 1e-9), ticks


@dataclass
class Timing:
    times: list[list[float]]        # per function: seconds of each kept run
    rounds: int                     # timed rounds run
    discarded: int                  # rounds thrown away because other processes were using the CPU
    others: float                   # mean cores used by other processes over the kept rounds


def time_once(fn: Callable[[], object], device: torch.device) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def time_alternating(fns: Sequence[Callable[[], object]], device: torch.device, repeats: int,
                     warmup: int = 2, min_time: float = 0.0, max_repeats: int = 100,
                     max_others: float = 0.25, retry_share: float = 0.5) -> Timing:
    """Run `fns` in turn (f0, f1, ..., f0, f1, ...): `warmup` rounds untimed, then timed rounds.

    `repeats` rounds are kept, or more when that would take less than `min_time` seconds per function
    (estimated from the last warm-up round), up to `max_repeats`: fast functions get more samples.
    A round during which other processes used more than `max_others` cores (beyond a tick of slack) is
    thrown away as a whole and run again, for at most `retry_share` × the expected time of the rounds
    wanted (and never more than twice as many rounds); if the machine does not quieten within that, the
    contended rounds are kept, and `Timing.others` says how busy it was. The garbage collector is off
    while timing, so a collection triggered by one side is not billed to the other.
    """
    last = [0.0] * len(fns)
    for _ in range(warmup):
        for i, fn in enumerate(fns):
            last[i] = time_once(fn, device)
    if min_time > 0 and warmup:
        slowest = max(max(last), 1e-6)
        repeats = max(repeats, min(max_repeats, math.ceil(min_time / slowest)))
    budget = retry_share * repeats * sum(last)  # seconds that may go on re-running contended rounds
    meter = CpuMeter()
    kept: list[list[float]] = [[] for _ in fns]
    contended: list[list[float]] = [[] for _ in fns]
    kept_others, all_others = [], []
    rounds = 0
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        while len(kept[0]) < repeats and rounds < 2 * repeats:
            if rounds >= repeats and sum(map(sum, contended)) > budget:
                break
            a = meter.snapshot()
            ts = [time_once(fn, device) for fn in fns]
            b = meter.snapshot()
            rounds += 1
            cores, ticks = meter.others(a, b)
            all_others.append(cores)
            # one tick of slack for the counters' resolution: a 20 ms round is contended at 2 ticks
            quiet = ticks <= 1 + max_others * (b[0] - a[0]) * meter.hz
            for i, t in enumerate(ts):
                (kept if quiet else contended)[i].append(t)
            if quiet:
                kept_others.append(cores)
    finally:
        if was_enabled:
            gc.enable()
    discarded = len(contended[0])
    if len(kept[0]) < repeats:  # never quiet enough: keep everything rather than too few runs
        kept = [k + c for k, c in zip(kept, contended)]
        kept_others, discarded = all_others, 0
    return Timing(kept, rounds, discarded, statistics.fmean(kept_others) if kept_others else 0.0)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def spread(xs: Sequence[float]) -> float:
    """(max − min) / median: how noisy a set of repeats was."""
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / m if m else float("nan")


# ---- matmul peak -------------------------------------------------------------------------------

def matmul_peak(device: torch.device, dtype: torch.dtype = torch.float32, n: int = 2048,
                repeats: int = 7, warmup: int = 2) -> float:
    """Median FLOP/s of an n×n @ n×n matmul (2·n³ FLOPs) in `dtype` on `device`: the roof a model's
    FLOPs/s is measured against. bf16 runs as a plain bf16 matmul (what autocast dispatches to)."""
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(n, n, generator=g).to(device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    with torch.inference_mode():
        (times,) = time_alternating([lambda: torch.mm(a, b, out=out)], device, repeats, warmup).times
    return 2 * n**3 / median(times)


# ---- the machine -------------------------------------------------------------------------------

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> float | None:
    """The 1-minute load average (None where the OS has none): a run made beside other work is suspect."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def machine_info(device: torch.device) -> dict:
    info = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        info["transformers"] = None
    if device.type == "cpu":
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return info


def machine_header(info: dict) -> str:
    dev = info["device_name"]
    if info["device"].startswith("cuda"):
        dev = f"{dev} ({info['device']}), host CPU {info['cpu']}"
    else:
        dev = f"CPU {dev}, {info['cpu_count']} cores, {info.get('cpu_capability', '?')}"
    return (f"{dev}; torch threads {info['threads']}; torch {info['torch']}, "
            f"transformers {info['transformers']}, python {info['python']}; {info['date']}")


# ---- output ------------------------------------------------------------------------------------

def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], markdown: bool = False) -> str:
    """Right-aligned columns (the first left-aligned); `markdown=True` gives a GitHub table."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r):
        parts = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts)

    sep = ("|" + "|".join(("-" * (w + 1) + ":") if i else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
           if markdown else "  ".join("-" * w for w in widths))
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def write_json(path: str | os.PathLike, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)
    return path
