"""bertlab-mini, the lab's MLM + NSP model: it ships in the package, loads offline, and its card tells the truth."""

from __future__ import annotations

import argparse
import json
import re
import shlex

import pytest
import torch
from safetensors import safe_open

import bertlab
from bertlab.checkpoint import ASSETS
from bertlab.cli import _add_pretrain
from bertlab.pretraining.evaluate import card_scores
from bertlab.probe import fill_mask, next_sentence
from testkit import bundled

MINI = ASSETS / "bertlab-mini"


@pytest.fixture(scope="module")
def mini():
    torch.set_num_threads(2)
    return bundled("bertlab-mini")


@pytest.fixture(scope="module")
def measured(mini):
    """Every number of eval.json, measured again from the shipped weights by the card's own code."""
    return card_scores(*mini)


def test_ships_as_package_data_in_bf16_under_40_mb_with_a_model_card():
    weights = MINI / "model.safetensors"
    assert weights.stat().st_size <= 40 * 2**20
    with safe_open(str(weights), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
    for name in ("config.json", "vocab.txt", "tokenizer.json", "MODEL_CARD.md", "loss_curves.png", "eval.json",
                 "cloze.json", "NOTICE", "phase1.json", "loss_curves_phase1.png"):
        assert (MINI / name).exists(), name


def test_loads_offline_as_an_fp32_pretraining_model(mini, monkeypatch):
    model, tok = mini
    assert isinstance(model, bertlab.BertForPreTraining) and not model.training
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert tok.vocab_size == model.config.vocab_size
    assert model.bert.embeddings.word_embeddings.weight is model.cls.predictions.decoder.weight  # tied


def test_ordinary_english_never_becomes_unk(mini):
    _, tok = mini
    for text in ("In 1969, 42 people paid $3.50 (or €5) at 7:45 — 100% sure!", "Café, naïve, façade, Zoë",
                 "#tags @home {a|b} [x] <y> ~z^2 `code` \\ back_slash & 'quotes' “curly” …"):
        assert "[UNK]" not in tok.tokenize(text), text


@pytest.mark.slow
def test_the_cards_numbers_are_what_the_shipped_weights_score_now(measured):
    card = json.loads((MINI / "eval.json").read_text())
    for part in ("prose", "wordnet"):
        for key in ("mlm_top1", "unigram_top1", "nsp_accuracy", "masked_tokens", "pairs"):
            assert measured[part][key] == pytest.approx(card[part][key], abs=1e-9), (part, key)
        assert measured[part]["nsp_majority"] == 0.5          # balanced pairs: chance is 50 %
    assert [r["top5"] for r in measured["cloze"]] == [r["top5"] for r in card["cloze"]]
    text = (MINI / "MODEL_CARD.md").read_text()
    for value in (card["prose"]["mlm_top1"], card["prose"]["nsp_accuracy"], card["wordnet"]["mlm_top1"]):
        assert f"{value:.1%}" in text
    hits = sum(r["hit"] for r in card["cloze"])
    assert f"{hits} of {len(card['cloze'])}" in text


def test_the_card_says_met_or_missed_truthfully_for_every_target():
    card = json.loads((MINI / "eval.json").read_text())
    text = (MINI / "MODEL_CARD.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    checks = {"masked-token top-1, held-out prose": card["prose"]["mlm_top1"] >= 0.40,
              "next-sentence accuracy, held-out prose": card["prose"]["nsp_accuracy"] >= 0.90,
              "everyday cloze sentences": card["cloze_top5"] >= 0.60}
    for start, met in checks.items():
        row = next(v for k, v in rows.items() if k.startswith(start))
        assert ("**missed**" not in row) == met and (" met" in row or "**missed**" in row), row


def test_it_beats_its_baselines_and_bertlab_tiny(mini):
    card = json.loads((MINI / "eval.json").read_text())
    assert card["prose"]["mlm_top1"] > 3 * card["prose"]["unigram_top1"]
    assert card["prose"]["nsp_accuracy"] > 0.75
    assert sum(r["hit"] for r in card["cloze"]) > card["tiny_cloze_hits"]


def test_the_cloze_sentences_were_fixed_before_training_and_the_card_uses_them_all():
    cloze = json.loads((MINI / "cloze.json").read_text())["sentences"]
    card = json.loads((MINI / "eval.json").read_text())
    assert [(r["text"], r["expected"]) for r in card["cloze"]] == [tuple(c) for c in cloze]


@pytest.mark.slow
def test_she_opened_the_door_and_put_her_money_in_the_bank(mini):
    # the river bank is not found (the card says so: "river" and "water" win); the money bank is
    model, tok = mini
    door = [g.token for g in fill_mask(model, tok, "She opened the [MASK] and walked in.").guesses[0]]
    bank = [g.token for g in fill_mask(model, tok, "She deposited her money in the [MASK].").guesses[0]]
    assert "door" in door and bank[0] == "bank"


@pytest.mark.slow
def test_next_sentence_prefers_the_true_continuation(mini):
    model, tok = mini
    a = "The kettle began to whistle on the stove."
    assert next_sentence(model, tok, a, "She poured the hot water over the tea leaves.") > next_sentence(
        model, tok, a, "The goalkeeper dived to the left and missed the ball.")


def test_the_card_gives_the_exact_command_and_seed():
    """The card's two commands are ones today's `bertlab pretrain` accepts, and they chain: phase 2 starts
    from phase 1's run, and trains for the steps eval.json reports."""
    text = (MINI / "MODEL_CARD.md").read_text()
    block = re.search(r"```bash\n(.+?)\n```", text, re.S).group(1)
    phase1, phase2 = block.splitlines()[-2:]
    parser = argparse.ArgumentParser(prog="bertlab")
    _add_pretrain(parser.add_subparsers(dest="command"))
    first, second = (parser.parse_args(shlex.split(line)[1:]) for line in (phase1, phase2))
    assert first.command == second.command == "pretrain"
    assert (first.seed, first.init, first.out) == (0, "build/bertlab-mini-start", "runs/bertlab-mini")
    assert (second.seed, second.init) == (1, first.out)
    assert second.steps == json.loads((MINI / "eval.json").read_text())["steps"]
    phase1_record = json.loads((MINI / "phase1.json").read_text())
    assert phase1_record["command"] == phase1                # the phase the shipped model continued
