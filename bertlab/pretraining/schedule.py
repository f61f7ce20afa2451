"""The optimizer recipe of BERT's appendix A.2, as two small functions a notebook can use on its own.

    opt = torch.optim.AdamW(param_groups(model, 0.01), lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, warmup=steps // 10, peak=1e-4)

They live apart from the trainer so that a figure of the schedule (bertlab.viz) or a fine-tuning loop
(notebook 08) can use them without importing the whole pre-training run.
"""

from __future__ import annotations

import torch


def lr_at(step: int, steps: int, warmup: int, peak: float) -> float:
    """Linear warm-up over `warmup` steps to `peak`, then linear decay to zero at `steps` (the paper's schedule)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * max(0.0, (steps - step) / max(1, steps - warmup))


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on weight matrices and embeddings, none on biases and LayerNorm (as Google's BERT)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
