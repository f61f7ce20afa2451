"""Pre-training: masked LM + next-sentence prediction, as the paper does it (section 3.1, appendix A.2).

    model, tok = pretrain("my_corpus/", "runs/tiny", preset="tiny", steps=2000)

The loop, per optimizer step (`_Run._step`):
    global batch of NSP pairs → dynamic 15 % masking (80/10/10) → forward (MLM logits only at the chosen
    positions) → MLM loss + NSP loss → backward (accumulated over micro-batches) → clip to 1.0 → AdamW →
    learning rate: linear warm-up, then linear decay to zero (schedule.py).

Three design choices make stopping, scaling and mistakes safe:
- **Exact resume.** A checkpoint holds the model, the optimizer, the step, every random generator and the
  data stream's position, so `resume=True` continues with exactly the losses an uninterrupted run would have.
- **A run folder belongs to one run.** A new run refuses a folder that holds one (`resume=True` continues
  it, `overwrite=True` replaces it), a lock stops a second process writing there, checkpoints are published
  atomically, and stored paths are relative to the folder. All of that lives in runfolder.py.
- **DDP that changes nothing.** Under `torchrun`, every process reads the same stream and masks the same
  global batch, then keeps its own rows. Losses are sums divided by the *global* number of masked tokens
  and pairs, so the averaged gradient is exactly the single-process gradient of the same global batch.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import signal
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .. import files
from ..checkpoint import load, load_weights, resolve, save
from ..config import BertConfig
from ..model.heads import IGNORE, BertForPreTraining
from ..optim import adamw, clip, lr_at, set_lr, warmup_count
from ..tokenizer import Tokenizer
from ..utils import default_device
from . import checks, runfolder, snapshots
from .args import RENAMED, PretrainArgs
from .data import PretrainingData, collate, iter_texts, read_documents
from .masking import mask_tokens
from .runfolder import latest_checkpoint  # noqa: F401  (scripts import it from here)

log = logging.getLogger(__name__)

Callback = Callable[[dict], None]


class PretrainResult(tuple):
    """What `pretrain` returns: the pair `(model, tokenizer)`, so `model, tok = pretrain(...)` reads as ever,
    carrying how the run ended as attributes.

    `interrupted`: Ctrl-C stopped it before `steps` (the command line then exits with 130); `step`: the last
    finished step, the one the final checkpoint holds; `out`: the run folder. A tuple of two rather than a
    NamedTuple of five, because unpacking must keep giving exactly the model and the tokenizer.
    """
    model = property(lambda self: self[0])
    tokenizer = property(lambda self: self[1])

    def __new__(cls, model: BertForPreTraining, tokenizer: Tokenizer, *, interrupted: bool, step: int, out: Path):
        result = super().__new__(cls, (model, tokenizer))
        result.interrupted, result.step, result.out = interrupted, step, out
        return result


def pretraining_loss(out, labels: torch.Tensor, nsp_labels: torch.Tensor, n_masked: int, n_pairs: int):
    """Summed MLM and NSP cross-entropies divided by the *global* counts, and the correct-prediction counts.

    `out.prediction_logits` holds logits only at the masked positions (N, V), in the order of
    `labels[labels != -100]`: the head never projects the other 85 % onto the vocabulary. The head has
    already computed the MLM loss, their mean over these N; it is rescaled to the global count here, not
    computed a second time. All four results stay tensors: reading one would wait for the device.
    """
    target = labels[labels != IGNORE]                                    # (N,)
    mlm_logits = out.prediction_logits                                   # (N, V)
    mlm = out.mlm_loss * (target.numel() / max(1, n_masked))            # mean over N → sum / global count
    nsp = F.cross_entropy(out.seq_relationship_logits.float(), nsp_labels, reduction="sum") / max(1, n_pairs)
    correct_mlm = (mlm_logits.argmax(-1) == target).sum()
    correct_nsp = (out.seq_relationship_logits.argmax(-1) == nsp_labels).sum()
    return mlm, nsp, correct_mlm, correct_nsp


# ---- starting a run ------------------------------------------------------------------------------

def pretrain(corpus: str | os.PathLike | Sequence[str | os.PathLike] | None, out: str | os.PathLike, *,
             resume: bool = False, overwrite: bool = False, callbacks: Sequence[Callback] = (),
             **kwargs) -> PretrainResult:
    """Pre-train a `BertForPreTraining` on plain text; returns `(model, tokenizer)`, also saved in `out`.

    `corpus`: text files or folders (a blank line separates documents). Keyword arguments are the fields of
    `PretrainArgs`. `resume=True` continues the latest checkpoint in `out` exactly (pass a larger
    `steps` to train further); the corpus is the run's own, so it may be `None`. `callbacks` are called on
    the main process with each logged metrics dict. Ctrl-C saves a checkpoint at the last finished step and
    returns the model trained so far: the returned pair's `.interrupted` says so (see `PretrainResult`).

    A run never destroys another: an `out` that holds a run is an error unless `resume=True` (continue it)
    or `overwrite=True` (replace it), and a lock file in `out` stops a second run writing there.
    """
    checks.check_paths(corpus, out)   # None, a number or bytes: say so here, not deep in pathlib
    paths = ([] if corpus is None else [str(corpus)] if isinstance(corpus, (str, os.PathLike))
             else [str(p) for p in corpus])
    out = Path(out)
    state = None
    renamed = [f"{old} is now {RENAMED[old]}" for old in kwargs if old in RENAMED]
    if renamed:
        raise ValueError("; ".join(renamed))
    unknown = set(kwargs) - set(PretrainArgs.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown pretrain option(s): {', '.join(sorted(unknown))}")
    checks.check_given(kwargs)   # an impossible number (lr inf, clip -1) or a missing device, before anything loads
    if resume and overwrite:
        raise ValueError(f"--resume (resume=True) continues the run in {out} and --overwrite (overwrite=True) "
                         "replaces it: pass one or the other")
    runfolder.check_out(out)
    main = int(os.environ.get("RANK", "0")) == 0     # under torchrun, process 0 holds the lock for all
    with runfolder.locked(out) if main else contextlib.nullcontext():
        if main:
            runfolder.remove_stale(out)    # what killed runs left half-written (links planted there too)
        if main and not overwrite:         # overwrite deletes links with the rest of the old run
            runfolder.check_files(out)
        if resume:
            state = runfolder.resume_point(out)
            args = PretrainArgs(**runfolder.resumed_args(state, paths, out, kwargs))
        else:
            found = runfolder.run_files(out)
            if found and not overwrite:
                raise FileExistsError(f"--out {out} already holds a run ({', '.join(found)}): continue it with "
                                      "--resume (resume=True), replace it with --overwrite (overwrite=True), or "
                                      "choose another --out")
            args = PretrainArgs(corpus=paths, out=str(out), **kwargs)
        _check_args(args)
        # the tokenizer is trained and the corpus checked before an old run is deleted: bad input deletes nothing
        run = _Run(args, state, callbacks)
        if overwrite and main and runfolder.run_files(out):
            runfolder.remove_run(out)
        return run.train()


def _check_args(a: PretrainArgs) -> None:
    """What one field's range cannot say (each field's own range is checked by `checks.check_given`)."""
    if a.batch_size % a.grad_accum:
        raise ValueError(f"batch_size {a.batch_size} must be a positive multiple of grad_accum {a.grad_accum}")
    if a.init and any(getattr(a, n) is not None for n in ("layers", "hidden", "heads", "intermediate",
                                                           "max_position_embeddings")):
        raise ValueError("--init takes its sizes from the checkpoint: drop --layers/--hidden/--heads/"
                         "--intermediate/--max-position-embeddings")
    BertConfig.preset(a.preset, **_size_overrides(a))  # raises for an unknown preset or a size that cannot work


def _size_overrides(a: PretrainArgs) -> dict:
    """--layers/--hidden/--heads/--intermediate as BertConfig fields.

    A new hidden width brings what every preset has at that width: heads of 64 dimensions and a 4× FFN.
    """
    sizes = dict(num_hidden_layers=a.layers, hidden_size=a.hidden,
                 num_attention_heads=a.heads or (a.hidden and max(1, a.hidden // 64)),
                 intermediate_size=a.intermediate or (a.hidden and 4 * a.hidden))
    return {k: v for k, v in sizes.items() if v is not None}


# ---- the run -------------------------------------------------------------------------------------

class _Dist:
    """torchrun's environment, or a single process."""

    def __init__(self, device_arg):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if self.world > 1:
            cuda = torch.cuda.is_available() and device_arg != "cpu"
            self.device = torch.device(f"cuda:{local}") if cuda else torch.device("cpu")
            if cuda:
                torch.cuda.set_device(self.device)
            if not torch.distributed.is_initialized():
                torch.distributed.init_process_group("nccl" if cuda else "gloo")
        else:
            self.device = default_device(device_arg)
        self.main = self.rank == 0

    def barrier(self):
        if self.world > 1:
            torch.distributed.barrier()


