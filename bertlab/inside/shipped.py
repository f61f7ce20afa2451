"""The artefacts shipped in bertlab/assets/inside/ (scripts/inside_artefacts.py made them; the card replays).

    assets()["sae"]                 # the autoencoder on layer 3 of bertlab-mini (float16 file)
    load_card_rows()["sae: random init"]      # that row's numbers, as the card recorded them
    load_card()["variants"]                   # every row's settings
"""

from __future__ import annotations

import json
from pathlib import Path

from ..checkpoint import ASSETS
from ..pretraining.data import read_documents

INSIDE = ASSETS / "inside"
HELDOUT = ASSETS / "corpus" / "heldout"
FILES = {"sae": "sae-mini-l3.safetensors",       # the random-init control's numbers are in the card, not its weights
         "diff_topic": "diff-topic.json", "diff_mystery": "diff-mystery.json", "diff_pretrain": "diff-pretrain.json",
         "card": "card.json"}


def assets() -> dict[str, Path]:
    """{name: path} of every shipped artefact (see FILES)."""
    return {k: INSIDE / v for k, v in FILES.items()}


def load_card() -> dict:
    """The shipped experiment card: settings of every variant, each row's result, the machine."""
    return json.loads((INSIDE / FILES["card"]).read_text(encoding="utf-8"))


def load_card_rows() -> dict[str, dict]:
    """{variant: result} from the shipped card (one seed per variant)."""
    return {row["variant"]: row["result"] for row in load_card()["rows"]}


def heldout_sentences(n: int | None = None) -> list[str]:
    """The demo corpus's held-out English prose, sentence by sentence (none of it trained bertlab-mini)."""
    sentences = [s for doc in read_documents(sorted(HELDOUT.glob("en_*.txt"))) for s in doc if s.strip()]
    return sentences[:n] if n is not None else sentences
