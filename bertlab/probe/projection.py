"""Two principal axes of a few vectors: the 2-D picture of a word's contexts (viz.projection_2d draws it).

    coords, var = pca_2d(vectors)      # (n, 2) coordinates, (2,) fraction of variance each axis explains
"""

from __future__ import annotations

import torch

__all__ = ["pca_2d"]


def pca_2d(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Project (n, H) onto its two principal axes: ((n, 2) coordinates, (2,) fraction of variance).

    Each axis's sign is fixed so that the point farthest along it lies on the positive side (sklearn's
    convention), so the same vectors always give the same picture.
    """
    xc = x.double() - x.double().mean(dim=0)                               # (n, H) centred
    U, S, Vh = torch.linalg.svd(xc, full_matrices=False)
    coords = xc @ Vh[:2].T                                                 # (n, ≤2)
    var = S ** 2 / (S ** 2).sum().clamp_min(1e-300)
    if coords.shape[1] < 2:                                                # H == 1: a line, drawn flat
        coords = torch.cat([coords, torch.zeros(len(x), 2 - coords.shape[1], dtype=coords.dtype)], dim=1)
        var = torch.cat([var, torch.zeros(2 - len(var), dtype=var.dtype)])
    far = coords.abs().argmax(dim=0)                                       # (2,)
    sign = torch.sign(coords[far, torch.arange(2)])
    coords = coords * torch.where(sign == 0, 1.0, sign)
    return coords.float(), var[:2].float()
