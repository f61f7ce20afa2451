"""One entry point per study: `bertlab experiment NAME` makes the card its notebook reads, sharded and merged
or in one process alike (at the studies' quick budgets: seconds a row)."""

from __future__ import annotations

import json

import pytest

from bertlab.cli import main
from bertlab.experiments import ablations, finetune_study, read_card
from bertlab.experiments.studies import RUNS, STUDIES, study_spec
from bertlab.experiments.trust import check_trusted


def results(card):
    return [(r["variant"], r["seed"], r["result"]) for r in card["rows"]]


def test_every_study_exports_its_spec_and_its_run_is_trusted():
    for name, (module, _) in STUDIES.items():
        assert f"{module}:run" in RUNS
        check_trusted(f"{module}:run")
    assert finetune_study.spec()["run"] in RUNS and callable(finetune_study.spec()["protocol"])
    with pytest.raises(ValueError, match="no study 'x'"):
        study_spec("x")


def test_the_ablation_spec_is_the_shipped_cards_study():
    shipped = read_card(ablations.CARD)
    spec = ablations.spec()
    assert spec["run"] == shipped["run"] and spec["name"] == shipped["name"]
    assert {k: {"settings": v, "seeds": spec["seeds"]} for k, v in spec["variants"].items()} == shipped["variants"]
    assert {k: v for k, v in spec["notes"].items()} == {k: shipped["notes"][k] for k in spec["notes"]}


def notebook_09_reads(card_path, monkeypatch):
    """Notebook 09's first cell (loading the card and printing what it holds), verbatim, on `card_path`."""
    nb = json.loads((ablations.CARD.parents[2] / "notebooks" / "09_ablations.ipynb").read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "read_card(ablations.CARD)" in "".join(c["source"]))
    monkeypatch.setattr(ablations, "CARD", card_path)
    scope = {}
    exec(cell, scope)
    return scope["CARD"], scope["S"], scope["BASE"]


@pytest.mark.slow          # a study grid, sharded and merged: tens of seconds of CPU
def test_a_sharded_ablation_study_merges_into_the_card_notebook_09_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for k in (1, 2):
        assert main(["experiment", "ablations-quick", "--out", f"s{k}", "--shard", f"{k}/2", "--seeds", "0"]) == 0
    assert main(["experiment", "--merge", "s1/card-1-of-2.json", "s2/card-2-of-2.json", "--out", "merged"]) == 0
    # the one-process run over the same rows (computing them again would only re-test that jobs change no number)
    (tmp_path / "one").mkdir()
    with open(tmp_path / "one" / "rows.jsonl", "w") as f:
        for k in (1, 2):
            f.write((tmp_path / f"s{k}" / "rows.jsonl").read_text())
    assert main(["experiment", "ablations-quick", "--out", "one", "--seeds", "0"]) == 0
    merged, one = read_card(tmp_path / "merged" / "card.json"), read_card(tmp_path / "one" / "card.json")
    assert merged["summary"] == one["summary"] and merged["notes"] == one["notes"]
    assert results(merged) == results(one) and len(merged["rows"]) == len(ablations.VARIANTS)
    card, summary, baselines = notebook_09_reads(tmp_path / "merged" / "card.json", monkeypatch)
    assert summary == one["summary"] and set(baselines) >= {"pos", "wsd", "pair", "topic", "next_replaced"}
    for group in card["notes"]["groups"].values():
        assert all(any(k.startswith(v) for k in summary) for v in group)


@pytest.mark.slow          # a study grid, sharded and merged: tens of seconds of CPU
def test_a_sharded_finetune_study_merges_into_the_card_notebook_08_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "finetune-quick", "--out", "one"]) == 0
    one = read_card(tmp_path / "one" / "card.json")
    merged = None
    for round_ in (1, 2, 3):
        for k in (1, 2):
            adopt = ["--from", f"m{round_ - 1}/card.json"] if round_ > 1 else []
            assert main(["experiment", "finetune-quick", "--out", f"s{k}", "--shard", f"{k}/2", *adopt]) == 0
            said = capsys.readouterr().out
            assert ("run each shard again with --from" in said) == (round_ < 3), said
        assert main(["experiment", "--merge", "s1/card-1-of-2.json", "s2/card-2-of-2.json", "--out", f"m{round_}"]) == 0
        merged = read_card(tmp_path / f"m{round_}" / "card.json")
    assert merged["summary"] == one["summary"] and merged["notes"] == one["notes"]
    assert results(merged) == results(one)
    # notebook 08 reads the card through these
    table = finetune_study.study_table(merged)
    assert table == finetune_study.study_table(one) and set(table) == {"follows"}
    assert merged["notes"]["protocol"]["steps"] == 2 and merged["notes"]["pretrained"] in finetune_study.CANDIDATES
