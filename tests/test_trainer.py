"""The pre-training loop: exact resume (after a crash, Ctrl-C, or a failed checkpoint write), DDP that changes
nothing, early errors for bad input, and the pieces (schedule, weight-decay groups, masked-only logits).

Every run here is tiny (preset "tiny", a 300-token vocabulary, 32-token sequences, a few steps on a
synthetic 30-document corpus) and single-threaded: on a busy two-core machine, two OpenMP threads per
matmul made a tiny step ~50x slower than one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

import bertlab
from bertlab import BertConfig, BertForPreTraining
from bertlab.model.heads import IGNORE
from bertlab.pretraining import trainer
from bertlab.pretraining.runfolder import latest_checkpoint
from bertlab.pretraining.schedule import lr_at, param_groups
from bertlab.pretraining.trainer import pretrain, pretraining_loss
from testkit import corpus, free_port, one_thread, write_corpus  # noqa: F401  (corpus, one_thread: fixtures)

TINY = dict(preset="tiny", max_len=32, batch_size=8, vocab_size=300, seed=0, device="cpu", progress=False)
RUN_A = dict(TINY, steps=8, log_every=1, save_every=4)   # dropout on (the preset's 0.1): resume must restore it
KEYS = ("loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "lr", "grad_norm")


def metrics(out: Path) -> dict[int, dict]:
    """Training lines of metrics.jsonl by step; a step logged twice (before a crash and after) keeps the last."""
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {m["step"]: m for m in lines if "eval" not in m}


def assert_same_losses(got: dict, want: dict, steps, atol: float) -> None:
    for step in steps:
        for key in KEYS:
            assert abs(got[step][key] - want[step][key]) < atol, (step, key, got[step][key], want[step][key])


def assert_same_weights(a: Path, b: Path, atol: float = 0.0) -> None:
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.allclose(wa[k], wb[k], rtol=0, atol=atol), (k, (wa[k] - wb[k]).abs().max().item())


@pytest.fixture(scope="module")
def run_a(corpus, tmp_path_factory) -> Path:
    """The reference: 8 uninterrupted steps, a checkpoint at step 4 and at the end."""
    out = tmp_path_factory.mktemp("run_a")
    pretrain(corpus, out, **RUN_A)
    assert sorted(metrics(out)) == list(range(1, 9))
    return out


# ---- exact resume --------------------------------------------------------------------------------

def test_resume_after_a_crash_gives_the_losses_of_an_uninterrupted_run(corpus, run_a, tmp_path):
    # Stopping is a crash after the step-4 checkpoint, not a finished `steps=4` run: a run's learning rate
    # decays to zero at its own `steps`, so a 4-step run differs from the first half of an 8-step one.
    def power_cut(m):
        if m["step"] == 6:
            raise RuntimeError("power cut")

    with pytest.raises(RuntimeError, match="power cut"):
        pretrain(corpus, tmp_path, callbacks=[power_cut], **RUN_A)
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step-0000004"

    pretrain(corpus, tmp_path, resume=True)       # everything else comes from the checkpoint
    b = metrics(tmp_path)
    assert sorted(b) == list(range(1, 9))
    assert_same_losses(b, metrics(run_a), range(1, 9), atol=1e-6)   # 5..8 from the resumed run
    assert_same_weights(tmp_path, run_a)


def test_a_run_saved_with_the_old_warmup_steps_resumes_on_the_same_schedule(corpus, run_a, tmp_path):
    """Checkpoints written before warm-up became a share of the steps store `warmup_steps` (None: 10 %)."""
    copy = tmp_path / "old"
    shutil.copytree(run_a, copy)
    shutil.rmtree(copy / "checkpoints" / "step-0000008")
    (copy / "checkpoints" / "latest").write_text("step-0000004\n")
    state_file = copy / "checkpoints" / "step-0000004" / "trainer_state.pt"
    state = torch.load(state_file, weights_only=True)
    assert state["args"].pop("warmup") == 0.1
    state["args"]["warmup_steps"] = None                       # as the old trainer saved its default
    torch.save(state, state_file)
    pretrain(corpus, copy, resume=True)                          # the copy is elsewhere: say where the corpus is
    assert_same_losses(metrics(copy), metrics(run_a), range(1, 9), atol=1e-6)


def test_ctrl_c_saves_a_checkpoint_and_resume_continues_exactly(corpus, run_a, tmp_path):
    def ctrl_c(m):
        if m["step"] == 3:
            raise KeyboardInterrupt

    run = pretrain(corpus, tmp_path, callbacks=[ctrl_c], **RUN_A)   # returns, does not raise
    model, tok = run                                                  # still the pair (model, tokenizer)
    assert isinstance(model, BertForPreTraining) and tok.vocab_size <= 300
    assert run.interrupted is True and run.step == 3
    root = tmp_path / "checkpoints"
    assert (root / "latest").read_text().strip() == "step-0000003"
    assert (root / "step-0000003" / "trainer_state.pt").exists()
    assert max(metrics(tmp_path)) == 3

    run = pretrain(corpus, tmp_path, resume=True, steps=8)
    assert run.interrupted is False and run.step == 8
    assert_same_losses(metrics(tmp_path), metrics(run_a), range(1, 9), atol=1e-6)
    assert_same_weights(tmp_path, run_a)


def test_ctrl_c_in_the_middle_of_a_step_still_resumes_exactly(corpus, run_a, tmp_path, monkeypatch):
    # A real Ctrl-C lands mid-step (in forward/backward), after the step drew its masks and dropout. The
    # checkpoint must hold the random state of the last *finished* step, or the resumed step 4 draws new ones.
    calls = {"n": 0}
    real = trainer.pretraining_loss

    def interrupt_in_step_4(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "pretraining_loss", interrupt_in_step_4)
    run = pretrain(corpus, tmp_path, **RUN_A)
    assert run.interrupted is True and run.step == 3
    monkeypatch.setattr(trainer, "pretraining_loss", real)

    pretrain(corpus, tmp_path, resume=True)
    assert_same_losses(metrics(tmp_path), metrics(run_a), range(1, 9), atol=1e-6)
    assert_same_weights(tmp_path, run_a)


def test_ctrl_c_during_the_optimizer_step_lets_the_step_finish(corpus, run_a, tmp_path, monkeypatch):
    # A SIGINT that arrives inside optimizer.step() is held until the step is done, so the weights are never
    # half-updated: the checkpoint is at step 3 with step 3's weights, and resuming matches run A exactly.
    import signal

    real_step = torch.optim.AdamW.step
    calls = {"n": 0}

    def step_with_sigint(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)        # delivered mid-step, in the main thread
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step_with_sigint)
    run = pretrain(corpus, tmp_path, **RUN_A)
    assert run.interrupted is True and run.step == 3
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step-0000003"
    monkeypatch.setattr(torch.optim.AdamW, "step", real_step)

    pretrain(corpus, tmp_path, resume=True)
    assert_same_losses(metrics(tmp_path), metrics(run_a), range(1, 9), atol=1e-6)
    assert_same_weights(tmp_path, run_a)


# ---- checkpoints ---------------------------------------------------------------------------------

@pytest.mark.parametrize("victim", ["weights", "trainer_state"])
def test_a_failed_checkpoint_write_leaves_latest_on_the_previous_complete_one(corpus, run_a, tmp_path, monkeypatch,
                                                                               victim):
    calls = {"n": 0}
    if victim == "weights":
        real_save = trainer.save

        def save(model, tok, path, *a, **k):
            calls["n"] += 1
            if calls["n"] == 2:                       # the step-8 checkpoint
                raise OSError("disk full")
            return real_save(model, tok, path, *a, **k)

        monkeypatch.setattr(trainer, "save", save)
    else:
        real_torch_save = torch.save

        def torch_save(obj, f, *a, **k):
            if Path(f).name == "trainer_state.pt":
                calls["n"] += 1
                if calls["n"] == 2:
                    Path(f).write_bytes(b"half a pickle")   # a torn write
                    raise OSError("disk full")
            return real_torch_save(obj, f, *a, **k)

        monkeypatch.setattr(torch, "save", torch_save)

    with pytest.raises(OSError, match="disk full"):
        pretrain(corpus, tmp_path, **RUN_A)
    monkeypatch.undo()

    root = tmp_path / "checkpoints"
    assert (root / "latest").read_text().strip() == "step-0000004"
    assert not (root / "step-0000008").exists()       # the torn write stayed under its temporary name
    first = latest_checkpoint(tmp_path)
    assert first == root / "step-0000004"
    model, _ = bertlab.load(first, device="cpu")
    assert isinstance(model, BertForPreTraining)
    assert torch.load(first / "trainer_state.pt", weights_only=True)["step"] == 4

    pretrain(corpus, tmp_path, resume=True)            # and it is a checkpoint one can really continue from
    assert_same_losses(metrics(tmp_path), metrics(run_a), range(1, 9), atol=1e-6)
    assert_same_weights(tmp_path, run_a)
    assert not list(root.glob(".*.tmp"))               # the next write of the same step cleaned up


def test_keep_checkpoints_keeps_only_the_newest(corpus, tmp_path):
    pretrain(corpus, tmp_path, **dict(TINY, batch_size=4, steps=5, save_every=1, keep_checkpoints=2))
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step-0000004", "step-0000005"]
    assert latest_checkpoint(tmp_path) == root / "step-0000005"


# ---- DDP -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_ddp_with_two_cpu_processes_matches_one_process(corpus, tmp_path):
    if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
        pytest.skip("this torch has no gloo backend, so torchrun cannot run two CPU processes")
    # dropout differs per process by design (each process has its own rows), so compare without it
    args = dict(TINY, steps=4, log_every=1, hidden_dropout=0.0, attention_dropout=0.0)
    flags = [str(corpus), "--grad-accum", "2"]   # 2 processes x 2 micro-batches x 2 rows = the same 8 sequences
    for k, v in args.items():
        flag = "--" + k.replace("_", "-")
        flags += [flag] if v is True else ["--no-" + flag[2:]] if v is False else [flag, str(v)]
    ddp, single = tmp_path / "ddp", tmp_path / "single"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
           "--master-port", str(free_port()), "-m", "bertlab", "pretrain", *flags, "--out", str(ddp)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(Path(bertlab.__file__).parents[1]))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]

    pretrain(corpus, single, **args)
    got, want = metrics(ddp), metrics(single)
    assert sorted(got) == sorted(want) == [1, 2, 3, 4]
    assert_same_losses(got, want, range(1, 5), atol=1e-5)
    assert_same_weights(ddp, single, atol=1e-5)
    assert sorted(p.name for p in (ddp / "checkpoints" / "step-0000004").glob("rng-rank*.pt")) == \
        ["rng-rank0.pt", "rng-rank1.pt"]


# ---- bad input fails before the first step -------------------------------------------------------

def _one_sentence_docs(path: Path) -> Path:
    path.write_text("\n\n".join(f"Document {i} has one sentence." for i in range(10)) + "\n")
    return path


BAD = {
    "empty corpus": (lambda p: (p.write_text(""), p)[1], {}, ValueError, "no text"),
    "missing path": (lambda p: p.parent / "nowhere.txt", {}, FileNotFoundError, "does not exist"),
    "one-sentence documents": (_one_sentence_docs, {}, ValueError, "two or more sentences"),
    "max_len 4": (None, {"max_len": 4}, ValueError, r"--max-len 4 \(max_len=4\) is out of range"),
    "unknown preset": (None, {"preset": "huge"}, ValueError, "unknown preset 'huge'"),
    "batch not divisible": (None, {"batch_size": 6, "grad_accum": 4}, ValueError, "multiple of grad_accum 4"),
    "nothing to resume": (None, {"resume": True}, FileNotFoundError, "nothing to resume"),
    "unknown option": (None, {"stpes": 10}, ValueError, "unknown pretrain option.*stpes"),
    "heads not dividing hidden": (None, {"hidden": 96, "heads": 5}, ValueError, "hidden_size 96 is not divisible"),
    "zero layers": (None, {"layers": 0}, ValueError, r"--layers 0 \(layers=0\) is out of range"),
    "the old warm-up spelling": (None, {"warmup_steps": 5}, ValueError, "warmup_steps is now warmup"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_fails_before_training_with_a_message(case, corpus, tmp_path):
    make, options, error, message = BAD[case]
    path = make(tmp_path / "corpus.txt") if make else corpus
    out = tmp_path / "out"
    with pytest.raises(error, match=message):
        pretrain(path, out, **{**TINY, "steps": 2, **options})
    assert not (out / "metrics.jsonl").exists() and not (out / "checkpoints").exists()


def test_resume_refuses_options_it_would_ignore(corpus, run_a):
    with pytest.raises(ValueError, match="unknown pretrain option.*stpes"):
        pretrain(corpus, run_a, resume=True, stpes=10)
    with pytest.raises(ValueError, match="lr"):
        pretrain(corpus, run_a, resume=True, lr=1.0)   # silently training on with the old lr would mislead
    with pytest.raises(ValueError, match="layers=3"):
        pretrain(corpus, run_a, resume=True, layers=3)  # the saved weights have the saved shape
    assert sorted(metrics(run_a)) == list(range(1, 9))


def test_size_flags_override_the_preset_and_a_new_width_brings_64_dim_heads_and_a_4x_ffn(corpus, tmp_path):
    model, _ = pretrain(corpus, tmp_path / "a", **{**TINY, "steps": 1, "layers": 3, "hidden": 192})
    c = model.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size) == (3, 192, 3, 768)
    assert len(model.bert.encoder.layer) == 3
    model, _ = pretrain(corpus, tmp_path / "b", **{**TINY, "steps": 1, "heads": 4, "intermediate": 300})
    c = model.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size) == (2, 128, 4, 300)
    assert bertlab.load(tmp_path / "b", device="cpu")[0].config.num_attention_heads == 4


# ---- the pieces ----------------------------------------------------------------------------------

def test_lr_warms_up_linearly_to_the_peak_then_decays_linearly_to_zero():
    steps, warmup, peak = 100, 10, 1e-3
    lrs = [lr_at(s, steps, warmup, peak) for s in range(steps + 1)]
    assert lrs[0] == pytest.approx(peak / warmup, abs=1e-12)
    assert lrs[warmup] == pytest.approx(peak, abs=1e-12) and max(lrs) == pytest.approx(peak, abs=1e-12)
    assert lrs[steps] == 0.0
    up = [b - a for a, b in zip(lrs[:warmup], lrs[1:warmup])]
    down = [b - a for a, b in zip(lrs[warmup:], lrs[warmup + 1:])]
    assert all(abs(d - peak / warmup) < 1e-12 for d in up)                       # a straight line up
    assert all(abs(d + peak / (steps - warmup)) < 1e-12 for d in down)           # and a straight line down
    assert lr_at(steps + 5, steps, warmup, peak) == 0.0


def test_param_groups_decay_weight_matrices_and_embeddings_only():
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32), device="cpu")
    decay, no_decay = param_groups(model, 0.01)
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = [names[id(p)] for p in decay["params"]]
    kept = [names[id(p)] for p in no_decay["params"]]
    assert decayed and all(p.dim() == 2 for p in decay["params"])
    assert all(n.endswith("bias") or "LayerNorm" in n for n in kept)
    assert {n for n in names.values() if n.endswith("bias") or "LayerNorm" in n} == set(kept)
    assert len(decayed) + len(kept) == len(set(decayed + kept)) == len(names)   # each parameter exactly once
    tied = model.cls.predictions.decoder.weight
    assert tied is model.bert.embeddings.word_embeddings.weight
    assert sum(p is tied for p in decay["params"] + no_decay["params"]) == 1


def test_mlm_logits_are_computed_only_at_masked_positions(odd_config):
    torch.manual_seed(0)
    model = BertForPreTraining(odd_config, device="cpu").eval()
    ids = torch.randint(5, odd_config.vocab_size, (3, 11))
    labels = torch.full_like(ids, IGNORE)
    chosen = torch.rand(ids.shape) < 0.3
    chosen[0, 0] = True
    labels[chosen] = ids[chosen]
    out = model(ids, labels=labels)
    n = int(chosen.sum())
    assert out.prediction_logits.shape == (n, odd_config.vocab_size)
    full = model(ids).prediction_logits                      # (B, T, V) without labels
    torch.testing.assert_close(out.prediction_logits, full[chosen], rtol=0, atol=1e-5)
    nsp = torch.tensor([0, 1, 0])
    mlm, nsp_loss, correct, _ = pretraining_loss(out, labels, nsp, n_masked=n, n_pairs=3)
    torch.testing.assert_close(mlm, F.cross_entropy(full[chosen], ids[chosen]), rtol=0, atol=1e-5)
    assert int(correct) == int((full[chosen].argmax(-1) == ids[chosen]).sum())


def test_grad_accumulation_gives_the_gradient_of_the_whole_batch(corpus, tmp_path):
    # step 1's loss shows the loss is normalised by the whole batch; step 2's shows the gradient was
    args = dict(TINY, steps=2, log_every=1, hidden_dropout=0.0, attention_dropout=0.0)
    pretrain(corpus, tmp_path / "one", grad_accum=1, **args)
    pretrain(corpus, tmp_path / "two", grad_accum=2, **args)
    assert_same_losses(metrics(tmp_path / "two"), metrics(tmp_path / "one"), [1, 2], atol=1e-5)
    assert_same_weights(tmp_path / "two", tmp_path / "one", atol=1e-5)


@pytest.fixture(scope="module")
def run_40(corpus, tmp_path_factory):
    heldout = write_corpus(tmp_path_factory.mktemp("heldout") / "heldout.txt", n_docs=8, seed=1)
    out = tmp_path_factory.mktemp("run_40")
    model, tok = pretrain(corpus, out, **dict(TINY, steps=40, lr=1e-3, log_every=1, save_every=1000,
                                              eval_corpus=[str(heldout)]))
    return out, model, tok


@pytest.mark.slow
def test_forty_steps_lower_the_loss(run_40):
    out, _, _ = run_40
    losses = [m["loss"] for _, m in sorted(metrics(out).items())]
    assert len(losses) == 40
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < first - 0.5, (first, last)


def test_eval_corpus_writes_held_out_scores(run_40):
    out, _, _ = run_40
    evals = [json.loads(line)["eval"] for line in (out / "metrics.jsonl").read_text().splitlines() if "eval" in line]
    assert len(evals) == 1
    e = evals[0]
    for key in ("mlm_top1", "unigram_top1", "nsp_accuracy"):
        assert 0.0 <= e[key] <= 1.0, (key, e[key])
    assert e["masked_tokens"] > 0 and e["pairs"] > 0


def test_the_output_folder_loads_as_the_trained_model(run_40):
    out, model, tok = run_40
    assert not model.training                                # returned ready to inspect
    loaded, loaded_tok = bertlab.load(out, device="cpu")
    assert isinstance(loaded, BertForPreTraining)
    assert loaded_tok.get_vocab() == tok.get_vocab()
    mine, theirs = model.state_dict(), loaded.state_dict()
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
