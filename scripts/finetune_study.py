"""Ship the fine-tuning study's card and QA scores (notebook 08): the study itself is `bertlab experiment finetune`.

    nice -n 19 bertlab experiment finetune --out runs/finetune_study --jobs 2    # the study (~30 CPU min)
    .venv/bin/python scripts/finetune_study.py --ship [--out runs/finetune_study]   # copy its card here
    nice -n 19 .venv/bin/python scripts/finetune_study.py --qa-scores            # one QA run's per-question scores
    bertlab replay bertlab/assets/finetune/card.json --row 17                    # one row again

The protocol (candidate selection, a learning rate per task and start chosen on validation, three seeds) is
`bertlab.experiments.finetune_study.protocol`; each row is its `run`, which calls `bertlab.finetune`. The task
data is `bertlab.load_task`'s (bertlab/assets/tasks/, built by scripts/make_tasks.py).
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
from bertlab.experiments import read_card
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
    ap.add_argument("--out", type=Path, default=Path("runs/finetune_study"), help="the study's folder (its card.json)")
    ap.add_argument("--ship", action="store_true", help="copy OUT/card.json to bertlab/assets/finetune/")
    ap.add_argument("--qa-scores", action="store_true", help="write qa_scores.json from the shipped card's QA choice")
    args = ap.parse_args(argv)
    if not (args.ship or args.qa_scores):
        ap.error("say --ship or --qa-scores (the study itself: bertlab experiment finetune --out DIR)")
    torch.set_num_threads(1)
    if args.ship:
        card = read_card(args.out / "card.json")
        if card["name"] != "finetune study" or "chosen_lr" not in card["notes"]:
            print(f"{args.out / 'card.json'} is not a finished fine-tuning study (run: bertlab experiment finetune "
                  f"--out {args.out})", file=sys.stderr)
            return 2
        if not study.CARD.exists() or not study.CARD.samefile(args.out / "card.json"):
            shutil.copy(args.out / "card.json", study.CARD)
        print(json.dumps(study.study_table(card), indent=1))
    if args.qa_scores:
        card = read_card(ASSET / "card.json")
        (ASSET / "qa_scores.json").write_text(json.dumps(qa_dump(card), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
