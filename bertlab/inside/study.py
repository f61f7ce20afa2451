"""The study behind bertlab/assets/inside/: an experiment run (`run(settings, seed) -> dict`) for the card.

    bertlab.experiment(study.run, study.VARIANTS, seeds=[0], out="build/inside", jobs=2)
    bertlab.replay("bertlab/assets/inside/card.json")          # re-runs rows, says whether the numbers agree

Four kinds of row (`settings["part"]`):
- "sae": an autoencoder on one layer of bertlab-mini ("init": "trained") or of a model of the same shape with
  Google's random initialisation ("init": "random", the control arXiv 2501.17727 asks for), with its report on
  held-out prose, the token purity of its features, and a POS probe on raw activations against the features;
- "finetune": bertlab-mini against a copy fine-tuned on one shipped task, diffed on held-out prose;
- "pretrain": bertlab-mini against itself after more masked-LM pre-training on one file of the corpus.
With `settings["save"]` the artefact (the autoencoder in float16, or the diff as JSON) is written there.
scripts/inside_artefacts.py runs the grid and copies the artefacts into the package.
"""

from __future__ import annotations

import copy
import tempfile
import time
from pathlib import Path

import torch

from ..checkpoint import ASSETS
from .diff import diff
from .features import Features, token_purity
from .probing import compare_probes
from .residual import demo_sentences
from .sae import sae_report, train_sae
from .shipped import heldout_sentences

SAE = dict(part="sae", layer=3, width=3072, k=32, steps=200, batch_size=512, max_tokens=30_000, report_texts=120)
VARIANTS = {
    "sae: bertlab-mini": {**SAE, "init": "trained", "save": "build/inside/sae-mini-l3.safetensors"},
    "sae: random init": {**SAE, "init": "random", "save": "build/inside/sae-random-l3.safetensors"},
    "diff: fine-tuned on topic": dict(part="finetune", task="topic", steps=60, lr=2e-4, batch_size=16,
                                      texts=120, save="build/inside/diff-topic.json"),
    "diff: fine-tuned on ?": dict(part="finetune", task="tagging", steps=60, lr=2e-4, batch_size=16,
                                  texts=120, save="build/inside/diff-mystery.json"),
    "diff: more pre-training": dict(part="pretrain", corpus="train/en_outdoors.txt", steps=60, lr=2e-4,
                                    batch_size=16, max_len=64, texts=120, save="build/inside/diff-pretrain.json"),
}
SHAPES = {"topic": "classify", "follows": "classify", "tagging": "tag", "qa": "qa", "choice": "choice"}


def _mini():
    from ..checkpoint import load
    return load("bertlab-mini", device="cpu")


def run(settings: dict, seed: int) -> dict:
    part = settings["part"]
    if part == "sae":
        return _sae(settings, seed)
    if part == "finetune":
        return _finetune(settings, seed)
    if part == "pretrain":
        return _pretrain(settings, seed)
    raise ValueError(f"unknown part {part!r}: 'sae', 'finetune' or 'pretrain'")


def _save(settings: dict) -> Path | None:
    if not settings.get("save"):
        return None
    path = Path(settings["save"])
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _sae(s: dict, seed: int) -> dict:
    model, tok = _mini()
    if s["init"] == "random":
        from ..model.heads import BertForPreTraining
        torch.manual_seed(seed)
        model = BertForPreTraining(model.config).eval()
    t0 = time.perf_counter()
    steps_done = []
    sae = train_sae(model, tok, demo_sentences(), layer=s["layer"], width=s["width"], k=s["k"], steps=s["steps"],
                    seed=seed, batch_size=s["batch_size"], max_tokens=s["max_tokens"], callback=lambda i, loss: steps_done.append((time.perf_counter(), loss)))
    t_first = steps_done[0][0]
    train_s = steps_done[-1][0] - t_first
    collect_s = t_first - t0
    texts = heldout_sentences(s["report_texts"])
    report = sae_report(model, tok, sae, texts)
    purity = token_purity(Features(model, tok, sae, texts))
    probes = compare_probes(model, tok, sae, "pos")
    if (path := _save(s)) is not None:
        sae.save(path, dtype=torch.float16)
    return {**{k: v for k, v in report.as_dict().items() if k not in ("layer", "width", "k")},
            "token_purity": purity, "probe_raw": probes.raw, "probe_features": probes.features,
            "probe_majority": probes.majority, "final_batch_fvu": steps_done[-1][1],
            "curve": [round(l, 4) for _, l in steps_done[::50]],
            "collect_s": round(collect_s, 1), "train_s": round(train_s, 1),
            "steps_per_s": round((len(steps_done) - 1) / train_s, 3) if train_s else None}


def _diff_result(base, other, tok, s: dict, name: str) -> dict:
    d = diff(base, other, tok, heldout_sentences(s["texts"]), names=("bertlab-mini", name))
    if (path := _save(s)) is not None:
        d.save(path)
    top = d.top_heads(3)
    return {"residual_last": float(d.residual[-1]), "residual": [round(float(x), 4) for x in d.residual],
            "residual_cls_last": float(d.residual_cls[-1]),
            "residual_cls": [round(float(x), 4) for x in d.residual_cls],
            "attention_max": top[0][2], "attention_mean": float(d.attention.mean()),
            "top_heads": [f"L{l}H{h}" for l, h, _ in top], "lens": d.lens_tokens(15)}


def _finetune(s: dict, seed: int) -> dict:
    from ..finetuning import evaluate_task, finetune, load_task
    base, tok = _mini()
    data = load_task(s["task"])
    shape = SHAPES[s["task"]]
    result = finetune(copy.deepcopy(base), tok, data["train"], data["val"], task=shape, steps=s["steps"],
                      lr=s["lr"], batch_size=s["batch_size"], seed=seed, device="cpu")
    scores = evaluate_task(result.model, tok, data["test"], task=shape)
    name = "fine-tuned: ?" if "mystery" in str(s.get("save", "")) else f"fine-tuned: {s['task']}"
    out = _diff_result(base, result.model, tok, s, name)
    return {**out, **{f"test_{k}": v for k, v in scores.items() if isinstance(v, (int, float))}}


def _pretrain(s: dict, seed: int) -> dict:
    from ..pretraining.trainer import pretrain
    base, tok = _mini()
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = pretrain([str(ASSETS / "corpus" / s["corpus"])], Path(tmp) / "run",
                            init=str(ASSETS / "bertlab-mini"), steps=s["steps"], batch_size=s["batch_size"],
                            lr=s["lr"], max_len=s["max_len"], seed=seed, save_every=s["steps"], progress=False,
                            nsp_balance=True, device="cpu")
    return _diff_result(base, model.cpu().eval(), tok, s, f"+{s['steps']} steps on {Path(s['corpus']).stem}")