@dataclass
class StepMetrics:
    """One optimizer step's numbers, over the whole global batch (summed over micro-batches and processes).

    What the device computed stays on the device as tensors (`sums`, `grad_norm`): turning them into Python
    numbers makes the host wait for the device, so that happens once per logged step (`_Window.summary`).
    The counts are known on the host, from the global batch every process holds.
    """
    sums: torch.Tensor | None = None        # (4,) on the device: the _SUMMED values
    masked: int = 0                         # masked tokens in the global batch
    pairs: int = 0                          # sentence pairs: the global batch size
    tokens: int = 0                         # non-padding tokens, for tokens per second
    lr: float = 0.0
    grad_norm: torch.Tensor | None = None   # before clipping
    seconds: float = 0.0


# StepMetrics.sums: MLM cross-entropy averaged over the batch's masked tokens, NSP cross-entropy averaged over
# its pairs, masked tokens whose top guess is the original, pairs whose IsNext / NotNext guess is right
_SUMMED = ("mlm_loss", "nsp_loss", "mlm_correct", "nsp_correct")


class _Position(NamedTuple):
    """Where a checkpoint resumes from: the data stream's position and every random generator's state after
    the last *finished* step (a Ctrl-C mid-step has already drawn that step's masks and dropout, which the
    resumed step must draw again)."""
    data: dict
    mask_generator: torch.Tensor   # the masking generator, the same on every process
    rng: dict                      # this process's own generators (dropout): runfolder.rng_state()


