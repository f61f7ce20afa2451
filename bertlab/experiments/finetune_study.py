"""Does pre-training pay? The fine-tuning study of notebook 08 as variants of `bertlab.experiment`.

One row: fine-tune the bottom `layers` layers of a pre-trained encoder (`init`, a name for `bertlab.load`),
or the same shape from random weights (`init` "random:<name>": same config, same tokenizer, initialised as
BERT), on one shipped task (`bertlab.load_task`), and score validation and test. The shipped card
(`bertlab/assets/finetune/card.json`) holds the study's 45 rows; `scripts/finetune_study.py` runs its protocol
(candidate selection, a learning rate per task and start chosen on validation, then three seeds).

    from bertlab.experiments import finetune_study as study
    card = bertlab.experiment(study.run, study.pretrained_vs_random(["follows"], lr=3e-4), seeds=[0, 1, 2],
                              out="runs/follows", data=study.DATA)
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ..checkpoint import load
from ..finetuning import METRIC, SHIPPED, finetune, load_task
from ..finetuning.tasks import ASSETS
from ..model.bert import Bert
from ..utils import set_seed

TASKS = ("topic", "follows", "tagging", "qa", "choice")
DATA = [str(ASSETS)]
# the study's protocol: 40 steps of 16 records (choice: 4 questions × 4 endings), all 6 layers, and AdamW's
# epsilon at PyTorch's default (1e-8), which the study was run with before `finetune` defaulted to BERT's 1e-6
SETTINGS = {"layers": 6, "steps": 40, "batch_size": 16, "eps": 1e-8}
_LOADED: dict[str, tuple] = {}


def encoder(init: str, seed: int, layers: int):
    """`(Bert, tokenizer)`: the bottom `layers` layers of `init`, or with "random:<name>" the same shape freshly
    initialised (seeded by `seed`)."""
    name = init.removeprefix("random:")
    if name not in _LOADED:                                   # each process reads a checkpoint once
        model, tokenizer = load(name, device="cpu", model_class=Bert)
        _LOADED[name] = model.config, model.state_dict(), tokenizer
    config, weights, tokenizer = _LOADED[name]
    set_seed(seed)
    bert = Bert(dataclasses.replace(config, num_hidden_layers=layers), device="cpu")   # normal(0, 0.02)
    if not init.startswith("random:"):
        wanted = bert.state_dict()
        bert.load_state_dict({k: v for k, v in weights.items() if k in wanted}, strict=True)
    return bert, tokenizer


def run(settings: dict, seed: int) -> dict:
    """One study row: {"val", "test"} in the task's metric (QA adds τ chosen on validation, and test at τ = 0)."""
    s = {**SETTINGS, **settings}
    task, shape = s["task"], SHIPPED[s["task"]]
    data = load_task(task)
    bert, tokenizer = encoder(s["init"], seed, s["layers"])
    batch_size = s["batch_size"] // 4 if shape == "choice" else s["batch_size"]    # choice: records of 4 rows
    result = finetune(bert, tokenizer, data["train"], data["val"], task=shape, steps=s["steps"], lr=s["lr"],
                      batch_size=batch_size, seed=seed, eps=s["eps"])
    metric = METRIC[shape]
    row = {"val": round(result.history[-1][f"val_{metric}"], 4),
           "test": round(result.evaluate(tokenizer, data["test"])[metric], 4)}
    if shape == "qa":
        row["tau"] = result.tau if math.isfinite(result.tau) else str(result.tau)
        row["test_tau0"] = round(finetune_eval_at(result, tokenizer, data["test"], 0.0), 4)
    return row


def finetune_eval_at(result, tokenizer, records, tau: float) -> float:
    from ..finetuning import evaluate_task
    return evaluate_task(result.model, tokenizer, records, task="qa", tau=tau)["exact_match"]


def variant_name(task: str, init: str, lr: float) -> str:
    return f"{task} {init} lr={lr:g}"


def pretrained_vs_random(tasks=TASKS, lr: float = 3e-4, init: str = "bertlab-mini", **settings) -> dict:
    """Variants: each task from `init`'s weights and from random weights, at one learning rate."""
    return {variant_name(t, i, lr): {"task": t, "init": i, "lr": lr, **settings}
            for t in tasks for i in (init, "random:" + init)}


def data_files() -> list[str]:
    return DATA + [str(Path(__file__).resolve().parent.parent / "assets" / "bertlab-mini")]
