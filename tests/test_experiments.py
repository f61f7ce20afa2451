"""bertlab.experiment, cards and replay: a row depends on (settings, seed) only, so processes, shards and a
kill change no number; the summary is the rows' mean ± std; the shipped cards replay."""

from __future__ import annotations

import json

import pytest

import bertlab
from bertlab.experiments import jobs_of, merge_cards, read_card, replay
from bertlab.experiments.cards import machine
from bertlab.experiments.commands import format_summary
from testkit import toy_run

ASSETS = bertlab.__file__.rsplit("/", 1)[0] + "/assets"
VARIANTS = {"slow": {"lr": 0.01}, "fast": {"lr": 0.1}, "fastest": {"lr": 0.2}}


def results(card):
    return [(r["variant"], r["seed"], r["result"]) for r in card["rows"]]


@pytest.mark.slow
def test_jobs_change_no_number(tmp_path):
    one = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1, 2], out=tmp_path / "one", jobs=1)
    two = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1, 2], out=tmp_path / "two", jobs=2)
    assert results(one) == results(two)
    assert len(one["rows"]) == 9 and len({r["result"]["loss"] for r in one["rows"]}) == 9   # seeds differ


@pytest.mark.slow
def test_shards_merge_into_the_card_of_one_run(tmp_path):
    whole = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path / "whole")
    parts = [bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path / f"part{k}", shard=(k, 2))
             for k in (1, 2)]
    assert [len(p["rows"]) for p in parts] == [3, 3]
    merged = merge_cards([tmp_path / "part1" / "card-1-of-2.json", tmp_path / "part2" / "card-2-of-2.json"])
    assert results(merged) == results(whole)
    assert merged["summary"] == whole["summary"]
    with pytest.raises(ValueError, match="unrun"):
        merge_cards([tmp_path / "part1" / "card-1-of-2.json"])


@pytest.mark.slow
def test_a_killed_experiment_resumes_keeping_its_finished_rows(tmp_path):
    log = tmp_path / "calls.txt"
    variants = {k: {**v, "log": str(log)} for k, v in VARIANTS.items()}
    full = bertlab.experiment(toy_run, variants, seeds=[0, 1], out=tmp_path / "full")
    # a kill after two jobs, mid-way through writing the third line
    out = tmp_path / "killed"
    out.mkdir()
    lines = (tmp_path / "full" / "rows.jsonl").read_text().splitlines()
    (out / "rows.jsonl").write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:40])
    log.write_text("")
    resumed = bertlab.experiment(toy_run, variants, seeds=[0, 1], out=out)
    assert results(resumed) == results(full)
    assert len(log.read_text().splitlines()) == 4, "only the four unfinished jobs run again"


@pytest.mark.slow
def test_a_changed_setting_is_a_new_row_not_a_resumed_one(tmp_path):
    bertlab.experiment(toy_run, {"a": {"lr": 0.1}}, seeds=[0], out=tmp_path)
    card = bertlab.experiment(toy_run, {"a": {"lr": 0.2}}, seeds=[0], out=tmp_path)
    assert card["variants"]["a"]["settings"] == {"lr": 0.2}
    fresh = bertlab.experiment(toy_run, {"a": {"lr": 0.2}}, seeds=[0], out=tmp_path / "fresh")
    assert results(card) == results(fresh)


@pytest.mark.slow
def test_summary_is_mean_and_std_over_seeds_with_a_noise_flag(tmp_path):
    card = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1, 2], out=tmp_path, reference="slow")
    losses = [r["result"]["loss"] for r in card["rows"] if r["variant"] == "fast"]
    s = card["summary"]["fast"]["loss"]
    mean = sum(losses) / 3
    assert s["mean"] == pytest.approx(mean) and s["n"] == 3
    assert s["std"] == pytest.approx((sum((x - mean) ** 2 for x in losses) / 2) ** 0.5)
    ref = card["summary"]["slow"]["loss"]
    assert s["diff"] == pytest.approx(s["mean"] - ref["mean"])
    assert s["clear"] == (abs(s["diff"]) > s["std"] + ref["std"])
    assert card["summary"]["fast"]["loss"]["clear"]          # lr 0.1 fits far better in 20 steps than lr 0.01
    assert "diff" not in card["summary"]["slow"]["loss"]
    assert "fast: loss" in format_summary(card)


