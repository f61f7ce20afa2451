"""bertlab.optim, the recipe every training loop shares: decay groups, the schedule, and a batched AdamW that
gives exactly the numbers of PyTorch's per-parameter loop (so switching to it changed no stored result)."""

from __future__ import annotations

import pytest
import torch

import bertlab
from bertlab.optim import adamw, clip_and_step, lr_at, param_groups, set_lr
from bertlab.pretraining import schedule


def test_no_weight_decay_on_biases_and_layernorm(odd_config):
    model = bertlab.BertForSequenceClassification(odd_config, num_labels=3)
    decay, no_decay = param_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert all(names[id(p)].endswith("bias") or "LayerNorm" in names[id(p)] for p in no_decay["params"])
    assert not any(names[id(p)].endswith("bias") or "LayerNorm" in names[id(p)] for p in decay["params"])
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_schedule_warms_up_linearly_then_decays_to_zero():
    lrs = [lr_at(s, 10, 2, 1.0) for s in range(10)]
    assert lrs[:3] == [0.5, 1.0, 1.0] and lrs[-1] == pytest.approx(1 / 8)
    assert lr_at(10, 10, 2, 1.0) == 0.0
    assert schedule.lr_at is lr_at and schedule.param_groups is param_groups     # the old import path


def train(config, batch, make_optimizer):
    """Three seeded steps of a small classifier; its weights after them."""
    bertlab.set_seed(0)
    # on the CPU: CUDA's foreach kernels round differently from its per-parameter ones (an H200 showed it)
    model = bertlab.BertForSequenceClassification(config, num_labels=2).cpu().train()
    opt = make_optimizer(model)
    for step in range(3):
        bertlab.set_seed(step)
        set_lr(opt, lr_at(step, 3, 1, 1e-2))
        loss = model(**batch, labels=torch.tensor([0, 1, 1])).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clip_and_step(model, opt, 0.5)
    return model.state_dict()


def test_batched_adamw_and_clipping_match_the_per_parameter_loop_bit_for_bit(odd_config, batch):
    ours = train(odd_config, batch, lambda m: adamw(m, 1e-2))
    loop = train(odd_config, batch,
                 lambda m: torch.optim.AdamW(param_groups(m, 0.01), lr=1e-2, eps=1e-6, foreach=False))
    assert all(torch.equal(ours[k], loop[k]) for k in ours)


def test_clip_and_step_returns_the_norm_before_clipping():
    p = torch.nn.Parameter(torch.zeros(2))
    model = torch.nn.Module()
    model.p = p
    opt = torch.optim.SGD([p], lr=1.0)
    p.grad = torch.tensor([3.0, 4.0])
    norm = clip_and_step(model, opt, 1.0)
    assert float(norm) == pytest.approx(5.0)
    assert p.detach().tolist() == pytest.approx([-0.6, -0.8])


def test_fused_adamw_is_opt_in_and_agrees_with_the_default_to_rounding(odd_config, batch):
    made = []
    foreach = train(odd_config, batch, lambda m: made.append(adamw(m, 1e-2)) or made[-1])
    fused = train(odd_config, batch, lambda m: made.append(adamw(m, 1e-2, fused=True)) or made[-1])
    assert made[0].defaults["foreach"] and not made[0].defaults.get("fused")     # stored cards keep foreach
    assert made[1].defaults["fused"]
    assert all(torch.allclose(fused[k], foreach[k], atol=1e-5) for k in fused)
