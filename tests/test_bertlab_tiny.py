"""bertlab-tiny, the bundled home-pretrained model: it loads ready for the probes, and its card tells the truth."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import bertlab
from bertlab.checkpoint import ASSETS
from bertlab.pretraining.evaluate import evaluate
from bertlab.probe import fill_mask, next_sentence
from testkit import bundled, one_thread  # noqa: F401  (a fixture)

TINY = ASSETS / "bertlab-tiny"
CORPUS = ASSETS / "corpus"
# the demo corpus as bertlab-tiny was trained on it, before it grew for bertlab-mini
ORIGINAL = ("en_daily", "en_outdoors", "en_town", "en_world", "ko", "ko2")
HELDOUT = [str(CORPUS / "heldout" / f"{name}.txt") for name in ORIGINAL]


@pytest.fixture(scope="module")
def tiny():
    return bundled("bertlab-tiny")


def test_ships_as_package_data_under_15_mb_with_a_model_card():
    assert (TINY / "model.safetensors").stat().st_size <= 15 * 2**20
    for name in ("config.json", "vocab.txt", "tokenizer.json", "MODEL_CARD.md", "loss_curves.png", "eval.json"):
        assert (TINY / name).exists(), name
    assert (TINY / "loss_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_loads_as_a_pretraining_model_with_mlm_and_nsp_heads(tiny):
    model, tok = tiny
    assert isinstance(model, bertlab.BertForPreTraining) and not model.training
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 128
    assert tok.vocab_size == model.config.vocab_size


def test_fill_mask_and_next_sentence_give_real_answers(tiny):
    model, tok = tiny
    guesses = fill_mask(model, tok, "The dog began to [MASK] at the mailman.", top_k=5).guesses[0]
    assert len(guesses) == 5 and all(0 < g.probability <= 1 for g in guesses)
    assert [g.probability for g in guesses] == sorted((g.probability for g in guesses), reverse=True)
    same_topic = next_sentence(model, tok, "The kettle began to whistle on the stove.",
                               "She poured the hot water over the tea leaves.")
    assert 0.0 <= same_topic <= 1.0


def test_korean_stays_in_syllables(tiny):
    # trained with accents kept: Hangul is not decomposed into jamo, so 사랑 can be a vocabulary entry
    _, tok = tiny
    assert "사랑" in "".join(tok.tokenize("나는 가족을 사랑한다.")).replace("##", "")


@pytest.mark.slow
def test_the_cards_held_out_numbers_are_what_evaluation_measures_now(tiny):
    model, tok = tiny
    card = json.loads((TINY / "eval.json").read_text())
    result = evaluate(model, tok, HELDOUT, max_len=128, seed=0, balance=False)   # Google's pairs, as trained
    assert result.pairs == card["pairs"] and result.masked_tokens == card["masked_tokens"]
    for key in ("mlm_top1", "unigram_top1", "nsp_accuracy", "nsp_majority"):
        assert abs(getattr(result, key) - card[key]) < 1e-9, key
    balanced = evaluate(model, tok, HELDOUT, max_len=128, seed=0)              # exactly 50 % IsNext
    assert balanced.pairs == card["pairs_balanced"] and balanced.nsp_majority == 0.5
    assert abs(balanced.nsp_accuracy - card["nsp_accuracy_balanced"]) < 1e-9
    text = (TINY / "MODEL_CARD.md").read_text()
    assert f"{card['nsp_accuracy']:.1%}" in text and f"{card['mlm_top1']:.1%}" in text
    assert f"{card['nsp_accuracy_balanced']:.1%}" in text and f"{card['nsp_majority']:.1%}" in text


def test_it_beats_the_unigram_baseline_on_held_out_text(tiny):
    card = json.loads((TINY / "eval.json").read_text())
    assert card["mlm_top1"] > 2 * card["unigram_top1"]
    assert card["nsp_accuracy"] > card["nsp_majority"] and card["nsp_accuracy_balanced"] > 0.5


def test_the_card_gives_the_exact_command_and_seed():
    text = (TINY / "MODEL_CARD.md").read_text()
    command = re.search(r"```bash\n(.+?)\n```", text, re.S).group(1)
    assert command.startswith("OMP_NUM_THREADS=1 bertlab pretrain bertlab/assets/corpus/train") and "--seed 0" in command
    assert "--eval-corpus " + " ".join(f"bertlab/assets/corpus/heldout/{n}.txt" for n in ORIGINAL) in command


def test_held_out_documents_are_not_in_the_training_split():
    def docs(folder: Path) -> set[str]:
        return {d.strip() for f in folder.glob("*.txt") for d in f.read_text().split("\n\n") if d.strip()}

    train, heldout = docs(CORPUS / "train"), docs(CORPUS / "heldout")
    assert heldout and not (train & heldout)
    assert len(train) + len(heldout) == len(docs(CORPUS / "source"))


def test_the_card_lists_every_run_the_settings_were_chosen_from_with_the_shipped_one_marked():
    # the settings were picked on the held-out set, so the card shows every run it was picked from
    sweep = json.loads((TINY / "sweep.json").read_text())
    card = json.loads((TINY / "eval.json").read_text())
    shipped = [r for r in sweep if r["shipped"]]
    assert len(sweep) >= 2 and len(shipped) == 1
    assert shipped[0]["nsp_accuracy"] == card["nsp_accuracy"] and shipped[0]["mlm_top1"] == card["mlm_top1"]
    assert shipped[0]["nsp_accuracy"] == max(r["nsp_accuracy"] for r in sweep)
    text = (TINY / "MODEL_CARD.md").read_text()
    for r in sweep:
        assert f"| {r['run']}" in text and f"{r['nsp_accuracy']:.1%}" in text