@pytest.mark.slow
def test_card_records_versions_settings_seeds_machine_and_data(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("some data")
    card = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path / "x", data=[data])
    stored = read_card(tmp_path / "x" / "card.json")
    assert stored == json.loads(json.dumps(card))
    assert stored["bertlab"] == bertlab.__version__ and stored["torch"]
    assert stored["variants"]["fast"] == {"settings": {"lr": 0.1}, "seeds": [0, 1]}
    assert stored["machines"] == [machine()] and stored["data_sha256"].startswith("sha256:")
    data.write_text("other data")
    again = bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path / "y", data=[data])
    assert again["data_sha256"] != stored["data_sha256"]


@pytest.mark.slow
def test_replay_agrees_bit_for_bit_and_catches_a_changed_number(tmp_path):
    bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path)
    path = tmp_path / "card.json"
    assert all(r["agree"] and r["mode"] == "bit-identical" and r["data_same"] is None
               for r in replay(path, allow=["testkit"]))
    card = read_card(path)
    card["rows"][3]["result"]["loss"] += 1e-9
    reports = replay(card, allow=["testkit"])
    assert [r["row"] for r in reports if not r["agree"]] == [3]
    assert "loss" in reports[3]["differences"]


def test_replay_never_compares_a_timing_but_still_every_measurement(tmp_path):
    # a study's result may hold how long it took (train_s, steps_per_s): that depends on the machine's load
    bertlab.experiment(toy_run, {"timed": {"lr": 0.1, "timed": True}}, seeds=[0], out=tmp_path)
    card = read_card(tmp_path / "card.json")
    assert "train_s" in card["rows"][0]["result"]
    [report] = replay(card, allow=["testkit"])
    assert report["agree"] and report["identical"] and report["mode"] == "bit-identical", report
    card["rows"][0]["result"]["w0"] += 1e-9
    [report] = replay(card, allow=["testkit"])
    assert not report["agree"] and list(report["differences"]) == ["w0"]


@pytest.mark.parametrize("bad, words", [({}, "non-empty"), ({"a": 3}, "expected a dict")])
def test_bad_variants_say_what_to_pass(tmp_path, bad, words):
    with pytest.raises(ValueError, match=words):
        bertlab.experiment(toy_run, bad, seeds=[0], out=tmp_path)


def test_shards_partition_the_grid():
    variants = {k: {"settings": v, "seeds": [0, 1, 2]} for k, v in VARIANTS.items()}
    whole = jobs_of(variants)
    slices = [jobs_of(variants, (k, 4)) for k in (1, 2, 3, 4)]
    assert sorted(j for s in slices for j in s) == sorted(whole) and sum(map(len, slices)) == len(whole)
    with pytest.raises(ValueError, match="1 ≤ k ≤ n"):
        jobs_of(variants, (5, 4))


# ---- the shipped cards --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name, variant, seed", [("ablations", "random init", 0),
                                                 ("finetune", "tagging random:bertlab-mini lr=0.001", 0)])
def test_a_stored_row_of_each_shipped_card_replays(name, variant, seed):
    card = read_card(f"{ASSETS}/{name}/card.json")
    row = next(i for i, r in enumerate(card["rows"]) if (r["variant"], r["seed"]) == (variant, seed))
    [report] = replay(card, row=row)
    assert report["agree"], report
    assert report["data_same"] is True, "the shipped data no longer hashes as the card recorded"


def test_the_ablation_card_holds_every_variant_seed_and_checkpoint():
    card = read_card(f"{ASSETS}/ablations/card.json")
    from bertlab.experiments import ablations
    assert set(card["variants"]) == set(ablations.VARIANTS)
    for name, v in card["variants"].items():
        assert v["settings"] == ablations.VARIANTS[name] and len(v["seeds"]) >= 3
        for r in (r for r in card["rows"] if r["variant"] == name):
            assert [p["fraction"] for p in r["result"]] == v["settings"]["checkpoints"]
    assert card["summary"]["LTR & No NSP @ 1200"]["wsd_right+bilstm"]["n"] == 3


