"""The paper's ablations (Tables 5, 6 and 8, Figure 5) at toy scale, as variants of `bertlab.experiment`.

Every variant is pre-trained from scratch on the same data (the English demo corpus, bertlab-tiny's 4,000-piece
vocabulary), in the same order, with the same masks and the same budget (steps × batch × length); per seed,
only the one thing under study changes:

- **pre-training task** (Table 5): MLM + NSP (BERT), MLM only (No NSP), and a left-to-right LM (LTR & No NSP:
  `BertConfig(is_decoder=True)`, causal attention, each position predicts the next token). The paper's fourth
  row, LTR with a randomly initialised BiLSTM on top, is scored as a probe on the LTR model's frozen states.
- **model size** (Table 6): two widths at two layers (hidden 32 and 64).
- **training steps** (Figure 5): MLM + NSP and LTR are scored at a quarter, half and all of their steps.
- **masking** (Appendix C.2, Table 8): 100 % [MASK] and 100 % random besides BERT's 80/10/10, and the rate.

`spec()` is the whole study (`bertlab experiment ablations`, sharded or not, makes the card notebook 09 reads).
A new variant is a dict of the settings that differ from `BUDGET`:

    from bertlab.experiments import ablations
    variants = {"15 %": ablations.variant(), "40 %": ablations.variant(mask_rate=0.40)}
    card = bertlab.experiment(ablations.run, variants, seeds=[0, 1, 2], out="runs/mask-rate", jobs=2)

The probes are in ablation_probes.py. A model that was never pre-trained (`random init`) is scored too: the
floor that says how much of each number pre-training bought.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from pathlib import Path

import torch

from ..checkpoint import load
from ..config import BertConfig
from ..model.heads import IGNORE, BertForPreTraining
from ..optim import adamw, clip_and_step, lr_at, set_lr, warmup_count
from ..pretraining import PretrainingData, collate, evaluate, mask_tokens
from . import ablation_probes as probes

CORPUS = Path(__file__).resolve().parent.parent / "assets" / "corpus"
TRAIN = sorted(str(p) for p in (CORPUS / "train").glob("en_*.txt"))       # English only: the probes are English
CARD = CORPUS.parent / "ablations" / "card.json"                            # the shipped study (notebook 09)
DATA = [str(CORPUS / "train"), str(CORPUS / "heldout"), str(CORPUS.parent / "probing"),
        str(CORPUS.parent / "bertlab-tiny" / "vocab.txt")]

# The full settings of a variant: what every run shares, and what a variant may change.
BUDGET = {
    "objective": "mlm_nsp",     # "mlm_nsp", "mlm" (No NSP), "ltr" (left-to-right LM, No NSP), "none" (random init)
    "layers": 2, "hidden": 64, "heads": 1,     # feed-forward 4 × hidden
    "mask_rate": 0.15,          # share of tokens chosen for the MLM loss
    "replace": [0.8, 0.1, 0.1], # of the chosen tokens: [MASK], random token, kept (mask_tokens' `replace`)
    "checkpoints": [1.0],       # fractions of the steps at which the model is scored
    "steps": 1200,              # optimizer steps of pre-training
    "batch_size": 32,           # NSP pairs per step
    "max_len": 32,              # tokens per pair: short sequences, so a CPU sees many of them
    "lr": 3e-3,                 # peak; 10 % linear warm-up then linear decay (the paper's schedule)
    "finetune_epochs": 3,       # the pair and topic probes
    "finetune_lr": 1e-3,
    "finetune_clip": None,      # the shipped card's runs did not clip the probes' fine-tuning
    "quick": False,             # probe subsets: seconds instead of minutes, for tests and smoke runs
}
OBJECTIVES = ("mlm_nsp", "mlm", "ltr", "none")
QUICK = {"steps": 24, "batch_size": 8, "finetune_epochs": 1, "quick": True}


def variant(**changes) -> dict:
    """BUDGET with `changes`; a misspelt setting is an error, not a silent default."""
    unknown = set(changes) - set(BUDGET)
    if unknown:
        raise ValueError(f"unknown ablation setting(s) {', '.join(sorted(unknown))}: choose from {', '.join(BUDGET)}")
    if changes.get("objective", BUDGET["objective"]) not in OBJECTIVES:
        raise ValueError(f"objective {changes['objective']!r} is not one of {', '.join(OBJECTIVES)}")
    return {**BUDGET, **changes}


VARIANTS = {
    "MLM + NSP": variant(checkpoints=[0.25, 0.5, 1.0]),
    "No NSP": variant(objective="mlm"),
    "LTR & No NSP": variant(objective="ltr", checkpoints=[0.25, 0.5, 1.0]),
    "random init": variant(objective="none"),
    "L2/H32": variant(hidden=32),
    "100/0/0": variant(replace=[1.0, 0.0, 0.0]),
    "0/0/100": variant(replace=[0.0, 1.0, 0.0]),
}
GROUPS = {"tasks": ["MLM + NSP", "No NSP", "LTR & No NSP", "random init"], "sizes": ["MLM + NSP", "L2/H32"],
          "masks": ["MLM + NSP", "100/0/0", "0/0/100"], "steps": ["MLM + NSP", "LTR & No NSP"]}

# The paper's numbers (Devlin et al. 2018, dev sets), for the notebook to put beside ours.
PAPER = {
    "table5": {"columns": ["MNLI-m", "QNLI", "MRPC", "SST-2", "SQuAD F1"],
               "rows": {"BERT-base": [84.4, 88.4, 86.7, 92.7, 88.5], "No NSP": [83.9, 84.9, 86.5, 92.6, 87.9],
                        "LTR & No NSP": [82.1, 84.3, 77.5, 92.1, 77.8],
                        "+ BiLSTM": [82.1, 84.1, 75.7, 91.6, 84.9]}},
    "table6": {"columns": ["L", "H", "A", "LM ppl", "MNLI-m", "MRPC", "SST-2"],
               "rows": [[3, 768, 12, 5.84, 77.9, 79.8, 88.4], [6, 768, 3, 5.24, 80.6, 82.2, 90.7],
                        [6, 768, 12, 4.68, 81.9, 84.8, 91.3], [12, 768, 12, 3.99, 84.4, 86.7, 92.9],
                        [12, 1024, 16, 3.54, 85.7, 86.9, 93.3], [24, 1024, 16, 3.23, 86.6, 87.8, 93.7]]},
    "table8": {"columns": ["MASK", "SAME", "RND", "MNLI fine-tune", "NER fine-tune", "NER feature-based"],
               "rows": [[80, 10, 10, 84.2, 95.4, 94.9], [100, 0, 0, 84.3, 94.9, 94.0], [80, 0, 20, 84.1, 95.2, 94.6],
                        [80, 20, 0, 84.4, 95.2, 94.7], [0, 20, 80, 83.7, 94.8, 94.6], [0, 0, 100, 83.6, 94.9, 94.6]]},
}


def spec(quick: bool = False) -> dict:
    """The study as `bertlab experiment ablations` runs it and notebook 09 reads it: every variant, three seeds,
    the data hashed into the card, and the notes (each probe's baseline, the paper's numbers, the groups the
    notebook plots). `quick`: the same at a tiny budget (seconds a row), for tests and smoke runs."""
    variants = {k: {**v, **QUICK} for k, v in VARIANTS.items()} if quick else VARIANTS
    return {"run": "bertlab.experiments.ablations:run", "variants": variants, "seeds": [0, 1, 2], "data": DATA,
            "name": "ablations-quick" if quick else "ablations",
            "notes": {"baselines": baselines(quick), "paper": PAPER, "groups": GROUPS}}


def make_config(tokenizer, s: dict) -> BertConfig:
    extra = {"is_decoder": True} if s["objective"] == "ltr" else {}
    return BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                      num_attention_heads=s["heads"], intermediate_size=4 * s["hidden"],
                      max_position_embeddings=s["max_len"], pad_token_id=tokenizer.pad_id, **extra)


def next_token_labels(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Left-to-right LM labels: position t predicts token t + 1; the last real token (and padding) predicts nothing."""
    labels = torch.full_like(input_ids, IGNORE)                                  # (B, T)
    labels[:, :-1] = torch.where(attention_mask[:, 1:].bool(), input_ids[:, 1:], IGNORE)
    return labels


