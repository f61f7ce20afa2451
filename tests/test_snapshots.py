"""Snapshots during pre-training: what the model makes of one sentence every N steps, without changing the run."""

import json
from pathlib import Path

import pytest
import torch
from test_trainer import TINY, assert_same_losses, metrics

from bertlab.cli import main as cli
from bertlab.pretraining import read_snapshots
from bertlab.pretraining.trainer import pretrain
from testkit import corpus, one_thread  # noqa: F401  (fixtures)

RUN = dict(TINY, steps=6, log_every=1, save_every=3)
TEXT = "The river [MASK] was muddy after the [MASK]."


@pytest.fixture(scope="module")
def plain(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plain")
    pretrain(corpus, out, **RUN)
    return out


@pytest.fixture(scope="module")
def recorded(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("recorded")
    pretrain(corpus, out, **RUN, snapshot_every=4, snapshot_text=TEXT)
    return out


def test_snapshots_are_taken_at_step_0_every_n_steps_and_at_the_end(recorded):
    shots = read_snapshots(recorded)
    assert [s.step for s in shots] == [0, 4, 6]
    for s in shots:
        assert s.text == TEXT and s.tokens[0] == "[CLS]" and s.tokens[-1] == "[SEP]"
        T = len(s.tokens)
        assert s.attention.shape == (2, 2, T, T)                          # tiny: 2 layers, 2 heads
        assert torch.allclose(s.attention.sum(-1), torch.ones(2, 2, T), atol=1e-3)   # softmax rows
        assert len(s.guesses) == 2 and all(len(g) == 5 for g in s.guesses)          # two [MASK]s, top 5
        assert all(0 <= p <= 1 for g in s.guesses for _, p in g)
        assert len(s.intra_similarity) == 3 and all(-1 <= x <= 1 for x in s.intra_similarity)


def test_recording_snapshots_changes_nothing_in_the_run(plain, recorded):
    # a snapshot runs in eval mode, without gradients and without drawing random numbers
    assert sorted(metrics(recorded)) == sorted(metrics(plain)) == list(range(1, 7))
    assert_same_losses(metrics(recorded), metrics(plain), range(1, 7), atol=1e-12)


def test_the_model_changes_between_snapshots(recorded):
    first, last = read_snapshots(recorded)[0], read_snapshots(recorded)[-1]
    assert (first.attention - last.attention).abs().max() > 1e-3
    assert first.guesses != last.guesses


def test_resume_continues_the_snapshots_without_repeating_a_step(corpus, tmp_path):
    pretrain(corpus, tmp_path, **dict(RUN, steps=3), snapshot_every=2, snapshot_text=TEXT)
    with open(tmp_path / "snapshots.jsonl", "a") as f:      # a line a killed run wrote after its last checkpoint
        f.write(json.dumps({"step": 5}) + "\n" + '{"step": 6, "te')
    pretrain(None, tmp_path, resume=True, steps=6)
    assert [s.step for s in read_snapshots(tmp_path)] == [0, 2, 3, 4, 6]


def test_a_sentence_that_cannot_be_recorded_fails_before_training(corpus, tmp_path):
    with pytest.raises(ValueError, match="longer than|more than max_len"):
        pretrain(corpus, tmp_path / "a", **RUN, snapshot_every=2, snapshot_text="word " * 40)
    with pytest.raises(ValueError, match="non-empty"):
        pretrain(corpus, tmp_path / "b", **RUN, snapshot_every=2, snapshot_text="  ")
    with pytest.raises(ValueError, match="whole number of steps"):
        pretrain(corpus, tmp_path / "c", **RUN, snapshot_every=-1)
    assert not (tmp_path / "a" / "checkpoints").exists()


def test_reading_a_run_without_snapshots_says_how_to_record_them(plain):
    with pytest.raises(FileNotFoundError, match="snapshot-every"):
        read_snapshots(plain)


def test_the_command_line_records_snapshots(corpus, tmp_path):
    code = cli(["pretrain", str(corpus), "--out", str(tmp_path), "--steps", "2", "--batch-size", "8",
                "--max-len", "32", "--vocab-size", "300", "--device", "cpu", "--no-progress",
                "--snapshot-every", "1", "--snapshot-text", "A cat sat on the [MASK]."])
    assert code == 0
    assert [s.step for s in read_snapshots(tmp_path)] == [0, 1, 2]
