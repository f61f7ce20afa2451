"""Does pre-training pay? The fine-tuning study behind notebook 08, through the package API.

    nice -n 19 .venv/bin/python scripts/finetune_study.py --jobs 2 --out runs/finetune_study   # the study (~30 CPU min)
    nice -n 19 .venv/bin/python scripts/finetune_study.py --qa-scores       # one QA run's per-question scores
    .venv/bin/python -m bertlab replay bertlab/assets/finetune/card.json --row 17              # one row again

The protocol (candidate selection, a learning rate per task and start chosen on validation, three seeds) is
`bertlab.experiments.finetune_study.protocol`; each row is its `run`, which calls `bertlab.finetune`. The task
data is `bertlab.load_task`'s (bertlab/assets/tasks/, built by scripts/make_tasks.py). The finished card is
copied to bertlab/assets/finetune/card.json with --ship.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

import bertlab
from bertlab.experiments import finetune_study as study
from bertlab.finetuning import qa_scores

ASSET = Path(bertlab.__file__).resolve().parent / "assets" / "finetune"


def qa_dump(card: dict) -> dict:
    """One QA run (the pre-trained start, seed 0, its chosen rate): every validation and test question's best
    span, ŝ_ij and s_null, so notebook 08 can show the SQuAD 2.0 rule without training a reader."""
    init, lr = card["notes"]["pretrained"], card["notes"]["chosen_lr"]["qa"]["pretrained"]
    s = {**study.SETTINGS, "task": "qa", "init": init, "lr": lr}
    bert, tokenizer = study.encoder(init, 0, s["layers"])
    data = bertlab.load_task("qa")
    result = bertlab.finetune(bert, tokenizer, data["train"], data["val"], task="qa", steps=s["steps"], lr=lr,
                              batch_size=s["batch_size"], seed=0, eps=s["eps"])
    dump = {"init": init, "lr": lr, "seed": 0, "tau": result.tau}
    for split in ("val", "test"):
        rows = data[split]
        scored = qa_scores(result.model, tokenizer, rows)
        encodings = [tokenizer(r["question"], r["passage"]) for r in rows]
        dump[split] = [{"question": r["question"], "passage": r["passage"], "answer": r["answer"],
                        "span": tokenizer.decode(enc.input_ids[i:j + 1]), "span_is_gold": (i, j) == gold,
                        "s_best": round(best, 4), "s_null": round(null, 4)}
                       for r, enc, ((i, j), best, null, gold) in zip(rows, encodings, scored)]
    return dump


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/finetune_study"), help="rows.jsonl and card.json (resumable)")
    ap.add_argument("--jobs", type=int, default=1, help="processes, one torch thread each")
    ap.add_argument("--tasks", nargs="*", default=list(study.TASKS), choices=study.TASKS)
    ap.add_argument("--ship", action="store_true", help="copy the finished card to bertlab/assets/finetune/")
    ap.add_argument("--qa-scores", action="store_true", help="write qa_scores.json from the shipped card's QA choice")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.qa_scores:
        card = json.loads((ASSET / "card.json").read_text(encoding="utf-8"))
        (ASSET / "qa_scores.json").write_text(json.dumps(qa_dump(card), indent=1) + "\n", encoding="utf-8")
        return 0
    card = study.protocol(args.out, jobs=args.jobs, tasks=args.tasks)
    if args.ship:
        shutil.copy(args.out / "card.json", ASSET / "card.json")
    print(json.dumps(study.study_table(card), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