# ---- the commands ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_experiment_and_replay_commands_run_shards_merge_and_replay(tmp_path, capsys):
    from bertlab.cli import main
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"run": "testkit:toy_run", "variants": VARIANTS, "seeds": [0, 1]}))
    for k in (1, 2):
        assert main(["experiment", str(spec), "--out", str(tmp_path / f"s{k}"), "--shard", f"{k}/2",
                     "--allow", "testkit"]) == 0
    assert main(["experiment", "--merge", str(tmp_path / "s1" / "card-1-of-2.json"),
                 str(tmp_path / "s2" / "card-2-of-2.json"), "--out", str(tmp_path / "all")]) == 0
    assert main(["experiment", str(spec), "--out", str(tmp_path / "one"), "--jobs", "2", "--allow", "testkit"]) == 0
    assert results(read_card(tmp_path / "all" / "card.json")) == results(read_card(tmp_path / "one" / "card.json"))
    capsys.readouterr()
    assert main(["replay", str(tmp_path / "all" / "card.json"), "--row", "1", "--allow", "testkit"]) == 0
    assert "row 1 (slow, seed 1): agrees (bit-identical)" in capsys.readouterr().out
    assert main(["experiment", "nonsense", "--out", str(tmp_path / "x")]) == 2
    assert "no experiment spec 'nonsense'" in capsys.readouterr().err


@pytest.mark.slow
def test_finetune_command_writes_the_model_metrics_and_scores(tmp_path):
    from bertlab.cli import main
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in [{"text": "a good film", "label": "pos"},
                                                              {"text": "a bad film", "label": "neg"}] * 4))
    out = tmp_path / "run"
    assert main(["finetune", "--model", "bertlab-tiny", "--task", "classify", "--train", str(train), "--val",
                 str(train), "--test", str(train), "--out", str(out), "--steps", "3", "--batch-size", "4",
                 "--no-progress"]) == 0
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3] and "val_accuracy" in metrics[-1]
    result = json.loads((out / "result.json").read_text())
    assert result["labels"] == ["neg", "pos"] and 0 <= result["test"]["accuracy"] <= 1
    model, _ = bertlab.load(out)
    assert isinstance(model, bertlab.BertForSequenceClassification)


def test_the_experiment_modules_import_each_other_without_a_circle():
    """cards ← grid ← replay, trust ← grid: each module can be read without the ones that build on it."""
    import ast
    from pathlib import Path
    folder = Path(bertlab.__file__).parent / "experiments"
    graph = {}
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[path.stem] = {n.module.split(".")[0] if n.level == 1 and n.module else None
                            for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1} - {None}
        graph[path.stem] |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1
                             and not n.module for a in n.names}

    def reaches(start, goal, seen=()):
        return any(m == goal or (m not in seen and reaches(m, goal, (*seen, m))) for m in graph.get(start, ()))
    assert not [m for m in graph if m != "__init__" and reaches(m, m)], graph
    assert "grid" not in graph["cards"] and "replay" not in graph["cards"]


def test_a_card_cannot_hide_a_number_by_dropping_it_or_naming_it_a_timing(tmp_path):
    # replay compared only the names the card kept, and never one named `..._s`: an edited card that dropped
    # w0, or renamed it w0_s with any value, still "agreed" on the numbers left
    bertlab.experiment(toy_run, {"timed": {"lr": 0.1, "timed": True}}, seeds=[0], out=tmp_path)
    card = read_card(tmp_path / "card.json")
    clean = json.loads(json.dumps(card))
    value = card["rows"][0]["result"].pop("w0")
    [report] = replay(card, allow=["testkit"])
    assert not report["agree"] and report["differences"] == {"w0": (None, value)}
    card["rows"][0]["result"]["w0_s"] = 123.0
    [report] = replay(card, allow=["testkit"])
    assert not report["agree"] and set(report["differences"]) == {"w0", "w0_s"}
    del clean["rows"][0]["result"]["train_s"]            # a timing the run makes is missing from the card
    [report] = replay(clean, allow=["testkit"])
    assert not report["agree"] and list(report["differences"]) == ["train_s"]
