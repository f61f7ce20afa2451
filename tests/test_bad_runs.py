"""Never lose a run (issue 13): bad output folders, damaged checkpoints and misused resumes, replayed as tables.

Each case is what an unlucky or careless user does to a run folder, and what must happen: an error that
says what was wrong and what to do, or a run that goes on correctly. Never a run that silently destroys
another, writes into a folder it was not pointed at, or continues from the wrong place.

The reference run `finished` trains 8 tiny steps with checkpoints at steps 4 and 8 (the models, corpus and
threading are as small as in test_trainer.py). Most cases damage a copy of it so that only the step-4
checkpoint is usable: resume must then find step 4, say so, and end with exactly the reference's losses
and weights, each step logged once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import bertlab
from bertlab import Tokenizer
from bertlab.cli import main
from bertlab.pretraining.trainer import pretrain
from testkit import corpus, one_thread, write_corpus  # noqa: F401  (corpus, one_thread: fixtures)

TINY = dict(preset="tiny", max_len=32, batch_size=8, vocab_size=300, seed=0, device="cpu", progress=False)
RUN = dict(TINY, steps=8, save_every=4, log_every=1)       # checkpoints at steps 4 and 8
FLAGS = ["--preset", "tiny", "--max-len", "32", "--batch-size", "8", "--vocab-size", "300", "--device", "cpu",
         "--no-progress", "--steps", "8", "--save-every", "4", "--log-every", "1"]     # RUN, as the command's flags
STEP_4, STEP_8 = "checkpoints/step-0000004", "checkpoints/step-0000008"


@pytest.fixture(scope="module")
def finished(corpus, tmp_path_factory) -> Path:
    """The reference run: 8 uninterrupted steps. Tests only read it, or copy it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    pretrain(corpus, out, **RUN)
    return out


