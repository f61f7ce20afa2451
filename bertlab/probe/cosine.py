"""Cosine distances between vectors: how far apart a word's vectors in different contexts point.

    cosine_distances(word_vectors(model, tokenizer, sentences, "bank"))      # (n, n)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["cosine_distances", "cosine_similarity"]


def cosine_similarity(x: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between every pair of rows: (n, H) → (n, n), computed in float64 (the figures of
    position vectors draw it: viz draws, probe computes)."""
    x = F.normalize(torch.as_tensor(x).double(), dim=-1)
    return (x @ x.T).float()                                                 # (n, n)


def cosine_distances(vectors) -> torch.Tensor:
    """1 − cosine similarity between every pair: (n, H) → (n, n), or per layer (n, L, H) → (L, n, n).

    0 means the same direction, 1 unrelated (orthogonal), 2 opposite. The diagonal is exactly 0.
    """
    if isinstance(vectors, (list, tuple)):
        if not vectors:
            raise ValueError("vectors is empty: pass a (n, H) tensor or a list of (H,) vectors")
        vectors = torch.stack([torch.as_tensor(v) for v in vectors])
    if not isinstance(vectors, torch.Tensor) or not vectors.is_floating_point():
        raise ValueError(f"vectors must be a floating-point tensor of shape (n, H) or (n, L, H), "
                         f"got {type(vectors).__name__}")
    if vectors.dim() not in (2, 3) or vectors.shape[0] == 0:
        raise ValueError(f"vectors must have shape (n, H) or (n, L, H) with n ≥ 1, got {tuple(vectors.shape)}"
                         + (": stack single vectors with torch.stack" if vectors.dim() == 1 else ""))
    x = vectors.detach().float().cpu()
    if x.dim() == 3:
        x = x.transpose(0, 1)                                          # (n, L, H) → (L, n, H)
    unit = F.normalize(x, dim=-1)                                      # a zero vector stays zero
    d = 1.0 - unit @ unit.transpose(-2, -1)                            # (…, n, n)
    d = ((d + d.transpose(-2, -1)) / 2).clamp(0.0, 2.0)                # symmetric to the last bit, in [0, 2]
    d.diagonal(dim1=-2, dim2=-1).zero_()
    return d
