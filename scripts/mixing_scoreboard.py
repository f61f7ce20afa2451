"""The context-mixing scoreboard of notebook 12: every measure against the leave-one-out intervention.

    .venv/bin/python scripts/mixing_scoreboard.py [--model bertlab-mini] [--out bertlab/assets/patching/scoreboard.json]

Scores both sentences of every shipped minimal pair (bertlab/assets/patching/minimal_pairs.json), each with
the model's own top guess as target, through `bertlab.mixing_scoreboard`. The notebook shows the stored
result (the run takes minutes); tests/test_mixing.py recomputes two of its sentences and compares.
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import resources
from pathlib import Path

import torch

import bertlab
from bertlab.experiments.cards import machine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bertlab-mini")
    ap.add_argument("--out", default="bertlab/assets/patching/scoreboard.json")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pairs = json.loads(resources.files("bertlab").joinpath("assets/patching/minimal_pairs.json").read_text())["pairs"]
    texts = [p["clean"] for p in pairs] + [p["corrupt"] for p in pairs]
    model, tok = bertlab.load(args.model, device="cpu")
    start = time.perf_counter()
    board = bertlab.mixing_scoreboard(model, tok, texts)
    seconds = time.perf_counter() - start
    result = {
        "what": "Spearman's rho between each context-mixing measure's token scores (for the [MASK]) and the "
                "leave-one-out intervention (blank one word with [PAD], measure the fall in log P(top guess)), "
                "over both sentences of every minimal pair in minimal_pairs.json",
        "model": args.model, "texts": texts, "per_text": board.per_text,
        "summary": {m: {"mean": mu, "std": sd} for m, (mu, sd) in board.summary.items()},
        "bertlab": bertlab.__version__, "torch": torch.__version__, "machine": machine(), "threads": args.threads,
        "seconds": round(seconds, 1),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for m, (mu, sd) in board.summary.items():
        print(f"{m:22s} {mu:+.3f} ± {sd:.3f}")
    print(f"{len(texts)} texts in {seconds:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