def logged_steps(out: Path) -> list[int]:
    """The step of every line of metrics.jsonl, in order (a line that does not parse fails the test)."""
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` by relative path, as a hash of its bytes: to prove a folder was not touched."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def stopped_at_step_4(finished: Path, dest: Path) -> Path:
    """A copy of the finished run as a kill just before the step-8 checkpoint leaves it: metrics logged to step 8,
    checkpoints only to step 4."""
    shutil.copytree(finished, dest)
    shutil.rmtree(dest / STEP_8)
    (dest / "checkpoints" / "latest").write_text("step-0000004\n")
    return dest


def assert_continues_exactly(run: Path, finished: Path) -> None:
    """The resumed run logged each step once and ended with the uninterrupted run's losses and weights."""
    assert logged_steps(run) == list(range(1, 9))
    got = {m["step"]: m for m in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}
    want = {m["step"]: m for m in map(json.loads, (finished / "metrics.jsonl").read_text().splitlines())}
    for step in range(1, 9):
        for key in ("loss", "mlm_loss", "nsp_loss", "lr"):
            assert abs(got[step][key] - want[step][key]) < 1e-6, (step, key, got[step][key], want[step][key])
    a, b = load_file(run / "model.safetensors"), load_file(finished / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def cli_error(capsys, argv: list[str]) -> str:
    """Run the command, which must fail with exit code 2 and one line on stderr; return that line."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("bertlab pretrain: error:")]
    assert len(lines) == 1, err
    return lines[0]


# ---- 1. resume reads and writes only the folder it is given --------------------------------------

def test_a_copied_run_resumes_in_the_copy_and_leaves_the_original_alone(finished, corpus, tmp_path):
    original = stopped_at_step_4(finished, tmp_path / "original")
    before = snapshot(original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)

    run = pretrain(corpus, copy, resume=True)
    assert snapshot(original) == before            # not a byte of the original changed
    assert_continues_exactly(copy, finished)
    assert run.out == copy


def test_a_run_with_relative_paths_resumes_from_another_working_directory(finished, corpus, tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    shutil.copy(corpus, project / "data" / "train.txt")       # the reference's text, at a relative path
    monkeypatch.chdir(project)

    def power_cut(m):
        if m["step"] == 6:
            raise RuntimeError("power cut")

    with pytest.raises(RuntimeError, match="power cut"):
        pretrain("data/train.txt", "runs/a", callbacks=[power_cut], **RUN)
    run = project / "runs" / "a"
    stored = torch.load(run / STEP_4 / "trainer_state.pt", weights_only=True)
    # every path the run stores is relative to its own folder
    assert stored["args"]["out"] == "."
    assert stored["args"]["corpus"] == [os.path.join("..", "..", "data", "train.txt")]
    assert stored["data"]["files"] == stored["args"]["corpus"]
    assert str(tmp_path) not in repr(stored["args"]) + repr(stored["data"])

    monkeypatch.chdir(tmp_path)                    # somewhere else entirely
    pretrain(None, project / "runs" / "a", resume=True)
    assert_continues_exactly(run, finished)


# ---- 2. a new run never destroys an old one ------------------------------------------------------

@pytest.fixture
def tokenizer_trainings(monkeypatch) -> list:
    """Counts Tokenizer.train calls: an error about --out must come before the (slow) tokenizer training."""
    calls, real = [], Tokenizer.train

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(Tokenizer, "train", counted)
    return calls


def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_touches_nothing(finished, corpus, tmp_path, capsys,
                                                                            tokenizer_trainings):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = snapshot(run)
    with pytest.raises(FileExistsError, match=r"already holds a run .*--resume .*--overwrite"):
        pretrain(corpus, run, **dict(RUN, steps=3))
    line = cli_error(capsys, ["pretrain", str(corpus), "--out", str(run), *FLAGS])
    assert "--resume" in line and "--overwrite" in line
    assert snapshot(run) == before and not tokenizer_trainings

    # a run killed before its first checkpoint (metrics only) is a run too
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n')
    with pytest.raises(FileExistsError, match="metrics.jsonl"):
        pretrain(corpus, partial, **RUN)
    with pytest.raises(FileNotFoundError, match="nothing to resume.*--overwrite"):
        pretrain(None, partial, resume=True)


def test_overwrite_replaces_the_old_run_entirely(finished, corpus, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "notes.txt").write_text("mine")          # not the run's: stays
    # the old run has step-4 and step-8: pruning by name once deleted the new run's step-3 right after writing it
    assert main(["pretrain", str(corpus), "--out", str(run), *FLAGS, "--steps", "3", "--save-every", "1",
                 "--overwrite"]) == 0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest", "step-0000002", "step-0000003"]
    assert logged_steps(run) == [1, 2, 3]
    assert (run / "notes.txt").read_text() == "mine"
    assert bertlab.load(run, device="cpu")[0].config.max_position_embeddings == 32

    line = cli_error(capsys, ["pretrain", "--out", str(run), "--resume", "--overwrite"])
    assert "one or the other" in line


HOLDER = """
import sys, time
from bertlab import pretrain

def hold(metrics):          # a long run, still going: it holds the folder until it is killed
    print("running", flush=True)
    time.sleep(600)

pretrain(sys.argv[1], sys.argv[2], callbacks=[hold], **{options})
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="the run-folder lock is an flock, which Windows lacks")
def test_two_runs_never_write_one_folder_and_a_killed_runs_lock_is_taken_over(corpus, tmp_path, caplog):
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(Path(bertlab.__file__).parents[1]))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(options=RUN), str(corpus), str(out)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "running"
        for attempt in (dict(resume=True), dict(overwrite=True, **RUN)):   # neither may touch a live run's folder
            with pytest.raises(FileExistsError, match="in use by another run") as error:
                pretrain(corpus, out, **attempt)
            message = str(error.value)
            assert f"pid {holder.pid} on host {socket.gethostname()}, started " in message
            assert "choose another --out" in message
    finally:
        holder.kill()                              # SIGKILL: no chance to remove its lock file
        holder.wait(timeout=60)
    assert (out / ".pretrain.lock").exists()
    assert logged_steps(out) == [1]                # and no checkpoint yet

    with caplog.at_level(logging.WARNING, logger="bertlab.pretraining.trainer"):
        pretrain(corpus, out, overwrite=True, **dict(RUN, steps=2))
    assert f"taking over {out / '.pretrain.lock'} from pid {holder.pid}" in caplog.text
    assert logged_steps(out) == [1, 2]
    assert not (out / ".pretrain.lock").exists()  # released at the end


def test_the_lock_is_released_and_a_made_folder_removed_when_a_run_fails(tmp_path):
    out = tmp_path / "new" / "run"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        pretrain(tmp_path / "nowhere.txt", out, **RUN)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("where", ["out itself", "a folder above out"])
def test_an_out_that_is_a_file_fails_before_the_tokenizer_is_trained(corpus, tmp_path, capsys, tokenizer_trainings,
                                                                   where):
    file = tmp_path / "model.bin"
    file.write_bytes(b"precious")
    out = file if where == "out itself" else file / "run"
    with pytest.raises(NotADirectoryError, match=re.escape(f"({file} is a file)")):
        pretrain(corpus, out, **RUN)
    assert "is not a folder" in cli_error(capsys, ["pretrain", str(corpus), "--out", str(out), *FLAGS])
    assert not tokenizer_trainings and file.read_bytes() == b"precious"


# ---- 3. damaged checkpoints: resume falls back to the newest intact one ---------------------------

def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _outside(run: Path) -> None:
    """`latest` edited to point into another run (an intact step-8 checkpoint there), step 8 gone from this one."""
    other = run.parent / "other"
    shutil.copytree(run, other)
    shutil.rmtree(run / STEP_8)
    (run / "checkpoints" / "latest").write_text("../../other/checkpoints/step-0000008\n")


DAMAGED = {
    # case: (what happens to the finished run's step-8 checkpoint, words the fallback warning must contain)
    "weights truncated": (lambda run: _truncate(run / STEP_8 / "model.safetensors"), "step-0000008 cannot be read"),
    "weights emptied": (lambda run: (run / STEP_8 / "model.safetensors").write_bytes(b""), "step-0000008 cannot"),
    "trainer state truncated": (lambda run: _truncate(run / STEP_8 / "trainer_state.pt"), "step-0000008 cannot"),
    "trainer state emptied": (lambda run: (run / STEP_8 / "trainer_state.pt").write_bytes(b""), "step-0000008"),
    "trainer state deleted": (lambda run: (run / STEP_8 / "trainer_state.pt").unlink(), "trainer_state.pt"),
    "random state deleted": (lambda run: (run / STEP_8 / "rng-rank0.pt").unlink(), "rng-rank0.pt"),
    "tokenizer deleted": (lambda run: [(run / STEP_8 / f).unlink() for f in ("tokenizer.json", "vocab.txt")],
                          "tokenizer: FileNotFoundError: missing"),
    "checkpoint folder deleted": (lambda run: shutil.rmtree(run / STEP_8),
                                  "latest names step-0000008, which is missing"),
    "latest and the checkpoint deleted": (lambda run: (shutil.rmtree(run / STEP_8),
                                                       (run / "checkpoints" / "latest").unlink()), "latest is missing"),
    "latest not text": (lambda run: (shutil.rmtree(run / STEP_8),
                                     (run / "checkpoints" / "latest").write_bytes(b"\xff\xfe\x00")), "latest cannot"),
    "latest points outside the run": (_outside, "not a checkpoint folder of this run"),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_resume_falls_back_to_the_newest_intact_checkpoint_saying_so(case, finished, corpus, tmp_path, caplog):
    damage, words = DAMAGED[case]
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    damage(run)
    outside = snapshot(tmp_path / "other") if (tmp_path / "other").exists() else None

    with caplog.at_level(logging.WARNING, logger="bertlab.pretraining.trainer"):
        pretrain(corpus, run, resume=True)
    assert f"resuming from {run / STEP_4} (step 4)" in caplog.text and words in caplog.text
    assert_continues_exactly(run, finished)      # steps 5-8 trained again, each logged once
    assert (run / "checkpoints" / "latest").read_text().strip() == "step-0000008"
    if outside is not None:
        assert snapshot(tmp_path / "other") == outside


def test_no_intact_checkpoint_at_all_is_an_error_naming_each_and_what_to_do(finished, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / STEP_8 / "trainer_state.pt").write_bytes(b"")
    _truncate(run / STEP_4 / "model.safetensors")
    before = snapshot(run)
    with pytest.raises(ValueError, match=r"no checkpoint .* can be resumed: step-0000008 .*; step-0000004 .*"
                                         r"--overwrite"):
        pretrain(None, run, resume=True)
    assert "--overwrite" in cli_error(capsys, ["pretrain", "--out", str(run), "--resume"])
    assert snapshot(run) == before


def test_after_a_kill_each_step_is_logged_once(finished, corpus, tmp_path):
    run = stopped_at_step_4(finished, tmp_path / "run")
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"step": 9, "loss": 3.1, "mlm_lo')   # the kill cut the last line short
    pretrain(corpus, run, resume=True)
    assert_continues_exactly(run, finished)           # every line parses; steps 5-8 once each


# ---- 3. misused resume: a corpus, or too few steps -----------------------------------------------

def test_a_different_corpus_given_with_resume_is_refused(finished, tmp_path, capsys):
    other = write_corpus(tmp_path / "other.txt", seed=1)
    before = snapshot(finished)
    with pytest.raises(ValueError, match=r"own corpus .*train.txt.*, not on .*other.txt"):
        pretrain(other, finished, resume=True, steps=12)
    assert "own corpus" in cli_error(capsys, ["pretrain", str(other), "--out", str(finished), "--resume",
                                              "--steps", "12"])
    assert snapshot(finished) == before


def test_a_moved_corpus_is_named_and_its_new_place_is_used(finished, corpus, tmp_path, caplog):
    data = tmp_path / "data" / "train.txt"
    data.parent.mkdir()
    shutil.copy(corpus, data)
    heldout = write_corpus(tmp_path / "data" / "heldout.txt", n_docs=8, seed=1)

    def power_cut(m):
        if m["step"] == 6:
            raise RuntimeError("power cut")

    run = tmp_path / "run"
    with pytest.raises(RuntimeError):
        pretrain(data, run, callbacks=[power_cut], eval_corpus=[str(heldout)], **RUN)
    moved = tmp_path / "moved" / "train.txt"
    moved.parent.mkdir()
    os.replace(data, moved)
    heldout.unlink()

    with pytest.raises(FileNotFoundError, match=r"corpus .*data/train.txt is not there any more: give its new"):
        pretrain(None, run, resume=True)
    with caplog.at_level(logging.WARNING, logger="bertlab.pretraining.trainer"):
        pretrain(moved, run, resume=True)              # used, since the run's own is gone
    assert "continuing on " + str(moved) in caplog.text
    # a held-out corpus that has gone is said at the start, not found missing after the training
    assert "held-out corpus " + os.path.realpath(heldout) + " is not there any more" in caplog.text
    assert_continues_exactly(run, finished)            # and no held-out scores line


@pytest.mark.parametrize("steps", [None, 8, 5])
def test_steps_at_or_below_the_current_step_says_so(finished, capsys, steps):
    before = snapshot(finished)
    options = {} if steps is None else {"steps": steps}
    with pytest.raises(ValueError, match=f"already at step 8, so steps={steps or 8} leaves nothing to train"):
        pretrain(None, finished, resume=True, **options)
    flags = [] if steps is None else ["--steps", str(steps)]
    line = cli_error(capsys, ["pretrain", "--out", str(finished), "--resume", *flags])
    assert "pass a larger --steps, e.g. --steps 16" in line
    assert snapshot(finished) == before
