"""Experiments: variant × seed grids in processes, experiment cards, replay; the paper's studies as variants.

    card = bertlab.experiment(run, {"base": {...}, "change": {...}}, seeds=[0, 1, 2], out="runs/x", jobs=2)
    bertlab.replay("runs/x/card.json", row=0)                  # bertlab's own studies
    bertlab.replay("their/card.json", allow=["theirstudy"])    # a card whose run is in a module you trust
"""

from .cards import clear_of_noise, data_hash, jobs_of, machine, merge_cards, read_card, summarise, write_card
from .grid import JobFailed, experiment, read_rows, run_job
from .replay import replay

__all__ = ["experiment", "replay", "merge_cards", "read_card", "write_card", "summarise", "clear_of_noise", "data_hash",
           "machine", "jobs_of", "read_rows", "run_job", "JobFailed"]
