"""Does pre-training pay? The fine-tuning study of notebook 08 as variants of `bertlab.experiment`.

One row: fine-tune the bottom `layers` layers of a pre-trained encoder (`init`, a name for `bertlab.load`),
or the same shape from random weights (`init` "random:<name>": same config, same tokenizer, initialised as
BERT), on one shipped task (`bertlab.load_task`), and score validation and test. The shipped card
(`bertlab/assets/finetune/card.json`) holds the study's 45 rows; `bertlab experiment finetune` runs its
`protocol` (candidate selection, a learning rate per task and start chosen on validation, then three seeds).

    from bertlab.experiments import finetune_study as study
    card = bertlab.experiment(study.run, study.pretrained_vs_random(["follows"], lr=3e-4), seeds=[0, 1, 2],
                              out="runs/follows", data=study.DATA)
"""

from __future__ import annotations

import dataclasses
import functools
import math

from ..checkpoint import load
from ..finetuning import METRIC, SHIPPED, evaluate_task, finetune, load_task
from ..finetuning.tasks import ASSETS
from ..model.bert import Bert
from ..utils import set_seed
from .grid import adopt_rows, experiment, missing_jobs

TASKS = ("topic", "follows", "tagging", "qa", "choice")
CANDIDATES = ("minilm", "bertlab-mini")   # the pre-trained start is the one with the better validation mean
LRS = (3e-4, 1e-3)                        # the same grid for both starts
SEEDS = (0, 1, 2)
SELECT_LR = 3e-4                          # the candidates are compared at this rate, seed 0
DATA = [str(ASSETS)]
CARD = ASSETS.parent / "finetune" / "card.json"       # the shipped study (notebook 08)
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
    return evaluate_task(result.model, tokenizer, records, task="qa", tau=tau)["exact_match"]


def variant_name(task: str, init: str, lr: float) -> str:
    return f"{task} {init} lr={lr:g}"


def pretrained_vs_random(tasks=TASKS, lr: float = 3e-4, init: str = "bertlab-mini", **settings) -> dict:
    """Variants: each task from `init`'s weights and from random weights, at one learning rate."""
    return {variant_name(t, i, lr): {**SETTINGS, "task": t, "init": i, "lr": lr, **settings}
            for t in tasks for i in (init, "random:" + init)}


def _variant_grid(keys) -> dict:
    """{name: {"settings", "seeds"}} for (task, init, lr, seed) keys, in the order given."""
    variants: dict[str, dict] = {}
    for task, init, lr, seed in keys:
        v = variants.setdefault(variant_name(task, init, lr),
                                {"settings": {**SETTINGS, "task": task, "init": init, "lr": lr}, "seeds": []})
        if seed not in v["seeds"]:
            v["seeds"].append(seed)
    return variants


QUICK = {"tasks": ("follows",), "settings": {"layers": 1, "steps": 2}, "seeds": (0, 1)}   # seconds, for tests


def spec(quick: bool = False) -> dict:
    """The study as `bertlab experiment finetune` runs it and notebook 08 reads it: its run, data and name, and
    `protocol(out, jobs=1, shard=None, adopt=None)`, which chooses the later runs from the earlier ones.
    `quick`: one task, one layer, two steps, two seeds (seconds, for tests and smoke runs)."""
    extra = QUICK if quick else {}
    return {"run": "bertlab.experiments.finetune_study:run", "data": DATA,
            "name": "finetune study" + (" (quick)" if quick else ""),
            "protocol": functools.partial(protocol, **extra)}


STAGES = 3


def protocol(out, jobs: int = 1, tasks=TASKS, settings=None, seeds=SEEDS, shard=None, adopt=None) -> dict:
    """The whole study, resumable in `out`: (1) both candidates on every task at SELECT_LR, seed 0; the one with
    the better mean validation score is the pre-trained start; (2) per task and start, every rate of LRS at
    seed 0; (3) the rate with the best validation score, at every seed. Test scores choose nothing.
    Returns the card (also `out/card.json`), with the choices in its notes. `settings` change the study's
    SETTINGS (a smaller budget for a test); they are recorded in the protocol note.

    Sharded (`shard=(k, n)`), each stage runs its k-th slice; a stage whose choice needs rows another shard
    ran stops there, with a card (`card-k-of-n.json`) whose notes say {"stage": "1 of 3"}: merge the shards'
    cards and run every shard again with `adopt=` the merged card (`--from`), which adds its rows to `out`.
    Three rounds give the slices of the final stage, whose merge is the card a one-process run writes.
    """
    base = {**SETTINGS, **(settings or {})}
    if adopt is not None:
        adopt_rows(adopt, out)

    def _variants(keys) -> dict:
        return {name: {**v, "settings": {**v["settings"], **base}} for name, v in _variant_grid(keys).items()}

    def stage(keys, number, **final) -> tuple[dict, bool]:
        """Run this stage (its slice, sharded): (the card, whether every row so far is in `out`, so the next
        choice can be made)."""
        variants = _variants(keys)
        if shard is None:
            return experiment(run, variants, out=out, jobs=jobs, data=DATA, **final), True
        card = experiment(run, variants, out=out, jobs=jobs, data=DATA, shard=shard,
                          **(final or {"notes": {"stage": f"{number} of {STAGES}"}}))
        if final or missing_jobs(run, variants, out):
            return card, bool(final)
        return experiment(run, variants, out=out, jobs=jobs, data=DATA), True    # every row is here: nothing runs

    def val(card, task, init, lr):
        return next(r["result"]["val"] for r in card["rows"] if r["variant"] == variant_name(task, init, lr))

    keys = [(t, c, SELECT_LR, 0) for c in CANDIDATES for t in tasks]
    card, complete = stage(keys, 1)
    if not complete:
        return card
    selection = {c: sum(val(card, t, c, SELECT_LR) for t in tasks) / len(tasks) for c in CANDIDATES}
    pretrained = max(CANDIDATES, key=selection.get)
    inits = (pretrained, "random:" + pretrained)
    keys += [(t, i, lr, 0) for t in tasks for i in inits for lr in LRS]
    card, complete = stage(keys, 2)
    if not complete:
        return card
    best = {(t, i): max(LRS, key=lambda lr: val(card, t, i, lr)) for t in tasks for i in inits}
    keys += [(t, i, best[t, i], s) for t in tasks for i in inits for s in seeds]
    return stage(keys, 3, name="finetune study",
                 notes={"pretrained": pretrained, "selection_val_mean": {c: round(v, 4) for c, v in selection.items()},
                        "chosen_lr": {t: {("random" if i.startswith("random:") else "pretrained"): best[t, i]
                                          for i in inits} for t in tasks},
                        "protocol": {**base, "lrs": list(LRS), "seeds": list(seeds), "select_lr": SELECT_LR,
                                     "candidates": list(CANDIDATES), "tasks": list(tasks)}})[0]


def study_table(card: dict) -> dict:
    """{task: {"pretrained" | "random": {"init", "lr", "test" (per seed), "mean", "std"}}} at the chosen rates."""
    notes, table = card["notes"], {}
    for task, chosen in notes["chosen_lr"].items():
        for start, lr in chosen.items():
            init = notes["pretrained"] if start == "pretrained" else "random:" + notes["pretrained"]
            name = variant_name(task, init, lr)
            test = [r["result"]["test"] for r in card["rows"] if r["variant"] == name]
            s = card["summary"][name]["test"]
            table.setdefault(task, {})[start] = {"init": init, "lr": lr, "test": test, "mean": s["mean"],
                                                 "std": s["std"]}
    return table