class _Run:
    """One run of `PretrainArgs`: its model, optimizer, data stream and generators, new or from a checkpoint."""

    def __init__(self, args: PretrainArgs, state: dict | None, callbacks: Sequence[Callback]):
        self.args, self.callbacks = args, list(callbacks)
        self.dist = _Dist(args.device)
        a, dist = args, self.dist
        if a.batch_size % (a.grad_accum * dist.world):
            raise ValueError(f"batch_size {a.batch_size} must be divisible by grad_accum × processes "
                             f"= {a.grad_accum * dist.world}")
        self.out = Path(a.out)
        self.warmup = warmup_count(a.steps, a.warmup)

        random.seed(a.seed)
        torch.manual_seed(a.seed + dist.rank)  # dropout differs per process, as it would per batch row
        if state is None:
            self.tokenizer = self._tokenizer()
            self.model = self._model()
            self.step = 0
        else:  # pretrain() has read the checkpoint to resume from (the newest intact one in `out`) into `state`
            self.tokenizer = state["tokenizer"]
            self.model = self._model()
            load_weights(self.model, state["weights"])
            self.step = state["step"]
        # validate the corpus before any training starts (empty, missing, no multi-sentence document …)
        self.data = PretrainingData(a.corpus, self.tokenizer, max_len=a.max_len, seed=a.seed, balance=a.nsp_balance)
        self.data.check()
        if a.snapshot_every:
            snapshots.check_text(a.snapshot_text, self.tokenizer, a.max_len)
        self.mask_gen = torch.Generator().manual_seed(a.seed)
        self.optimizer = adamw(self.model, a.lr, a.weight_decay, eps=1e-6, fused=a.fused_adamw)
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])
            self.data.load_state_dict(state["data"])
            self.mask_gen.set_state(state["mask_generator"])
            runfolder.restore_rng(state["checkpoint"], dist.rank)
        self.forward = self.model
        if dist.world > 1:
            self.forward = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[dist.device.index] if dist.device.type == "cuda" else None)
        if a.compile:
            self.forward = torch.compile(self.forward)
        self.bf16 = a.bf16 if a.bf16 is not None else dist.device.type == "cuda"

    # -- set-up --
    def _tokenizer(self) -> Tokenizer:
        a = self.args
        if a.tokenizer:
            return Tokenizer.from_file(a.tokenizer)
        if a.init:
            return Tokenizer.from_file(resolve(a.init))
        if next(read_documents(a.corpus), None) is None:
            raise ValueError(f"corpus {', '.join(a.corpus)} has no text: pre-training needs documents of "
                             "several sentences, separated by blank lines")
        log.info("training a %d-token WordPiece vocabulary on %s", a.vocab_size, ", ".join(a.corpus))
        return Tokenizer.train(iter_texts(a.corpus), vocab_size=a.vocab_size, lowercase=a.lowercase,
                               strip_accents=a.strip_accents)

    def _model(self) -> BertForPreTraining:
        a = self.args
        if a.init:
            # Continued pre-training (warm start): the checkpoint's own config, its encoder and pooler
            # weights; an MLM or NSP head it lacks is freshly initialised (the MLM decoder stays tied).
            model, _ = load(a.init, device=self.dist.device, model_class=BertForPreTraining)
            if model.config.max_position_embeddings < a.max_len:
                raise ValueError(f"{a.init} has {model.config.max_position_embeddings} positions, fewer than "
                                 f"max_len {a.max_len}: lower --max-len")
            if model.config.vocab_size < self.tokenizer.vocab_size:
                raise ValueError(f"the tokenizer has {self.tokenizer.vocab_size} tokens but {a.init} only "
                                 f"{model.config.vocab_size} embeddings: use the checkpoint's own tokenizer")
            checks.check_init_tokenizer(a, model.config.vocab_size, self.tokenizer)   # not its own: say so
            return model.train()
        overrides = dict(vocab_size=self.tokenizer.vocab_size, pad_token_id=self.tokenizer.pad_id,
                         max_position_embeddings=a.max_position_embeddings or a.max_len)
        overrides.update(_size_overrides(a))
        if a.hidden_dropout is not None:
            overrides["hidden_dropout_prob"] = a.hidden_dropout
        if a.attention_dropout is not None:
            overrides["attention_probs_dropout_prob"] = a.attention_dropout
        if overrides["max_position_embeddings"] < a.max_len:
            raise ValueError(f"max_position_embeddings {overrides['max_position_embeddings']} is smaller than "
                             f"max_len {a.max_len}")
        config = BertConfig.preset(a.preset, **overrides)
        return BertForPreTraining(config, device=self.dist.device).train()

    # -- the loop --
    def train(self) -> PretrainResult:
        """Step until `steps`, logging every `log_every` and checkpointing every `save_every`; a Ctrl-C ends
        the loop early, and either way the run ends with a checkpoint and the model saved in `out`."""
        a, dist = self.args, self.dist
        if dist.main:
            self.out.mkdir(parents=True, exist_ok=True)
            runfolder.trim_metrics(self.out, self.step)
            runfolder.trim_metrics(self.out, self.step, snapshots.FILE)
            if a.snapshot_every and self.step == 0:
                self._snapshot()
        stream = self.data.batches(a.batch_size)
        bar = tqdm(total=a.steps, initial=self.step, disable=not (a.progress and dist.main), desc="pretrain",
                   unit="step", dynamic_ncols=True)
        window = _Window()
        interrupted = False
        self.position = self._position()   # what a checkpoint written now resumes from; each step renews it
        try:
            while self.step < a.steps:
                m, held_ctrl_c = self._step(next(stream))
                window.add(m)
                if dist.main:
                    bar.update(1)
                if self.step % a.log_every == 0 or self.step == a.steps:
                    logged = window.summary(self.step)   # the one wait for the device in these log_every steps
                    self._log(logged)
                    if dist.main:
                        bar.set_postfix(loss=f"{logged['loss']:.3f}", mlm_acc=f"{logged['mlm_acc']:.3f}",
                                        nsp_acc=f"{logged['nsp_acc']:.3f}", tok_s=f"{logged['tok_s']:,.0f}",
                                        refresh=False)
                    window = _Window()
                if a.snapshot_every and (self.step % a.snapshot_every == 0 or self.step == a.steps):
                    self._snapshot()
                if self.step % a.save_every == 0 and self.step < a.steps:
                    self._checkpoint()
                if held_ctrl_c:  # a Ctrl-C held during the optimizer update, now that the step is recorded
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            interrupted = True
            log.warning("interrupted at step %d: saving a checkpoint; continue with resume=True", self.step)
        finally:
            bar.close()
        self._checkpoint()
        if dist.main:
            save(self.model, self.tokenizer, self.out)
            if a.eval_corpus and not interrupted:
                from .evaluate import evaluate
                result = evaluate(self.model, self.tokenizer, a.eval_corpus, max_len=a.max_len, seed=a.seed)
                self._log({"step": self.step, "eval": asdict(result)})
        dist.barrier()
        self.model.eval()
        return PretrainResult(self.model, self.tokenizer, interrupted=interrupted, step=self.step, out=self.out)

    def _step(self, examples) -> tuple[StepMetrics, bool]:
        """One optimizer step on a global batch of NSP pairs; returns its metrics, and whether a Ctrl-C came
        during the optimizer update (held until the update and `self.position` are done, for the loop to raise).
        """
        a, dist = self.args, self.dist
        t0 = time.perf_counter()
        # mask the whole global batch at once, then split it: grad_accum and DDP change no mask
        batch = self._mask(examples)                                     # each (batch_size, L)
        n_masked = int((batch["labels"] != IGNORE).sum())              # host tensors: no device wait
        n_tokens = int(batch["attention_mask"].sum())
        micro_batches = self._split(batch)
        lr = set_lr(self.optimizer, lr_at(self.step, a.steps, self.warmup, a.lr))
        self.optimizer.zero_grad(set_to_none=True)
        # summed in float64 as Python floats would be (MPS has no float64: float32 there)
        sums = torch.zeros(len(_SUMMED), device=dist.device,
                           dtype=torch.float32 if dist.device.type == "mps" else torch.float64)
        rows = slice(dist.rank, None, dist.world)                      # this process's rows of each micro-batch
        for i, mb in enumerate(micro_batches):
            mine = {k: v[rows].to(dist.device) for k, v in mb.items()}  # (micro / world, T)
            sync = i == len(micro_batches) - 1 or dist.world == 1     # DDP averages gradients on the last only
            with self.forward.no_sync() if not sync else contextlib.nullcontext():
                with torch.autocast(dist.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                    out = self.forward(mine["input_ids"], mine["token_type_ids"], mine["attention_mask"],
                                       labels=mine["labels"])
                mlm, nsp, c_mlm, c_nsp = pretraining_loss(out, mine["labels"], mine["next_sentence_label"],
                                                          n_masked, a.batch_size)
                ((mlm + nsp) * dist.world).backward()   # DDP divides by world: undo it, the losses are global
            sums += torch.stack([mlm.detach().float(), nsp.detach().float(), c_mlm.float(), c_nsp.float()]).to(sums.dtype)
        grad_norm = clip(self.model, a.clip)
        # one host sync per optimizer step, not per micro-batch: a NaN or inf loss or gradient stops the run
        # before the update, so the weights (and every checkpoint written from them) stay good
        finite = torch.isfinite(sums[:2]).all()
        if grad_norm is not None:
            finite = finite & torch.isfinite(grad_norm)
        if not bool(finite):
            checks.stop_if_not_finite(self.step + 1, float(sums[0]), float(sums[1]),
                                      float(grad_norm) if grad_norm is not None else 0.0, a, self.out)
        with _deferred_interrupt() as held:  # weights, step and resume position change together or not at all
            self.optimizer.step()
            self.step += 1
            self.position = self._position()
        if dist.world > 1:
            torch.distributed.all_reduce(sums)     # on the device: no host wait
        return StepMetrics(sums, masked=n_masked, pairs=a.batch_size, tokens=n_tokens, lr=lr, grad_norm=grad_norm,
                           seconds=time.perf_counter() - t0), bool(held)

    def _mask(self, examples) -> dict[str, torch.Tensor]:
        batch = collate(examples, self.tokenizer.pad_id)
        inputs, labels = mask_tokens(batch["input_ids"], self.tokenizer, self.args.mask_probability,
                                     generator=self.mask_gen, mode=self.args.mask_mode,
                                     max_predictions=self.args.max_predictions, whole_word=self.args.whole_word)
        return {**batch, "input_ids": inputs, "labels": labels}

    def _split(self, batch: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """The global batch as `grad_accum` micro-batches, each cut to its longest row."""
        micro = self.args.batch_size // self.args.grad_accum
        micro_batches = []
        for i in range(0, self.args.batch_size, micro):
            mb = {k: v[i:i + micro] for k, v in batch.items()}
            T = int(mb["attention_mask"].sum(1).max())   # drop columns that are padding in every row
            micro_batches.append({k: v[:, :T] if v.dim() == 2 else v for k, v in mb.items()})  # (micro, T)
        return micro_batches

    def _position(self) -> _Position:
        return _Position(self.data.state_dict(), self.mask_gen.get_state(), runfolder.rng_state())

    # -- records --
    def _log(self, metrics: dict) -> None:
        if not self.dist.main:
            return
        files.append_line(self.out / "metrics.jsonl", json.dumps(metrics), "the run's metrics.jsonl")
        for cb in self.callbacks:
            cb(metrics)

    def _snapshot(self) -> None:
        if self.dist.main:
            snapshots.append(self.out, snapshots.take(self.model, self.tokenizer, self.args.snapshot_text, self.step))

    @runfolder.reports_write_errors   # a full disk: which file, and which checkpoint is intact
    def _checkpoint(self) -> None:
        """checkpoints/step-N/ for the last finished step: its model, optimizer and `self.position`.

        Written under a temporary name, then published (renamed, `latest` swapped, old ones pruned) by
        runfolder.publish, so a crash mid-write leaves `latest` on the previous complete checkpoint.
        """
        dist, at = self.dist, self.position
        tmp = runfolder.staging(self.out, self.step)
        if dist.main:
            runfolder.fresh_staging(self.out, self.step)   # whatever was at its name (a planted link) removed
            save(self.model, self.tokenizer, tmp)
            args, data = runfolder.stored(asdict(self.args), at.data, self.out)
            runfolder.save_tensors({"args": args, "paths": runfolder.RUN_RELATIVE, "step": self.step,
                                    "optimizer": self.optimizer.state_dict(), "data": data,
                                    "mask_generator": at.mask_generator}, tmp / "trainer_state.pt")
        dist.barrier()
        runfolder.save_tensors(at.rng, tmp / f"rng-rank{dist.rank}.pt")  # each process its own dropout state
        dist.barrier()
        if dist.main:
            runfolder.publish(self.out, self.step, self.args.keep_checkpoints)
        dist.barrier()


class _Window:
    """Running sums of StepMetrics between two log lines; the device's sums are added on the device."""

    def __init__(self):
        self.total = StepMetrics(masked=0, pairs=0, tokens=0, seconds=0.0)
        self.steps = 0
        self.last = StepMetrics()   # lr and grad_norm are logged as they are at the logged step

    def add(self, m: StepMetrics) -> None:
        t = self.total
        t.sums = m.sums.clone() if t.sums is None else t.sums + m.sums
        for name in ("masked", "pairs", "tokens", "seconds"):
            setattr(t, name, getattr(t, name) + getattr(m, name))
        self.steps += 1
        self.last = m

    def summary(self, step: int) -> dict:
        """The logged line; its `.tolist()` is the only place the loop waits for the device."""
        t, n = self.total, max(1, self.steps)
        norm = self.last.grad_norm if self.last.grad_norm is not None else torch.zeros(())
        values = torch.cat([t.sums.double(), norm.detach().reshape(1).double().to(t.sums.device)]).tolist()
        mlm_loss, nsp_loss, mlm_correct, nsp_correct, grad_norm = values
        return {"step": step, "loss": (mlm_loss + nsp_loss) / n, "mlm_loss": mlm_loss / n,
                "nsp_loss": nsp_loss / n, "mlm_acc": mlm_correct / max(1, t.masked),
                "nsp_acc": nsp_correct / max(1, t.pairs), "lr": self.last.lr, "grad_norm": grad_norm,
                "tok_s": t.tokens / t.seconds if t.seconds else 0.0, "time": time.time()}


@contextlib.contextmanager
def _deferred_interrupt():
    """Hold a Ctrl-C until the block is done, so an optimizer step is never left half-applied.

    Yields a list that holds the signal if one came; the caller raises KeyboardInterrupt once the step is logged.
    """
    caught: list = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.signal(signal.SIGINT, lambda sig, frame: caught.append(sig))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)
