"""`bertlab pretrain`: flags mirror PretrainArgs, bad input is one line on stderr with exit code 2, a real run
writes the model, and `--resume` takes only the flags given. (`python -m bertlab` runs in test_trainer's DDP test.)"""

from __future__ import annotations

import dataclasses
import json

import pytest

from bertlab.cli import main
from bertlab.pretraining.trainer import PretrainArgs, latest_checkpoint
from testkit import corpus, one_thread  # noqa: F401  (fixtures)

TINY = ["--preset", "tiny", "--max-len", "32", "--batch-size", "4", "--vocab-size", "300", "--device", "cpu",
        "--no-progress"]


def steps_logged(out) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_help_lists_every_pretrain_args_field(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["pretrain", "--help"])
    assert exit.value.code == 0
    text = capsys.readouterr().out
    for f in dataclasses.fields(PretrainArgs):
        flag = "corpus" if f.name == "corpus" else "--" + f.name.replace("_", "-")
        assert flag in text, f"{flag} missing from `bertlab pretrain --help`"
    assert "--resume" in text and "--no-progress" in text


def test_a_missing_corpus_is_one_line_on_stderr_and_exit_code_2(tmp_path, capsys):
    code = main(["pretrain", str(tmp_path / "nowhere.txt"), "--out", str(tmp_path / "out"), *TINY])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("bertlab pretrain: error: corpus path")
    assert "nowhere.txt does not exist" in errors[0]
    assert not (tmp_path / "out").exists()


def test_no_corpus_and_no_resume_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["pretrain", "--out", str(tmp_path)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: bertlab pretrain") and "needs a CORPUS" in err


@pytest.mark.slow
def test_a_tiny_run_then_resume_with_only_steps(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["pretrain", str(corpus), "--out", str(out), *TINY, "--steps", "3", "--log-every", "1"]) == 0
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    assert steps_logged(out) == [1, 2, 3]

    # every other setting comes from the checkpoint (the saved log_every=1 included)
    assert main(["pretrain", "--out", str(out), "--resume", "--steps", "5"]) == 0
    assert steps_logged(out) == [1, 2, 3, 4, 5]
    assert latest_checkpoint(out).name == "step-0000005"

    # any spelling argparse accepts counts as given (an abbreviation, a --no- flag)
    assert main(["pretrain", "--out", str(out), "--resume", "--step", "6", "--no-progress"]) == 0
    assert steps_logged(out)[-1] == 6

    # a setting the saved run cannot change is an error, not silently ignored
    capsys.readouterr()
    assert main(["pretrain", "--out", str(out), "--resume", "--lr", "1.0", "--steps", "7"]) == 2
    assert "lr=1.0 (saved: 0.0001)" in capsys.readouterr().err
    assert steps_logged(out)[-1] == 6


@pytest.mark.slow
def test_ctrl_c_is_exit_code_130_after_saving_a_checkpoint(corpus, tmp_path, monkeypatch):
    # pretrain returns normally on Ctrl-C; the command learns it was interrupted from what pretrain returns
    from bertlab.pretraining import trainer
    real, calls = trainer.pretraining_loss, {"n": 0}

    def ctrl_c_in_step_3(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "pretraining_loss", ctrl_c_in_step_3)
    out = tmp_path / "run"
    assert main(["pretrain", str(corpus), "--out", str(out), *TINY, "--steps", "5", "--log-every", "1"]) == 130
    assert steps_logged(out) == [1, 2] and latest_checkpoint(out).name == "step-0000002"
    monkeypatch.setattr(trainer, "pretraining_loss", real)
    assert main(["pretrain", "--out", str(out), "--resume"]) == 0
    assert steps_logged(out) == [1, 2, 3, 4, 5]


def test_help_text_comes_from_the_pretrain_args_fields(capsys):
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    text = "".join(capsys.readouterr().out.split())     # argparse wraps lines, even at hyphens: drop all spaces
    for f in dataclasses.fields(PretrainArgs):
        assert "".join(f.metadata["help"].split()) in text, f"{f.name}'s help missing from --help"
