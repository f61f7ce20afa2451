"""The optimizer recipe of BERT's appendix A.2, shared by every training loop in bertlab.

    opt = adamw(model, lr=1e-4)                              # no weight decay on biases and LayerNorm
    for step in range(steps):
        lr = set_lr(opt, lr_at(step, steps, warmup=warmup_count(steps, 0.1), peak=1e-4))   # 10 % of the steps
        loss = model(**batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = clip_and_step(model, opt, clip=1.0)

Pre-training (`bertlab.pretrain`), fine-tuning (`bertlab.finetune`) and the ablation studies all call these,
so a change to the recipe (a new warm-up, a different clipping) changes every loop at once and cannot drift
between them. The functions stay tiny on purpose: a notebook can use them one at a time.
"""

from __future__ import annotations

import math

import torch


def warmup_count(steps: int, share: float) -> int:
    """The warm-up as a number of steps: `share` of `steps` (0.1: the paper's 10 %), at least one unless 0.

    Every loop spells warm-up as this share (PretrainArgs.warmup, FineTuneSettings.warmup); with 0.1 it is
    exactly `max(1, steps // 10)`, the count the studies and the stored cards were made with."""
    return max(1, int(steps * share + 1e-9)) if share else 0


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


def adamw(model: torch.nn.Module, lr: float, weight_decay: float = 0.01, eps: float = 1e-6,
          betas: tuple[float, float] = (0.9, 0.999), fused: bool = False) -> torch.optim.AdamW:
    """AdamW over `param_groups(model, weight_decay)`: BERT's optimizer (Google's code uses eps 1e-6).

    By default `foreach=True`: all parameters updated with a few batched kernels instead of a Python loop over
    ~100 tensors, which is what PyTorch picks on CUDA but not on the CPU; on the CPU it is bit-identical to the
    loop (tests/test_optim.py checks) and several times faster. `fused=True` (opt-in, `--fused-adamw`) is one
    kernel per step, faster still (a peer check measured ~16 % per step on the 2-core CPU), but it rounds
    differently, so a run with it does not reproduce the stored cards' numbers bit for bit: they keep foreach.
    """
    if fused:
        return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, fused=True)
    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=betas, eps=eps, foreach=True)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> float:
    """Set every parameter group's learning rate (the schedule's value for this step); returns it."""
    for g in optimizer.param_groups:
        g["lr"] = lr
    return lr


def clip(model: torch.nn.Module, max_norm: float | None) -> torch.Tensor | None:
    """Clip the gradients' global norm to `max_norm` (None: no clipping); returns the norm before clipping.

    As a tensor, not a float: reading it forces a host sync (on a GPU, a wait for every queued kernel), which a
    loop should pay only when it needs the number.
    """
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) if max_norm is not None else None


def clip_and_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, max_norm: float | None) -> torch.Tensor | None:
    """Clip the gradients' global norm to `max_norm` (None: no clipping), then take the optimizer step.
    Returns the norm before clipping, as a tensor (see `clip`)."""
    norm = clip(model, max_norm)
    optimizer.step()
    return norm


class NonFiniteLoss(FloatingPointError):
    """The loss (or the gradient) of a step is NaN or infinite: the run stops before that step's update."""


def stop_if_not_finite(step: int, numbers: dict[str, float], then: str) -> None:
    """Raise NonFiniteLoss when any of a step's `numbers` (its losses, its gradient norm) is NaN or infinite,
    before the optimizer applies the step: one such update makes every weight NaN, and a run that went on would
    train, score and save an all-NaN model. Both loops (pre-training and fine-tuning) stop here; `then` says
    what is kept and what to change."""
    if all(math.isfinite(v) for v in numbers.values()):
        return
    said = ", ".join(f"{name} {value:.4g}" for name, value in numbers.items())
    raise NonFiniteLoss(f"the loss at step {step} is no longer a finite number ({said}), so the run stopped before "
                        f"applying that step's update; {then}")
