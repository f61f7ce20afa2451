"""Make the small artefacts notebook 13 reads (bertlab/assets/inside/) and the card that replays them.

    .venv/bin/python scripts/inside_artefacts.py             # the grid of bertlab/inside/study.py, then the copy
    .venv/bin/bertlab replay bertlab/assets/inside/card.json --row 0     # re-run one row, compare the numbers

The grid (bertlab.inside.study.VARIANTS, one seed) has five rows: a TopK autoencoder (8 × 384 = 3,072
features, k = 32) on layer 3 of bertlab-mini and the same on a randomly initialised model of its shape; and
three diffs on held-out prose: bertlab-mini against copies fine-tuned on "topic" and on a task the notebook
hides, and against itself after 60 more masked-LM steps on one file of the corpus. It runs as
`bertlab.experiment` runs every grid: each row in its own process on one thread (jobs=5 runs them side by
side), so the card records the machine, the versions, a hash of the data and every number, the training
speed too. The autoencoders' budget (200 steps of 512 rows, from 30 k tokens of the bundled corpus) is what
a 2-core machine shared with seven other jobs allowed; the card's `steps_per_s` and `curve` say how far it
got, and `train_sae`'s defaults let a free machine train longer. The artefacts the rows
write into build/inside/ (the autoencoders in float16, the diffs as JSON) are copied here with the card, all
but the random-init control's weights (4.7 MB that the notebook does not read: its numbers are in the card).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bertlab  # noqa: E402
from bertlab.inside import study  # noqa: E402

OUT = ROOT / "build" / "inside"
DEST = ROOT / "bertlab" / "assets" / "inside"


def main() -> None:
    os.chdir(ROOT)              # the card names the data and the artefacts relative to the repository
    assets = Path("bertlab") / "assets"
    card = bertlab.experiment(study.run, study.VARIANTS, seeds=[0], out="build/inside", jobs=5, name="inside",
                              data=[assets / "corpus" / "train", assets / "corpus" / "heldout",
                                    assets / "tasks", assets / "probing" / "pos.tsv"],
                              notes={"what": "notebook 13's shipped artefacts: scripts/inside_artefacts.py"})
    DEST.mkdir(parents=True, exist_ok=True)
    for row in card["rows"]:
        print(row["variant"], {k: v for k, v in row["result"].items() if k != "curve"})
    for v in study.VARIANTS.values():
        src = ROOT / v["save"]
        if "random" not in src.name:         # the control's numbers are in the card; its weights stay in build/
            shutil.copyfile(src, DEST / src.name)
    shutil.copyfile(OUT / "card.json", DEST / "card.json")


if __name__ == "__main__":
    main()
