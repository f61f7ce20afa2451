"""The paper's ablations at toy scale (notebook 09), through the package API.

    .venv/bin/python scripts/ablations.py --jobs 2                      # the whole grid (~20 min on 2 cores)
    .venv/bin/python scripts/ablations.py --quick --out /tmp/quick      # seconds: every code path, tiny budget
    .venv/bin/python -m bertlab experiment ablations --out runs/ablations --shard 1/4   # one slice of four

The variants, the pre-training loop and the probes are `bertlab.experiments.ablations`; the grid, its
processes, resume and card are `bertlab.experiment`. --ship copies the card to bertlab/assets/ablations/.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import bertlab
from bertlab.experiments import ablations
from bertlab.experiments.commands import format_summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/ablations"))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--only", nargs="+", choices=list(ablations.VARIANTS), help="variants to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="a tiny budget and probe subsets: seconds")
    ap.add_argument("--ship", action="store_true", help="copy the card to bertlab/assets/ablations/")
    args = ap.parse_args(argv)
    variants = {k: {**v, **(ablations.QUICK if args.quick else {})} for k, v in ablations.VARIANTS.items()
                if not args.only or k in args.only}
    card = bertlab.experiment(ablations.run, variants, args.seeds, out=args.out, jobs=args.jobs, data=ablations.DATA,
                              name="ablations", notes={"baselines": ablations.baselines(args.quick),
                                                       "paper": ablations.PAPER, "groups": ablations.GROUPS})
    if args.ship:
        shutil.copy(args.out / "card.json", Path(bertlab.__file__).parent / "assets" / "ablations" / "card.json")
    print(format_summary(card))
    return 0


if __name__ == "__main__":
    sys.exit(main())
