"""The fine-tuning study notebook 08 reports: its results file has the promised shape, its summary follows from
its own cells by the stated protocol, its data is what the script builds and keeps test examples apart from
training, and one of its cells recomputes to the stored numbers (`--quick`)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSET = ROOT / "bertlab" / "assets" / "finetune"
sys.path.insert(0, str(ROOT / "scripts"))
import finetune_study as study  # noqa: E402


@pytest.fixture(scope="module")
def results():
    return json.loads((ASSET / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def data():
    return study.build_data()


def cell(results, task, init, lr, seed):
    found = [c for c in results["cells"] if (c["task"], c["init"], c["lr"], c["seed"]) == (task, init, lr, seed)]
    assert len(found) == 1, f"expected one cell {task, init, lr, seed}, found {len(found)}"
    return found[0]


def test_protocol_is_the_scripts(results):
    p = results["protocol"]
    assert (p["layers"], p["steps"], p["batch"]) == (study.LAYERS, study.STEPS, study.BATCH)
    assert p["lrs"] == list(study.LRS) and p["seeds"] == list(study.SEEDS) and p["select_lr"] == study.SELECT_LR
    assert p["tasks"] == list(study.TASKS)
    assert len(p["seeds"]) >= 3
    assert results["command"].startswith("nice -n 19 env OMP_NUM_THREADS=1 .venv/bin/python scripts/finetune_study.py")
    assert 0 < results["cells_cpu_s"] <= 40 * 60, "the study is budgeted to about 30 CPU minutes"


def test_summary_follows_from_the_cells(results):
    # the pre-trained start is the candidate with the best mean validation score at the selection rate
    for c in study.CANDIDATES:
        vals = [cell(results, t, c, study.SELECT_LR, 0)["val"] for t in study.TASKS]
        assert results["selection_val_mean"][c] == pytest.approx(sum(vals) / len(vals), abs=1e-4)
    assert results["pretrained"] == max(study.CANDIDATES, key=results["selection_val_mean"].get)
    for task in study.TASKS:
        for start, init in (("pretrained", results["pretrained"]), ("random", "random:" + results["pretrained"])):
            s = results["summary"][task][start]
            assert s["init"] == init
            # the rate is the validation winner of seed 0, and the test scores are that rate's seeds
            assert s["lr"] == max(study.LRS, key=lambda lr: cell(results, task, init, lr, 0)["val"])
            assert s["test"] == [cell(results, task, init, s["lr"], seed)["test"] for seed in study.SEEDS]
            assert all(0.0 <= x <= 1.0 for x in s["test"])
            mean = sum(s["test"]) / len(s["test"])
            std = math.sqrt(sum((x - mean) ** 2 for x in s["test"]) / (len(s["test"]) - 1))
            assert s["mean"] == pytest.approx(mean, abs=1e-4) and s["std"] == pytest.approx(std, abs=1e-4)
            assert (s["min"], s["max"]) == (min(s["test"]), max(s["test"]))


def test_assets_hold_what_the_script_builds(data):
    for task, splits in data.items():
        for split, rows in splits.items():
            stored = [json.loads(line) for line in (ASSET / f"{task}.{split}.jsonl").read_text(encoding="utf-8").splitlines()]
            assert stored == rows, f"{task}.{split}.jsonl differs from what scripts/finetune_study.py builds"
        assert len(splits["test"]) >= 200


def test_corpus_tasks_test_on_heldout_documents_only(data):
    def sentences(folder):
        return {s for f in (study.CORPUS / folder).glob("en_*.txt") for s in f.read_text(encoding="utf-8").splitlines()}

    train, heldout = sentences("train"), sentences("heldout")
    test = ([r["text"] for r in data["topic"]["test"]] + [s for r in data["follows"]["test"] for s in (r["a"], r["b"])]
            + [s for r in data["choice"]["test"] for s in [r["context"], *r["endings"]]])
    assert all(s in heldout for s in test)
    # the corpus repeats a few sentences across documents (its README counts 11 of 8+ words), so a held-out
    # document may share one with a training document; more than a handful would mean the split leaked
    shared = {s for s in test if s in train}
    assert len(shared) <= 3, f"{len(shared)} test sentences are also in train/: {sorted(shared)[:5]}"
    fitted = ([r["text"] for r in data["topic"]["train"]] + [r["a"] for r in data["follows"]["train"]]
              + [r["context"] for r in data["choice"]["train"]])
    assert all(s in train for s in fitted)


def test_tagging_and_qa_test_on_new_names_places_and_times(data):
    def entities(split):
        return {w for r in data["tagging"][split] for w, t in zip(r["words"], r["tags"]) if t > 0}

    assert entities("test") and not entities("test") & (entities("train") | entities("val"))
    frames = {" ".join(w if t == 0 else "_" for w, t in zip(r["words"], r["tags"])) for r in data["tagging"]["train"]}
    assert not any(" ".join(w if t == 0 else "_" for w, t in zip(r["words"], r["tags"])) in frames
                   for r in data["tagging"]["test"]), "a test frame also occurs in training"
    answers = {split: {r["answer"] for r in data["qa"][split] if r["answer"]} for split in ("train", "test")}
    assert answers["test"] and not answers["test"] & answers["train"]
    no_answer = sum(r["answer"] is None for r in data["qa"]["test"]) / len(data["qa"]["test"])
    assert 0.2 < no_answer < 0.5


def test_squad2_rule_answers_null_when_cls_wins():
    scored = [((5, 6), 3.0, 1.0, (5, 6)), ((4, 4), 1.0, 2.0, (0, 0)), ((7, 8), 2.0, 1.5, (0, 0))]
    # no answer when s_null - s_best > threshold: at 0 the third question gets its span, wrongly
    assert study.qa_exact_match(scored, 0.0) == pytest.approx(2 / 3)
    assert study.qa_exact_match(scored, -1.0) == pytest.approx(1.0)     # null wins if within 1 of the best span
    assert study.qa_exact_match(scored, 2.5) == pytest.approx(1 / 3)     # null almost never wins
    assert study.best_threshold(scored) == pytest.approx(-0.5 - 1e-6)    # the largest threshold with EM 1.0


def test_quick_recomputes_a_stored_cell(results):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "finetune_study.py"), "--quick"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    stored = cell(results, *study.quick_cell(results["pretrained"]))
    assert got["val"] == pytest.approx(stored["val"], abs=0.01)
    assert got["test"] == pytest.approx(stored["test"], abs=0.01)
