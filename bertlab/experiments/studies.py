"""bertlab's own studies, by the name `bertlab experiment NAME` takes: one entry point per study.

Each study module exports `spec(...)`, the one description of what its notebook reads: the run, variants,
seeds, data, name and notes (ablations: the baselines, the paper's numbers, the groups notebook 09 plots);
a study that chooses later runs from earlier ones (the fine-tuning study) adds `protocol`. The command, the
`--ship` scripts and the tests all start from it, so the card a user makes is the card the notebook reads.

Only names live here (no study is imported until it is asked for): `trust` reads `RUNS` to decide, before
importing anything, which runs a card may name without `--allow`.
"""

from __future__ import annotations

import importlib

# name → (module, keyword arguments of its spec())
STUDIES = {
    "ablations": ("bertlab.experiments.ablations", {}),
    "ablations-quick": ("bertlab.experiments.ablations", {"quick": True}),
    "finetune": ("bertlab.experiments.finetune_study", {}),
    "finetune-quick": ("bertlab.experiments.finetune_study", {"quick": True}),
}
# the shipped cards made by a run of bertlab's own that is not a `bertlab experiment NAME` (no spec to re-run
# from the command line, but a card that may be replayed untrusted): notebook 09's MLM + BiLSTM control, and
# notebook 13's sparse-autoencoder and model-diff artefacts
CARD_RUNS = ("bertlab.experiments.bilstm_control:run", "bertlab.inside.study:run")
RUNS = frozenset([f"{module}:run" for module, _ in STUDIES.values()] + list(CARD_RUNS))   # the runs a card may name untrusted


def study_spec(name: str) -> dict:
    """The spec of the study `name` (a ValueError listing the names for any other)."""
    if name not in STUDIES:
        raise ValueError(f"no study {name!r}: choose from {', '.join(STUDIES)}")
    module, kwargs = STUDIES[name]
    return importlib.import_module(module).spec(**kwargs)
