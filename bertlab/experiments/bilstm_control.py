"""The control notebook 09 needs for the paper's "+ BiLSTM" row: the same BiLSTM on a masked LM.

The shipped ablation card (`ablations.CARD`) puts a randomly initialised BiLSTM on the left-to-right model
only, and compares it with one-position linear probes of the bidirectional models. That mixes two changes:
the pre-training objective, and a reader of *neighbouring positions* against a reader of one. The control
runs the same BiLSTM probe (`ablation_probes.bilstm_probe`, through `score_token_tasks`) on the MLM + NSP
variant, pre-trained exactly as the card's (same settings, seeds, data and masks), so the two "+ BiLSTM"
numbers differ only in the objective underneath.

    .venv/bin/python -m bertlab.experiments.bilstm_control            # writes CARD (about a CPU minute a seed)
    bertlab replay bertlab/assets/ablations/bilstm_control.json --row 0

Its rows were computed on another CPU than the ablation card's (the card names both machines): training is
the same recipe, but float rounding differs between CPUs and the difference grows over 1,200 steps, so the
MLM top-1 lands within 0.01 of the card's and the one-position linear probes differ by a few hundredths,
inside the seed spread. The control therefore compares its own linear and BiLSTM readings of one model,
and its BiLSTM with the card's LTR + BiLSTM.
"""

from __future__ import annotations

from pathlib import Path

from ..checkpoint import load
from ..model.heads import BertForPreTraining
from ..pretraining import evaluate
from . import ablation_probes as probes
from . import ablations

CARD = Path(ablations.CARD).parent / "bilstm_control.json"
VARIANTS = {"MLM + NSP, + BiLSTM": ablations.variant()}          # the card's MLM + NSP, last step only
SEEDS = [0, 1, 2]


def run(settings: dict, seed: int) -> list[dict]:
    """Pre-train the variant as the ablation card does, then read the right-context probes linearly and
    through the BiLSTM; one dict per checkpoint."""
    s = ablations.variant(**settings)
    _, tokenizer = load("bertlab-tiny", device="cpu")
    states = ablations.pretrain_variant(tokenizer, s, seed)
    tasks = [t for t in probes.token_tasks(s["quick"]) if t.name in probes.BILSTM_TASKS]
    tasks.append(probes.next_replaced_task(tokenizer, s["max_len"], s["quick"]))
    points = []
    for fraction, state in sorted(states.items()):
        model = BertForPreTraining(ablations.make_config(tokenizer, s), device="cpu")
        model.load_state_dict(state)
        model.eval()
        point = {"step": round(fraction * s["steps"]), "fraction": fraction}
        # the card's MLM top-1 on the held-out text, measured as ablations.run does: the same model, trained again
        r = evaluate(model, tokenizer, probes.HELDOUT, max_len=s["max_len"], seed=0, passes=1 if s["quick"] else 2)
        point["mlm_top1"] = r.mlm_top1
        # score_token_tasks adds the "+bilstm" scores when its `ltr` flag is set; here the model is an MLM
        point.update(probes.score_token_tasks(model, tokenizer, tasks, s["max_len"], True, seed))
        points.append(point)
    return points


def main(out: str | Path | None = None, jobs: int = 1) -> dict:
    """Run the control's three seeds and write its card next to the ablation card (or to `out`)."""
    import importlib
    import json
    import tempfile

    from .grid import experiment
    me = importlib.import_module("bertlab.experiments.bilstm_control")      # a replayable name, also as __main__
    root = Path(ablations.CORPUS).parents[2]                                   # the repository (or site-packages)
    with tempfile.TemporaryDirectory(prefix="bilstm-control-") as tmp:
        card = experiment(me.run, VARIANTS, seeds=SEEDS, out=tmp, jobs=jobs, data=ablations.DATA,
                          name="MLM + BiLSTM control for notebook 09",
                          notes={"compare_with": "ablations card: 'LTR & No NSP' wsd_right+bilstm, next_replaced+bilstm"})
    card["data"] = [str(Path(d).relative_to(root)) if Path(d).is_relative_to(root) else d for d in card["data"]]
    Path(out or CARD).write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    return card


if __name__ == "__main__":
    main()
