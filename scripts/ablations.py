"""Ship the ablation study's card (notebook 09): the study itself is `bertlab experiment ablations`.

    bertlab experiment ablations --out runs/ablations --jobs 2       # the whole grid (~20 min on 2 cores)
    bertlab experiment ablations --out runs/a1 --shard 1/4           # or one slice of four, then --merge
    .venv/bin/python scripts/ablations.py --ship [--out runs/ablations]   # copy the card to bertlab/assets/

--ship checks that the card is the whole study (bertlab.experiments.ablations.spec(): every variant, seed and
note notebook 09 reads) before copying it over the shipped one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from bertlab.experiments import ablations, read_card


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/ablations"), help="the study's folder (its card.json)")
    ap.add_argument("--ship", action="store_true", required=True, help="copy OUT/card.json to bertlab/assets/ablations/")
    args = ap.parse_args(argv)
    card, spec = read_card(args.out / "card.json"), ablations.spec()
    if set(card["variants"]) != set(spec["variants"]) or card["notes"].get("baselines") != spec["notes"]["baselines"]:
        print(f"{args.out / 'card.json'} is not the whole ablation study (run: bertlab experiment ablations "
              f"--out {args.out})", file=sys.stderr)
        return 2
    if not ablations.CARD.exists() or not ablations.CARD.samefile(args.out / "card.json"):
        shutil.copy(args.out / "card.json", ablations.CARD)
    print(f"shipped {args.out / 'card.json'} → {ablations.CARD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
