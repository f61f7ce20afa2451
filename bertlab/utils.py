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
    """The device asked for, else CUDA when there is one, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
