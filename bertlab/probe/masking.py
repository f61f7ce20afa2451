"""What masked-LM corruption did to each token: not chosen, [MASK], a random token, or kept.

    inputs, labels = mask_tokens(ids, tokenizer)
    fate = masking_fate(inputs, labels, tokenizer)      # same shape: 0 not chosen, 1 [MASK], 2 random, 3 kept

One rule for the figure (viz.masking_figure) and the running counts (MaskingLab): a random draw that
happens to equal the original token is counted, and looks, as kept.
"""

from __future__ import annotations

import torch

from ..model.heads import IGNORE

__all__ = ["masking_fate", "FATES"]

FATES = ("not chosen", "chosen → [MASK]", "chosen → random token", "chosen → kept")


def masking_fate(inputs: torch.Tensor, labels: torch.Tensor, tokenizer) -> torch.Tensor:
    """Each position's fate (long, the shape of `inputs`): 0 not chosen, 1 [MASK], 2 random token, 3 kept."""
    if inputs.shape != labels.shape:
        raise ValueError(f"inputs {tuple(inputs.shape)} and labels {tuple(labels.shape)} must have the same shape")
    chosen = labels != IGNORE
    masked = chosen & (inputs == tokenizer.mask_id)
    kept = chosen & (inputs == labels)
    rand = chosen & ~masked & ~kept
    return masked.long() + 2 * rand.long() + 3 * kept.long()
