"""What can go wrong around a pre-training run (issue 21): planted links, file modes, impossible numbers,
a diverging loss, full disks and read-only folders.

Each test is one thing an adversarial or unlucky user does to a run, and what must happen: the link is
never written through, the number is refused before anything is loaded (naming the flag, the value and the
range), the run that diverges stops with the last good checkpoint still the one resume finds, and a write
that fails says which file, why, and what is intact. The runs are as tiny as in test_bad_runs.py.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab.cli import main
from bertlab.files import LinkRefused, WriteFailed
from bertlab.pretraining import runfolder, trainer
from bertlab.pretraining.trainer import pretrain
from testkit import bundled, corpus, one_thread  # noqa: F401  (fixtures)

TINY = dict(preset="tiny", max_len=32, batch_size=8, vocab_size=300, seed=0, device="cpu", progress=False)
RUN = dict(TINY, steps=4, save_every=2, log_every=1)       # checkpoints at steps 2 and 4


@pytest.fixture(scope="module")
def finished(corpus, tmp_path_factory) -> Path:
    """A finished 4-step run: tests copy it, never change it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    pretrain(corpus, out, **RUN)
    return out


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file the user can write, which no run may ever touch."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def stopped_at_step_2(finished: Path, dest: Path) -> Path:
    """A copy of the run as a kill just before its step-4 checkpoint leaves it."""
    shutil.copytree(finished, dest)
    shutil.rmtree(dest / "checkpoints" / "step-0000004")
    (dest / "checkpoints" / "latest").write_text("step-0000002\n")
    return dest


# ---- item 1: a link planted in a run folder is never followed ---------------------------------------------

