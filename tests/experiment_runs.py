"""Run functions for the experiment tests: importable by worker processes (a test file's own functions are
not, under spawn), each misbehaving in one way a real study can."""

from __future__ import annotations

import os
import signal

import torch


def noisy(settings: dict, seed: int) -> dict:
    """A number drawn from torch's generator (so it depends on the seeding), scaled by settings["scale"]."""
    return {"x": float(torch.rand(())) * settings.get("scale", 1.0)}


def mutating(settings: dict, seed: int) -> dict:
    """Edits its nested settings in place: with a shallow copy, every later job would see the edit."""
    settings["opt"]["lr"] *= 10
    return {"lr": settings["opt"]["lr"], "x": float(torch.rand(()))}


def dies(settings: dict, seed: int) -> dict:
    """Kills its own process on settings["die_at"] (a crash, or SIGKILL as the out-of-memory killer sends)."""
    if seed == settings["die_at"]:
        if settings.get("how") == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)
    return {"x": float(seed)}


def diverges(settings: dict, seed: int) -> dict:
    """Seed 1 gives a loss that is not finite, as a run whose training blew up."""
    return {"loss": float("nan") if seed == 1 else float(seed), "acc": 0.5 + seed / 10}


def unstorable(settings: dict, seed: int):
    kind = settings["kind"]
    return {"tensor": {"x": torch.ones(2)}, "object": {"x": object()}, "keys": {1: 0.5},
            "scalar": 3.0, "empty_list": [], "no_step": [{"x": 1.0}],
            "none_key": {None: 0.5}, "huge_int": {"x": 10 ** 400}}[kind]


def raises(settings: dict, seed: int) -> dict:
    raise RuntimeError(f"boom at seed {seed}")
