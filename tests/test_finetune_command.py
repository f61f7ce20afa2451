"""`bertlab finetune` loses nothing a user has: an --out holding a run or a model is refused unless --overwrite;
every file (--train, --val, --test) is read and checked before training, each error one line naming the file
and line; a run that fails a check or stops (a diverged loss) leaves the folder as it was; the model is
saved before --test is scored."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import bertlab
from bertlab.cli import main

GOOD = [{"text": "a good film", "label": "pos"}, {"text": "a bad film", "label": "neg"}] * 3


def jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def finetune(tmp_path, *extra, train=None, model="bertlab-tiny"):
    train = train or jsonl(tmp_path / "train.jsonl", GOOD)
    return main(["finetune", "--model", str(model), "--task", "classify", "--train", str(train), "--steps", "2",
                 "--batch-size", "2", "--no-progress", *map(str, extra)])


def snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """A finished fine-tuning run, to be kept intact by everything below."""
    tmp = tmp_path_factory.mktemp("prev")
    assert finetune(tmp, "--out", tmp / "run", "--val", jsonl(tmp / "val.jsonl", GOOD)) == 0
    return tmp / "run"


def test_a_folder_holding_a_run_or_a_model_is_refused_and_left_as_it_was(tmp_path, previous, capsys):
    before = snapshot(previous)
    assert finetune(tmp_path, "--out", previous) == 2
    assert "holds a fine-tuning run (metrics.jsonl, result.json" in capsys.readouterr().err
    bertlab.save(*bertlab.load("bertlab-tiny"), tmp_path / "save")
    assert finetune(tmp_path, "--out", tmp_path / "save") == 2
    assert "holds a model (config.json" in capsys.readouterr().err
    (tmp_path / "pre" / "checkpoints").mkdir(parents=True)
    jsonl(tmp_path / "pre" / "metrics.jsonl", [{"step": 1}])
    assert finetune(tmp_path, "--out", tmp_path / "pre") == 2
    assert "holds a pre-training run (checkpoints" in capsys.readouterr().err
    assert finetune(tmp_path, "--out", previous, model=previous) == 2
    assert "is the --model folder" in capsys.readouterr().err
    assert snapshot(previous) == before
    assert json.loads((tmp_path / "pre" / "metrics.jsonl").read_text()) == {"step": 1}


def test_overwrite_replaces_the_run_and_what_a_pre_training_run_left(tmp_path, capsys):
    out = tmp_path / "pre"
    (out / "checkpoints" / "step-0000001").mkdir(parents=True)
    jsonl(out / "snapshots.jsonl", [{"step": 1}])
    (out / "notes.txt").write_text("mine")
    assert finetune(tmp_path, "--out", out, "--overwrite") == 0
    assert not (out / "checkpoints").exists() and not (out / "snapshots.jsonl").exists()
    assert (out / "notes.txt").read_text() == "mine"                # what is not a run's stays
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    model, _ = bertlab.load(out)
    assert isinstance(model, bertlab.BertForSequenceClassification)
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "no temporary or lock file left"


def test_the_installed_models_folder_is_never_an_out(tmp_path, capsys):
    from bertlab.checkpoint import ASSETS
    assert finetune(tmp_path, "--out", ASSETS / "bertlab-tiny", "--overwrite") == 2
    assert "inside bertlab's installation" in capsys.readouterr().err


@pytest.mark.parametrize("flag, lines, words", [
    ("--train", ['{"text": "a", "label": "x"}', '{"text": "b" "label": "y"}'], r"train.jsonl, line 2, column 14: not JSON \(Expecting ',' delimiter\)"),
    ("--train", ['[{"text": "a", "label": "x"}]'], "line 1 is a list, not a dict .* looks like one JSON array"),
    ("--train", ["[", '{"text": "a", "label": "x"}', "]"], "line 1, column 2: not JSON .* looks like one JSON array"),
    ("--train", ['{"text": "a", "label": "x", "label": "y"}'], "line 1: the key 'label' appears twice"),
    ("--train", ["", "[1, 2]"], "train.jsonl, line 2 is a list, not a dict"),
    ("--train", ['{"text": "a"}'], "train.jsonl, line 1 lacks label"),
    ("--train", [], "non-empty list of records"),
    ("--val", ['{"text": "a", "label": "meh"}'], "val.jsonl, line 1 has the label 'meh', which --train does not have"),
    ("--val", ['{"text": "a", "label": 1}'], "val.jsonl, line 1 has the label 1, a whole number, but"),
    ("--test", ['{"text": "a", "label": "pos"}', '', '{"text": "a", "label": "meh"}'], "test.jsonl, line 3 has the label 'meh', which --train does not have"),
    ("--test", ['{"words": ["a"], "tags": [0]}'], "test.jsonl, line 1 lacks text, label"),
])
def test_every_file_is_checked_before_training_and_nothing_is_touched(tmp_path, previous, capsys, flag, lines, words):
    before = snapshot(previous)
    path = jsonl(tmp_path / f"{flag[2:]}.jsonl", lines)
    args = ["--out", previous, "--overwrite", flag, path]
    assert (finetune(tmp_path, *args, train=path) if flag == "--train" else finetune(tmp_path, *args)) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertlab finetune: error: ") and err.count("\n") == 1, err
    assert re.search(words, err), err
    assert snapshot(previous) == before, "a run that fails a check never touches the previous run"


@pytest.mark.parametrize("make, words", [
    (lambda p: p.mkdir(), "is a folder: pass a JSONL file"), (lambda p: None, "no such file"),
    (lambda p: os.mkfifo(p), "not a regular file"), (lambda p: p.write_bytes(b'{"text": "caf\xe9"}\n'), "not UTF-8"),
])
def test_a_train_path_that_is_no_jsonl_file_is_one_line(tmp_path, capsys, make, words):
    path = tmp_path / "train.jsonl"
    make(path)
    assert finetune(tmp_path, "--out", tmp_path / "run", train=path) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_byte_order_mark_is_read_as_utf8(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in GOOD).encode())
    assert finetune(tmp_path, "--out", tmp_path / "run", train=path) == 0


def test_the_model_is_saved_before_test_is_scored(tmp_path, capsys, monkeypatch):
    from bertlab.finetuning.loop import FineTuneResult

    def fails(self, tokenizer, records):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(FineTuneResult, "evaluate", fails)
    test = jsonl(tmp_path / "test.jsonl", GOOD)
    assert finetune(tmp_path, "--out", tmp_path / "run", "--test", test) == 2
    assert "scoring --test failed (out of memory); the trained model, metrics.jsonl and result.json" in \
        capsys.readouterr().err
    assert isinstance(bertlab.load(tmp_path / "run")[0], bertlab.BertForSequenceClassification)
    assert "test" not in json.loads((tmp_path / "run" / "result.json").read_text())


def test_a_diverged_loss_stops_and_writes_nothing(tmp_path, previous, capsys):
    before = snapshot(previous)
    assert finetune(tmp_path, "--out", previous, "--overwrite", "--lr", "1e30", "--steps", "20") == 1
    err = capsys.readouterr().err
    assert "is no longer a finite number" in err and "Nothing was written" in err and err.count("\n") == 1
    assert snapshot(previous) == before


@pytest.mark.parametrize("args, words", [(["--steps", "0"], "--steps 0 (steps=0) is out of range"),
                                         (["--lr", "nan"], "--lr nan (lr=nan)"),
                                         (["--batch-size", "-2"], "--batch-size -2 (batch_size=-2)"),
                                         (["--eval-every", "0"], "--eval-every 0 (eval_every=0)"),
                                         (["--device", "tpu"], "tpu"),
                                         (["--max-length", "2"], "--max-length 2 (max_length=2)"),
                                         (["--warmup", "1"], "--warmup 1.0 (warmup=1.0)"),
                                         (["--clip", "-1"], "--clip -1.0 (clip=-1.0)"),
                                         (["--weight-decay", "-0.5"], "--weight-decay -0.5 (weight_decay=-0.5) is out of"),
                                         (["--eps", "0"], "--eps 0.0 (eps=0.0) is out of range"),
                                         (["--seed", "-3"], "--seed -3 (seed=-3) is out of range")])
def test_bad_numbers_are_one_line_before_training(tmp_path, capsys, args, words):
    # a number out of range names its flag as pretrain's do (it said only `lr=nan`, after loading the model)
    assert finetune(tmp_path, "--out", tmp_path / "run", *args) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_ctrl_c_while_training_writes_nothing(tmp_path, previous, capsys, monkeypatch):
    from bertlab.finetuning import loop

    def interrupted(result, *args):
        raise KeyboardInterrupt

    before = snapshot(previous)
    monkeypatch.setattr(loop, "_train", interrupted)
    assert finetune(tmp_path, "--out", previous, "--overwrite") == 130
    assert "interrupted at step 1 of 2; nothing was written" in capsys.readouterr().err
    assert snapshot(previous) == before
    assert finetune(tmp_path, "--out", tmp_path / "new") == 130
    assert not (tmp_path / "new").exists(), "a folder the run made is removed again"


def test_overwrite_may_fine_tune_the_model_folder_in_place(tmp_path, previous):
    import shutil
    run = shutil.copytree(previous, tmp_path / "run")
    assert finetune(tmp_path, "--out", run, "--overwrite", model=run) == 0
    assert json.loads((run / "result.json").read_text())["model"] == str(run)


def test_max_length_cuts_what_the_model_could_not_read(tmp_path, capsys):
    train = jsonl(tmp_path / "train.jsonl", GOOD + [{"text": "a long film " * 200, "label": "pos"}])
    assert finetune(tmp_path, "--out", tmp_path / "run", train=train) == 2
    assert "more than the model's 128 positions: pass max_length=128" in capsys.readouterr().err
    assert finetune(tmp_path, "--out", tmp_path / "run", "--max-length", "128", train=train) == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["settings"]["max_length"] == 128


@pytest.mark.parametrize("flag", ["--model", "--out"])
def test_an_empty_flag_is_one_line(tmp_path, capsys, flag):
    args = {"--model": "bertlab-tiny", "--out": str(tmp_path / "run")} | {flag: ""}
    train = jsonl(tmp_path / "train.jsonl", GOOD)
    assert main(["finetune", "--model", args["--model"], "--task", "classify", "--train", str(train),
                 "--out", args["--out"]]) == 2
    assert f"{flag} is empty" in capsys.readouterr().err
