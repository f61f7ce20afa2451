"""Small helpers used across bertlab."""

from __future__ import annotations

import random

import torch


def set_seed(seed: int) -> torch.Generator:
    """Seed Python's and torch's generators (every device), and return a fresh `torch.Generator` with it."""
    random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def default_device(device=None) -> torch.device:
    """The device asked for, else CUDA when there is one, else the CPU.

    A device this machine does not have is a ValueError naming the devices it has, here rather than as a
    torch error from the first tensor moved there ("Torch not compiled with CUDA enabled", "invalid device
    ordinal", or a parse error for a name such as "gpu").
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
        raise ValueError(f"device must be a name such as \"cpu\" or \"cuda:0\" (or a torch.device), got "
                         f"{device!r} ({type(device).__name__}); devices here: {', '.join(devices())}")
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(f"{device!r} is not a device name torch knows: devices here: {', '.join(devices())}") from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch is a CPU-only build" if torch.version.cuda is None
                   else "torch sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)")
            raise ValueError(f"device {str(device)!r} asked for, but {why}: devices here: {', '.join(devices())}")
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r} asked for, but this machine has {torch.cuda.device_count()} "
                             f"CUDA GPU(s): devices here: {', '.join(devices())}")
    elif d.type not in ("cpu", "meta"):     # meta: shapes without memory, to count a large model's parameters
        backend = getattr(torch.backends, d.type, None) or getattr(torch, d.type, None)
        if backend is None or not getattr(backend, "is_available", lambda: False)():
            raise ValueError(f"device {str(device)!r} is not available on this machine: devices here: "
                             f"{', '.join(devices())}")
    return d


def devices() -> list[str]:
    """The devices a model can run on here: "cpu", then each CUDA GPU, then Apple's "mps" if present."""
    found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0)]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found