def pretrain_variant(tokenizer, s: dict, seed: int) -> dict[float, dict]:
    """Train one variant; return {fraction of steps: state_dict} at its checkpoints.

    Everything random is seeded from `seed` alone (initial weights, data order, masks, dropout), so two
    variants with the same seed differ only in what the variant changes. The step is `bertlab.pretrain`'s
    (the same optimizer, schedule and clipping from `bertlab.optim`); only the objective is chosen here.
    """
    torch.manual_seed(seed)
    random.seed(seed)
    model = BertForPreTraining(make_config(tokenizer, s), device="cpu")
    if s["objective"] == "none":
        return {1.0: copy.deepcopy(model.state_dict())}
    model.train()
    stream = PretrainingData(TRAIN, tokenizer, max_len=s["max_len"], seed=seed).batches(s["batch_size"])
    masks = torch.Generator().manual_seed(seed)
    opt = adamw(model, s["lr"], 0.01, eps=1e-6)
    at = {max(1, round(f * s["steps"])): f for f in s["checkpoints"]}
    states = {}
    for step in range(s["steps"]):
        batch = collate(next(stream), tokenizer.pad_id)
        ids, types, attn = batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
        # the masks are drawn for every objective, so the data and mask streams stay in step across variants
        inputs, labels = mask_tokens(ids, tokenizer, s["mask_rate"], generator=masks, replace=tuple(s["replace"]))
        if s["objective"] == "ltr":
            inputs, labels = ids, next_token_labels(ids, attn)      # no corruption: the causal mask hides the future
        set_lr(opt, lr_at(step, s["steps"], warmup_count(s["steps"], probes.WARMUP), s["lr"]))
        nsp = batch["next_sentence_label"] if s["objective"] == "mlm_nsp" else None
        out = model(inputs, types, attn, labels=labels, next_sentence_label=nsp)
        loss = out.mlm_loss + out.nsp_loss if nsp is not None else out.mlm_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clip_and_step(model, opt, 1.0)
        if step + 1 in at:
            states[at[step + 1]] = copy.deepcopy(model.state_dict())
    return states


