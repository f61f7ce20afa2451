"""The ablation harness (scripts/ablations.py) and the results it shipped (bertlab/assets/ablations/results.json).

The full harness takes about half an hour of CPU, so the tests check the shipped file's shape and internal
consistency, recompute its recorded --quick cell (seconds) to prove the code that wrote it still gives the
same numbers, and check the two design claims the probes rest on: an LTR model's state at a word cannot see
the words after it, and the right-context word-sense set gives every sense the same left context.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab.model.heads import IGNORE

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bertlab" / "assets" / "ablations" / "results.json"


@pytest.fixture(scope="module")
def ablations():
    spec = importlib.util.spec_from_file_location("ablations", ROOT / "scripts" / "ablations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results():
    return json.loads(RESULTS.read_text())


@pytest.fixture(scope="module")
def tok():
    return bertlab.load("bertlab-tiny", device="cpu")[1]


# ---- the shipped file -------------------------------------------------------------------------------------

def test_results_cover_every_variant_and_seed_at_the_full_budget(results, ablations):
    assert results["budget"] == ablations.FULL.__dict__
    assert len(results["seeds"]) >= 3
    names = [v.name for v in ablations.VARIANTS]
    assert [v["name"] for v in results["variants"]] == names
    for v in ablations.VARIANTS:
        for seed in results["seeds"]:
            got = sorted(r["fraction"] for r in results["rows"] if r["variant"] == v.name and r["seed"] == seed)
            assert got == sorted(v.checkpoints), (v.name, seed)
    assert results["command"].startswith("python scripts/ablations.py")
    assert 0 < results["cpu_seconds"] < 35 * 60, "the harness is budgeted to 35 minutes of one CPU thread"


def test_every_score_is_an_accuracy_and_every_model_is_scored_on_the_same_probes(results):
    probes = {"next_replaced", "wsd_right", "wsd", "pos", "pair", "topic"}
    for r in results["rows"]:
        assert probes <= set(r), r["variant"]
        for m in probes | {"mlm_top1", "nsp", "wsd_right+bilstm", "next_replaced+bilstm"}:
            if m in r:
                assert 0.0 <= r[m] <= 1.0, (r["variant"], m, r[m])
        assert ("wsd_right+bilstm" in r) == ("next_replaced+bilstm" in r) == r["variant"].startswith("LTR")
        assert ("mlm_top1" in r) == (not r["variant"].startswith("LTR"))     # an LTR model has no MLM head
    assert set(results["baselines"]) == probes


def test_the_summary_is_the_mean_and_spread_of_the_rows(results):
    for cell in results["summary"].values():
        rows = [r for r in results["rows"] if r["variant"] == cell["variant"] and r["step"] == cell["step"]]
        assert sorted(r["seed"] for r in rows) == cell["seeds"]
        for metric, stats in cell.items():
            if not isinstance(stats, dict):
                continue
            values = torch.tensor([r[metric] for r in rows], dtype=torch.float64)
            assert stats["mean"] == pytest.approx(float(values.mean()), abs=1e-12)
            assert stats["std"] == pytest.approx(float(values.std()), abs=1e-12)
            assert stats["min"] <= stats["mean"] <= stats["max"]


def test_the_papers_numbers_are_recorded_as_published(results):
    paper = results["paper"]
    assert paper["table5"]["rows"]["BERT-base"] == [84.4, 88.4, 86.7, 92.7, 88.5]
    assert paper["table5"]["rows"]["LTR & No NSP"][2] == 77.5            # MRPC: LTR's big loss
    assert [row[3] for row in paper["table8"]["rows"]] == [84.2, 84.3, 84.1, 84.4, 83.7, 83.6]
    assert all(sum(row[:3]) == 100 for row in paper["table8"]["rows"])


def test_the_recorded_quick_cell_recomputes(results, ablations):
    # The same code, seed and --quick budget must give the numbers the file recorded: the harness is a
    # pure function of its seed, so a change to it (or to the pieces it uses) shows up here.
    check = results["quick_check"]
    fresh = ablations.run(check["seeds"], quick=True, jobs=1, only=check["only"])
    assert len(fresh["rows"]) == len(check["rows"])
    for old, new in zip(check["rows"], fresh["rows"]):
        for key, value in old.items():
            if key.startswith("cpu_seconds"):
                continue
            if isinstance(value, float):
                assert new[key] == pytest.approx(value, abs=1e-6), key
            else:
                assert new[key] == value, key


# ---- the probes' design ------------------------------------------------------------------------------------

def test_right_context_senses_give_every_sense_the_same_left_context(ablations):
    examples, labels = ablations.right_context_senses()
    assert len(examples) >= 150
    for (sentence, word), label in zip(examples, labels):
        assert sentence.startswith(f"the {word} ") and label.startswith(f"{word}/")
        assert len(sentence.split()) >= 5
    for word in {w for _, w in examples}:
        assert len({y for (_, w), y in zip(examples, labels) if w == word}) == 2    # both senses kept


def test_next_token_labels_shift_left_and_ignore_padding(ablations):
    ids = torch.tensor([[2, 10, 11, 3, 0, 0], [2, 12, 13, 14, 15, 3]])
    attn = (ids != 0).long()
    labels = ablations.next_token_labels(ids, attn)
    assert labels.tolist() == [[10, 11, 3, IGNORE, IGNORE, IGNORE], [12, 13, 14, 15, 3, IGNORE]]


def test_a_left_to_right_models_state_at_the_word_ignores_the_words_after_it(ablations, tok):
    # The reason the LTR row must sit at the word-identity baseline on wsd_right: with causal attention, the
    # state at "bank" in "the bank of the stream" equals the one in "the bank lent them money".
    config = ablations.make_config(tok, ablations.Variant("LTR", objective="ltr"), ablations.FULL)
    assert config.is_decoder
    torch.manual_seed(0)
    model = bertlab.BertForPreTraining(config, device="cpu").eval()
    examples = [("the bank of the stream .", "bank"), ("the bank lent them money .", "bank")]
    _, states, spans = ablations.sequence_states(model.bert, tok, examples, 32)
    (i, (s, e)), (j, (s2, e2)) = spans
    assert torch.allclose(states[i][s:e], states[j][s2:e2], atol=1e-5)
    assert not torch.allclose(states[i][-1], states[j][-1], atol=1e-3)      # the last tokens do differ


def test_the_harness_refuses_unknown_variants(ablations):
    with pytest.raises(SystemExit):
        ablations.main(["--only", "ELMo", "--quick"])