@pytest.mark.parametrize("resume", [False, True], ids=["new run", "resume"])
def test_a_lock_planted_as_a_link_is_refused_and_its_target_untouched(resume, finished, corpus, victim, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run") if resume else tmp_path / "run"
    out.mkdir(exist_ok=True)
    (out / ".pretrain.lock").symlink_to(victim)
    with pytest.raises(LinkRefused, match=r"\.pretrain\.lock is a symbolic link .*never written through a link"):
        pretrain(None if resume else corpus, out, resume=resume, **({} if resume else RUN))
    assert victim.read_text() == "precious\n"


def test_a_dangling_lock_link_creates_nothing(corpus, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".pretrain.lock").symlink_to(tmp_path / "created_by_the_run")
    with pytest.raises(LinkRefused):
        pretrain(corpus, out, **RUN)
    assert not (tmp_path / "created_by_the_run").exists()


@pytest.mark.parametrize("name", ["metrics.jsonl", "snapshots.jsonl", "checkpoints/latest",
                                  "checkpoints/step-0000002/trainer_state.pt", "tokenizer.json"])
def test_resume_refuses_a_run_folder_holding_a_link(name, finished, victim, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run")
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    with pytest.raises(LinkRefused, match=f"{name} is a symbolic link"):
        pretrain(None, out, resume=True)
    assert victim.read_text() == "precious\n"


def test_a_dangling_metrics_link_in_a_new_run_folder_is_refused(corpus, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(ValueError, match="metrics.jsonl"):
        pretrain(corpus, out, **RUN)
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_a_copy_made_of_links_never_writes_into_the_original(finished, tmp_path, capsys):
    """`cp -as` copies a run as a tree of links: resuming it used to append its steps to the original's log."""
    original = stopped_at_step_2(finished, tmp_path / "original")
    before = (original / "metrics.jsonl").read_bytes()
    subprocess.run(["cp", "-as", str(original), str(tmp_path / "linked")], check=True)
    assert main(["pretrain", "--out", str(tmp_path / "linked"), "--resume"]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert (original / "metrics.jsonl").read_bytes() == before
    assert sorted(p.name for p in (original / "checkpoints").iterdir()) == ["latest", "step-0000002"]


def test_overwrite_replaces_links_without_following_them(finished, corpus, victim, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    (out / "metrics.jsonl").unlink()
    (out / "metrics.jsonl").symlink_to(victim)
    pretrain(corpus, out, overwrite=True, **RUN)
    assert victim.read_text() == "precious\n"
    assert not (out / "metrics.jsonl").is_symlink() and len((out / "metrics.jsonl").read_text().splitlines()) == 4


def test_a_link_planted_at_a_temporary_name_of_the_run_is_not_written_through(finished, victim, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run")
    for name in ("checkpoints/.latest.tmp", "checkpoints/.step-0000004.tmp", ".metrics.jsonl.tmp"):
        (out / name).symlink_to(victim)
    pretrain(None, out, resume=True)
    assert victim.read_text() == "precious\n"
    assert (out / "checkpoints" / "latest").read_text() == "step-0000004\n"


def test_the_metrics_file_is_opened_without_following_a_link_even_after_the_check(finished, victim, tmp_path):
    """A link made between the check and the write (a race) is refused by the open itself."""
    out = stopped_at_step_2(finished, tmp_path / "run")
    real_check = runfolder.check_files

    def check_then_plant(folder):
        real_check(folder)
        (folder / "metrics.jsonl").unlink()
        (folder / "metrics.jsonl").symlink_to(victim)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runfolder, "check_files", check_then_plant)
        with pytest.raises(LinkRefused):
            pretrain(None, out, resume=True)
    assert victim.read_text() == "precious\n"


def test_a_fifo_where_metrics_should_be_is_refused_not_waited_on(finished, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run")
    (out / "metrics.jsonl").unlink()
    os.mkfifo(out / "metrics.jsonl")
    with pytest.raises(LinkRefused, match="not a regular file"):
        pretrain(None, out, resume=True)      # used to block for ever reading the FIFO


def folder_at(name):
    def spoil(out: Path):
        (out / name).unlink(missing_ok=True)
        (out / name).mkdir()
    return spoil


def fifo_at(name):
    def spoil(out: Path):
        (out / name).unlink(missing_ok=True)
        os.mkfifo(out / name)
    return spoil


@pytest.mark.parametrize("name, spoil, fragment", [
    (".pretrain.lock", folder_at(".pretrain.lock"), "is a folder: the run folder's lock must be a plain file"),
    (".pretrain.lock", fifo_at(".pretrain.lock"), "is not a regular file"),
    ("metrics.jsonl", folder_at("metrics.jsonl"), "is a folder: metrics.jsonl of the run"),
    ("snapshots.jsonl", fifo_at("snapshots.jsonl"), "is not a regular file"),
    ("checkpoints/latest", fifo_at("checkpoints/latest"), "is not a regular file"),
], ids=["lock folder", "lock FIFO", "metrics folder", "snapshots FIFO", "latest FIFO"])
def test_something_else_where_a_run_file_should_be_is_refused_by_name(name, spoil, fragment, finished, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run")
    spoil(out)
    with pytest.raises(LinkRefused, match=fragment):
        pretrain(None, out, resume=True)


def test_a_copy_made_of_hard_links_never_writes_into_the_original(finished, tmp_path):
    """`cp -al` copies a run as hard links: appending to the copy's metrics.jsonl would change the original's."""
    original = tmp_path / "original"
    shutil.copytree(finished, original)
    subprocess.run(["cp", "-al", str(original), str(tmp_path / "linked")], check=True)
    before = (original / "metrics.jsonl").read_bytes()
    with pytest.raises(LinkRefused, match=r"metrics.jsonl has 1 other name\(s\) \(a hard link, as `cp -al` makes\)"):
        pretrain(None, tmp_path / "linked", resume=True, steps=6)
    assert (original / "metrics.jsonl").read_bytes() == before


# ---- item 2: every file of a save and of a checkpoint has one mode ------------------------------------------

def modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_every_file_of_a_save_follows_the_umask(umask, tmp_path):
    model, tok = bundled("bertlab-tiny")
    old = os.umask(umask)
    try:
        bertlab.save(model, tok, tmp_path / "ckpt")
    finally:
        os.umask(old)
    assert set(modes(tmp_path / "ckpt").values()) == {0o666 & ~umask}, modes(tmp_path / "ckpt")


def test_every_file_of_a_run_and_its_checkpoints_has_one_mode(finished):
    found = modes(finished)
    assert "model.safetensors" in found and "checkpoints/step-0000004/model.safetensors" in found
    assert set(found.values()) == {0o666 & ~_umask()}, found


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- item 3: impossible numbers refused before anything loads; a diverging loss stops the run -------------

IMPOSSIBLE = [
    ("clip", -1.0, "--clip -1.0 (clip=-1.0) is out of range: it must be a finite number > 0"),
    ("clip", 0.0, "--clip 0.0"),
    ("clip", float("nan"), "--clip nan"),
    ("weight_decay", -0.01, "--weight-decay -0.01 (weight_decay=-0.01) is out of range: it must be a finite "
                            "number ≥ 0"),
    ("warmup", -0.5, "--warmup -0.5 (warmup=-0.5) is out of range: it must be a finite number in [0, 1)"),
    ("warmup", 1.0, "--warmup 1.0"),
    ("layers", 0, "--layers 0 (layers=0) is out of range: it must be a whole number ≥ 1"),
    ("lr", float("inf"), "--lr inf (lr=inf) is out of range: it must be a finite number > 0"),
    ("lr", float("nan"), "--lr nan"),
    ("lr", "1e-3", "--lr '1e-3' (lr='1e-3'): must be a finite number > 0"),
    ("mask_probability", float("nan"), "mask_probability"),
    ("max_predictions", 0, "--max-predictions 0"),
    ("hidden_dropout", 1.5, "--hidden-dropout 1.5 (hidden_dropout=1.5) is out of range: it must be a finite "
                            "number in [0, 1)"),
    ("attention_dropout", -0.1, "--attention-dropout -0.1"),
    ("steps", 2.5, "--steps 2.5 (steps=2.5): must be a whole number ≥ 1"),
    ("steps", True, "--steps True"),
    ("vocab_size", 3, "--vocab-size 3"),
    ("vocab_size", 10**12, "--vocab-size 1000000000000 (vocab_size=1000000000000) is out of range: it must be a "
                           "whole number in [6, 1048576)"),                  # the tokenizer trainer used to abort
    ("max_len", 10**9, "--max-len 1000000000"),
    ("seed", -1, "--seed -1"),
    ("log_every", 0, "--log-every 0"),
    ("mask_mode", "foo", "--mask-mode 'foo' (mask_mode='foo') must be 'dynamic'"),   # said `mode`, after reading
    ("mask_mode", None, "--mask-mode None"),
    ("device", "gpu", "'gpu' is not a device name torch knows: devices here: cpu"),
    ("device", "cuda:7", "devices here"),
]


@pytest.mark.parametrize("name, value, fragment", IMPOSSIBLE, ids=[f"{n}={v!r}" for n, v, _ in IMPOSSIBLE])
def test_an_impossible_number_is_refused_before_anything_loads(name, value, fragment, corpus, tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("read the corpus or trained a tokenizer before checking the numbers")

    monkeypatch.setattr(trainer, "read_documents", never)
    monkeypatch.setattr(trainer.Tokenizer, "train", never)
    if name == "device" and value.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    with pytest.raises(ValueError) as caught:
        pretrain(corpus, tmp_path / "run", **{**RUN, name: value})
    assert fragment in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_paths_that_are_not_paths_are_refused_at_once(corpus, tmp_path):
    with pytest.raises(TypeError, match="out must be the run folder, a str or pathlib.Path, got None"):
        pretrain(corpus, None, **RUN)
    with pytest.raises(TypeError, match="corpus must be a text file or folder .* got 5"):
        pretrain(5, tmp_path / "run", **RUN)
    with pytest.raises(TypeError, match="got b'corpus.txt'"):
        pretrain(b"corpus.txt", tmp_path / "run", **RUN)


def test_an_impossible_number_given_with_resume_is_refused_before_the_checkpoint_is_read(finished, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setattr(runfolder, "resume_point", lambda out: pytest.fail("read the checkpoint first"))
    with pytest.raises(ValueError, match="--steps -8"):
        pretrain(None, finished, resume=True, steps=-8)


def test_the_command_line_names_the_flag_and_its_range(corpus, tmp_path, capsys):
    assert main(["pretrain", str(corpus), "--out", str(tmp_path / "run"), "--clip", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--clip -1.0 (clip=-1.0) is out of range: it must be a finite number > 0" in err
    assert "reverses the gradient" in err


def diverging_at(step: int):
    """A pretraining_loss whose MLM loss turns NaN from optimizer step `step` on (one forward per step here)."""
    real, calls = trainer.pretraining_loss, []

    def loss(*args, **kwargs):
        mlm, nsp, c_mlm, c_nsp = real(*args, **kwargs)
        calls.append(1)
        return (mlm * float("nan") if len(calls) >= step else mlm), nsp, c_mlm, c_nsp
    return loss


def test_a_loss_that_turns_nan_stops_the_run_and_keeps_the_last_good_checkpoint(corpus, tmp_path, monkeypatch):
    out = tmp_path / "run"
    monkeypatch.setattr(trainer, "pretraining_loss", diverging_at(3))
    with pytest.raises(FloatingPointError, match=r"the loss at step 3 is no longer a finite number \(MLM nan.*"
                                                 r"checkpoints/step-0000002, is left as the one --resume finds"):
        pretrain(corpus, out, **RUN)
    monkeypatch.undo()
    assert (out / "checkpoints" / "latest").read_text() == "step-0000002\n"
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert not (out / "model.safetensors").exists(), "a NaN model was saved"
    weights = torch.load(out / "checkpoints" / "step-0000002" / "trainer_state.pt", weights_only=True)
    assert weights["step"] == 2
    model, _ = pretrain(None, out, resume=True)   # the checkpoint is good: the run goes on from it
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_a_diverging_run_from_the_command_line_is_one_line(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(trainer, "pretraining_loss", diverging_at(1))
    code = main(["pretrain", str(corpus), "--out", str(tmp_path / "run"), "--preset", "tiny", "--max-len", "32",
                 "--batch-size", "8", "--vocab-size", "300", "--device", "cpu", "--no-progress", "--steps", "4"])
    assert code == 1
    err = capsys.readouterr().err
    assert "no checkpoint was written yet" in err and "Traceback" not in err


def test_a_huge_learning_rate_is_caught_by_the_finite_check_not_saved(corpus, tmp_path):
    """No mock: lr 1e12 makes the weights overflow within a few steps, and the run stops instead of saving them."""
    with pytest.raises(FloatingPointError, match="no longer a finite number"):
        pretrain(corpus, tmp_path / "run", **{**RUN, "steps": 30, "lr": 1e12, "warmup": 0, "clip": 1e30})
    assert not (tmp_path / "run" / "model.safetensors").exists()


# ---- full disks, read-only folders --------------------------------------------------------------------------

def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def torch_full(*args, **kwargs):
    raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")


@pytest.mark.parametrize("where, failure", [
    ("bertlab.pretraining.runfolder.torch.save", enospc),
    ("bertlab.pretraining.runfolder.torch.save", torch_full),
    ("bertlab.checkpoint.save_file", enospc),
], ids=["trainer_state ENOSPC", "torch's own message", "model.safetensors ENOSPC"])
def test_a_full_disk_during_a_checkpoint_names_the_file_and_the_intact_checkpoint(where, failure, finished, tmp_path,
                                                                                  monkeypatch, capsys):
    out = stopped_at_step_2(finished, tmp_path / "run")
    monkeypatch.setattr("bertlab.files.shutil.disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9, 1000))
    monkeypatch.setattr(where, failure)
    assert main(["pretrain", "--out", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    file = "model.safetensors" if "save_file" in where else "trainer_state.pt"
    assert f"could not write {out / 'checkpoints' / '.step-0000004.tmp' / file}: the disk is full" in err, err
    assert "checkpoints/step-0000002 is intact and --resume continues from it" in err
    assert "Traceback" not in err
    monkeypatch.undo()
    assert (out / "checkpoints" / "latest").read_text() == "step-0000002\n"
    assert not (out / "checkpoints" / ".step-0000004.tmp").exists(), "the half-written checkpoint was left"
    pretrain(None, out, resume=True)          # and the intact one resumes


def test_a_full_disk_while_logging_names_the_log(corpus, tmp_path, monkeypatch, capsys):
    class Full:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("bertlab.files.open_for_append", lambda path, what: Full())
    monkeypatch.setattr("bertlab.files.shutil.disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9, 0))
    out = tmp_path / "run"
    assert main(["pretrain", str(corpus), "--out", str(out), "--preset", "tiny", "--max-len", "32", "--batch-size",
                 "8", "--vocab-size", "300", "--device", "cpu", "--no-progress", "--steps", "2"]) == 1
    err = capsys.readouterr().err
    assert f"could not write {out / 'metrics.jsonl'}: the disk is full (0.0 MiB free there)" in err, err
    assert "free some space" in err and "Traceback" not in err


def test_a_full_disk_during_save_names_the_file_and_keeps_the_previous_save(tmp_path, monkeypatch):
    model, tok = bundled("bertlab-tiny")
    bertlab.save(model, tok, tmp_path / "ckpt")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()}
    monkeypatch.setattr("bertlab.checkpoint.save_file", enospc)
    with pytest.raises(WriteFailed, match=r"could not write .*ckpt/model.safetensors: the disk is full.*The previous "
                                          r"save in .*ckpt is as it was"):
        bertlab.save(model, tok, tmp_path / "ckpt")
    assert {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_out_that_cannot_be_written_is_one_line(corpus, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert main(["pretrain", str(corpus), "--out", str(locked / "run")]) == 2
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert "cannot write in --out" in err and "choose a folder you may write to" in err


def test_a_read_only_file_system_is_a_permission_error_naming_out(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(PermissionError, match=r"cannot write in --out .* \(Read-only file system\)"):
        with runfolder.locked(tmp_path / "run"):
            pass


# ---- item 6: the leftovers of killed saves and runs ---------------------------------------------------------

def test_the_temporary_folder_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    model, tok = bundled("bertlab-tiny")
    ckpt = tmp_path / "ckpt"
    bertlab.save(model, tok, ckpt)
    dead = _dead_pid()
    from bertlab.checkpoint import _OWNER
    host = _OWNER.rsplit("-", 1)[0]
    stale = [tmp_path / f".ckpt.{host}-{dead}.abc123_x.tmp", tmp_path / f".ckpt.{host}-{dead}.q1w2e3r4.tmp.old",
             ckpt / f".save.{host}-{dead}.zz9.tmp"]
    alive = [tmp_path / f".ckpt.{host}-{os.getppid()}.abc.tmp",      # a save running in a live process
             tmp_path / f".ckpt.otherhost-{dead}.abc.tmp"]          # another machine's: its pids mean nothing here
    for folder in stale + alive:
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x" * 1000)
    bertlab.save(model, tok, ckpt)
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in alive)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_half_written_checkpoints_of_a_killed_run_are_removed_at_resume(finished, tmp_path):
    out = stopped_at_step_2(finished, tmp_path / "run")
    (out / "checkpoints" / ".step-0000003.tmp").mkdir()
    (out / "checkpoints" / ".step-0000003.tmp" / "model.safetensors").write_bytes(b"x" * 1000)
    pretrain(None, out, resume=True)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest", "step-0000002", "step-0000004"]


# ---- the path checks every save(path) / load(path) shares (bertlab.files) ---------------------------------

def _hostile_paths(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "real").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


@pytest.mark.parametrize("path, error, words", [
    (None, ValueError, "path must be a file path .* got None"), ("", ValueError, "got ''"),
    (3, ValueError, "got 3"), ("folder", LinkRefused, "is a folder: a thing must be a plain file"),
    ("link", LinkRefused, "is a symbolic link"), ("dangling", LinkRefused, "is a symbolic link"),
    ("fifo", LinkRefused, "not a regular file"), ("no/such/x", FileNotFoundError, "is not a folder, so x cannot"),
])
def test_path_to_write_refuses_what_must_not_be_written(tmp_path, path, error, words):
    from bertlab.files import path_to_write
    base = _hostile_paths(tmp_path)
    with pytest.raises(error, match=words):
        path_to_write(base / path if isinstance(path, str) and path else path, "a thing")
    assert (base / "real").read_text() == "x"
    assert path_to_write(base / "new", "a thing") == base / "new" and path_to_write(str(base / "real"), "a thing")


@pytest.mark.parametrize("path, error, words", [
    (None, ValueError, "got NoneType"), (3.5, ValueError, "got float"),
    ("folder", LinkRefused, "is a folder"), ("link", LinkRefused, "is a symbolic link"),
    ("dangling", LinkRefused, "is a symbolic link"), ("fifo", LinkRefused, "not a regular file"),
    ("missing", FileNotFoundError, r"no thing at .*missing: pass the path `Thing.save` wrote"),
])
def test_path_to_read_refuses_what_is_not_a_plain_file(tmp_path, path, error, words):
    from bertlab.files import path_to_read
    base = _hostile_paths(tmp_path)
    with pytest.raises(error, match=words):
        path_to_read(base / path if isinstance(path, str) else path, "a thing", "`Thing.save`")
    assert path_to_read(base / "real", "a thing", "`Thing.save`") == base / "real"