def run(settings: dict, seed: int) -> list[dict]:
    """One variant and seed: pre-train, then score every checkpoint on every probe; one dict per checkpoint."""
    s = variant(**settings)
    _, tokenizer = load("bertlab-tiny", device="cpu")
    states = pretrain_variant(tokenizer, s, seed)
    tasks = probes.token_tasks(s["quick"]) + [probes.next_replaced_task(tokenizer, s["max_len"], s["quick"])]
    pair = probes.pair_task(tokenizer, s["max_len"], s["quick"])
    topic = probes.topic_task(tokenizer, s["max_len"], s["quick"])
    ltr = s["objective"] == "ltr"
    points = []
    for fraction, state in sorted(states.items()):
        model = BertForPreTraining(make_config(tokenizer, s), device="cpu")
        model.load_state_dict(state)
        model.eval()
        point = {"step": round(fraction * s["steps"]) if s["objective"] != "none" else 0, "fraction": fraction}
        if s["objective"] in ("mlm_nsp", "mlm", "none"):
            r = evaluate(model, tokenizer, probes.HELDOUT, max_len=s["max_len"], seed=0, passes=1 if s["quick"] else 2)
            point.update(mlm_top1=r.mlm_top1, unigram_top1=r.unigram_top1)
            if s["objective"] != "mlm":
                point.update(nsp=r.nsp_accuracy, nsp_majority=r.nsp_majority)
        point.update(probes.score_token_tasks(model, tokenizer, tasks, s["max_len"], ltr, seed))
        for name, task in (("pair", pair), ("topic", topic)):
            point[name] = probes.fine_tune(model, tokenizer, task, ltr, seed, s["finetune_epochs"], s["finetune_lr"],
                                           s["finetune_clip"])
        points.append(point)
    return points


def baselines(quick: bool = False, max_len: int = BUDGET["max_len"]) -> dict:
    """What each probe scores without a model: word identity (token tasks), the majority label (sentence tasks)."""
    _, tokenizer = load("bertlab-tiny", device="cpu")
    out = {t.name: probes.identity_baseline(t) for t in probes.token_tasks(quick)}
    test = [r[2] for r in probes.next_replaced_task(tokenizer, max_len, quick).rows if r[3]]
    out["next_replaced"] = max(sum(test), len(test) - sum(test)) / len(test)     # the majority label
    for name, (train, test) in (("pair", probes.pair_task(tokenizer, max_len, quick)),
                                ("topic", probes.topic_task(tokenizer, max_len, quick))):
        top = Counter(r[2] for r in train).most_common(1)[0][0]
        out[name] = sum(r[2] == top for r in test) / len(test)
    return out
