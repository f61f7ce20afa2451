"""Pre-training: masked LM + next-sentence prediction, as the paper does it (section 3.1, appendix A.2).

    model, tok = pretrain("my_corpus/", "runs/tiny", preset="tiny", steps=2000)

The loop, per optimizer step:
    global batch of NSP pairs → dynamic 15 % masking (80/10/10) → forward (MLM logits only at the chosen
    positions) → MLM loss + NSP loss → backward (accumulated over micro-batches) → clip to 1.0 → AdamW →
    learning rate: linear warm-up, then linear decay to zero.

Three design choices make stopping, scaling and mistakes safe:
- **Exact resume.** A checkpoint holds the model, the optimizer, the step, every random generator and the
  data stream's position, so `resume=True` continues with exactly the losses an uninterrupted run would have.
  Checkpoints are written to a temporary folder and renamed into place, and the `latest` pointer is
  replaced atomically: a crash mid-write never leaves a half-written checkpoint as the latest.
- **A run folder belongs to one run.** A new run refuses a folder that holds one (`resume=True` continues
  it, `overwrite=True` replaces it), a lock file stops a second process writing there, and every path a
  checkpoint stores is relative to its folder, so a moved or copied run resumes in place from any working
  directory. Resume falls back past a torn or missing checkpoint to the newest one that reads back whole.
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
import re
import shutil
import signal
import socket
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

try:
    import fcntl   # the run-folder lock; Windows has no flock, and runs there go unlocked
except ImportError:
    fcntl = None

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..checkpoint import load, load_weights, normalise_keys, read_state_dict, resolve, save
from ..config import BertConfig
from ..model.bert import default_device
from ..model.heads import IGNORE, BertForPreTraining
from ..tokenizer import Tokenizer
from .data import PretrainingData, collate, iter_texts, read_documents
from .masking import mask_tokens

log = logging.getLogger(__name__)

Callback = Callable[[dict], None]
LAST_RUN: dict = {}  # how the latest run in this process ended (the command line turns Ctrl-C into exit code 130)


@dataclass
class PretrainArgs:
    """Everything that defines a run. Saved in every checkpoint, so `resume` needs only the output folder."""
    corpus: list[str]
    out: str
    preset: str = "tiny"
    steps: int = 1000
    batch_size: int = 32            # sequences per optimizer step (the global batch, over all processes)
    grad_accum: int = 1             # micro-batches per step: batch_size / grad_accum sequences per forward
    max_len: int = 128              # tokens per sequence, [CLS] A [SEP] B [SEP] included
    lr: float = 1e-4                # the paper's; tiny models train well with 5e-4 … 1e-3
    warmup_steps: int | None = None  # default: 10 % of the steps (the paper: 10,000 of 1,000,000)
    weight_decay: float = 0.01
    clip: float = 1.0
    mask_probability: float = 0.15
    mask_mode: str = "dynamic"      # "dynamic": re-drawn every batch; "bert": Google's fixed count per sequence
    whole_word: bool = False
    max_predictions: int = 20
    nsp_balance: bool = False       # exactly 50 / 50 IsNext / NotNext (make_pairs(balance=True)); Google: ~55 / 45
    init: str | None = None         # continue pre-training from a checkpoint (a folder or a bundled name, e.g.
                                    # "minilm"): its sizes, its encoder weights and, unless --tokenizer is
                                    # given, its tokenizer; heads it lacks (MLM, NSP) start fresh
    tokenizer: str | None = None    # vocab.txt / tokenizer.json / folder; default: train one on the corpus
    vocab_size: int = 8000          # when training a tokenizer
    lowercase: bool = True
    strip_accents: bool | None = None  # None: with lowercase (as BERT-uncased); False keeps Hangul syllables whole
    layers: int | None = None       # override the preset's size: num_hidden_layers …
    hidden: int | None = None       # … hidden_size …
    heads: int | None = None        # … num_attention_heads (default with --hidden: hidden / 64) …
    intermediate: int | None = None  # … and intermediate_size (default with --hidden: 4 × hidden)
    hidden_dropout: float | None = None    # override the preset's 0.1
    attention_dropout: float | None = None
    max_position_embeddings: int | None = None  # default: max_len (positions past it would never be trained)
    seed: int = 0
    save_every: int = 500
    keep_checkpoints: int = 2
    log_every: int = 10
    eval_corpus: list[str] | None = None   # held-out text, scored at the end (MLM top-1, NSP accuracy)
    bf16: bool | None = None        # None: on CUDA yes, on the CPU no
    compile: bool = False
    device: str | None = None
    progress: bool = True


# ---- pieces a reader (and a notebook) can use on their own ----------------------------------------

def lr_at(step: int, steps: int, warmup: int, peak: float) -> float:
    """Linear warm-up over `warmup` steps to `peak`, then linear decay to zero at `steps` (the paper's schedule)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * max(0.0, (steps - step) / max(1, steps - warmup))


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on weight matrices and embeddings, none on biases and LayerNorm (as Google's BERT)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def pretraining_loss(out, labels: torch.Tensor, nsp_labels: torch.Tensor, n_masked: int, n_pairs: int):
    """Summed MLM and NSP cross-entropies divided by the *global* counts, and the correct-prediction counts.

    `out.prediction_logits` holds logits only at the masked positions (N, V), in the order of
    `labels[labels != -100]`: the head never projects the other 85 % onto the vocabulary.
    """
    target = labels[labels != IGNORE]
    mlm_logits = out.prediction_logits.float()
    mlm = F.cross_entropy(mlm_logits, target, reduction="sum") / max(1, n_masked)
    nsp = F.cross_entropy(out.seq_relationship_logits.float(), nsp_labels, reduction="sum") / max(1, n_pairs)
    correct_mlm = (mlm_logits.argmax(-1) == target).sum()
    correct_nsp = (out.seq_relationship_logits.argmax(-1) == nsp_labels).sum()
    return mlm, nsp, correct_mlm, correct_nsp


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


def pretrain(corpus: str | os.PathLike | Sequence[str | os.PathLike] | None, out: str | os.PathLike, *,
             resume: bool = False, overwrite: bool = False, callbacks: Sequence[Callback] = (), **kwargs):
    """Pre-train a `BertForPreTraining` on plain text; returns `(model, tokenizer)`, also saved in `out`.

    `corpus`: text files or folders (a blank line separates documents). Keyword arguments are the fields of
    `PretrainArgs`. `resume=True` continues the latest checkpoint in `out` exactly (pass a larger
    `steps` to train further); the corpus is the run's own, so it may be `None`. `callbacks` are called on
    the main process with each logged metrics dict. Ctrl-C saves a checkpoint at the last finished step and
    returns the model trained so far.

    A run never destroys another: an `out` that holds a run is an error unless `resume=True` (continue it)
    or `overwrite=True` (replace it), and a lock file in `out` stops a second run writing there.
    """
    paths = ([] if corpus is None else [str(corpus)] if isinstance(corpus, (str, os.PathLike))
             else [str(p) for p in corpus])
    out = Path(out)
    state = None
    unknown = set(kwargs) - set(PretrainArgs.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown pretrain option(s): {', '.join(sorted(unknown))}")
    if resume and overwrite:
        raise ValueError(f"--resume (resume=True) continues the run in {out} and --overwrite (overwrite=True) "
                         "replaces it: pass one or the other")
    _check_out(out)
    main = int(os.environ.get("RANK", "0")) == 0     # under torchrun, process 0 holds the lock for all
    with _locked(out) if main else contextlib.nullcontext():
        if resume:
            state = _resume_point(out)
            args = _resumed_args(state, paths, out, kwargs)
        else:
            found = _run_files(out)
            if found and not overwrite:
                raise FileExistsError(f"--out {out} already holds a run ({', '.join(found)}): continue it with "
                                      "--resume (resume=True), replace it with --overwrite (overwrite=True), or "
                                      "choose another --out")
            args = PretrainArgs(corpus=paths, out=str(out), **kwargs)
        _check_args(args)
        # the tokenizer is trained and the corpus checked before an old run is deleted: bad input deletes nothing
        run = _Run(args, state, callbacks)
        if overwrite and main and _run_files(out):
            _remove_run(out)
        return run.train()


_RESUMABLE = ("steps", "save_every", "log_every", "progress", "device", "eval_corpus", "keep_checkpoints")


def _resumed_args(state: dict, paths: list[str], out: Path, kwargs: dict) -> PretrainArgs:
    """The saved run's settings, in `out`, with the options that resume may change.

    `out` is always the folder given, never the one the checkpoint was written in: a copied run folder
    resumes in the copy and leaves the original alone.
    """
    saved = dict(state["args"])
    if state.get("paths") == _RUN_RELATIVE:
        saved = _map_paths(saved, lambda p: _from_run(p, out))
        if "files" in state["data"]:
            state["data"]["files"] = [_from_run(f, out) for f in state["data"]["files"]]
    saved["out"] = str(out)
    changed = [k for k, v in kwargs.items() if k not in _RESUMABLE and _canonical(v) != _canonical(saved.get(k))]
    if changed:  # refuse rather than silently train on with the saved value
        raise ValueError("resume continues the saved run exactly, so these cannot change: "
                         + ", ".join(f"{k}={kwargs[k]!r} (saved: {saved.get(k)!r})" for k in changed)
                         + f". Only {', '.join(_RESUMABLE)} can; start a new run in another folder instead.")
    saved.update({k: v for k, v in kwargs.items() if k in _RESUMABLE})
    corpus = _resumed_corpus(saved["corpus"], paths, out)
    if corpus != saved["corpus"]:
        state["data"].pop("files", None)   # the saved names are of the missing files: nothing to compare with
    saved["corpus"] = corpus
    gone = [p for p in saved.get("eval_corpus") or [] if not os.path.exists(p)]
    if gone:  # found now, not after the training: held-out scores are not worth stopping the run for
        log.warning("the run's held-out corpus %s is not there any more: no held-out scores at the end (pass "
                    "--eval-corpus with its new location to have them)", ", ".join(gone))
        saved["eval_corpus"] = None
    if saved["steps"] <= state["step"]:
        more = 2 * state["step"]
        raise ValueError(f"the run in {out} is already at step {state['step']}, so steps={saved['steps']} leaves "
                         f"nothing to train: to train further, pass a larger --steps, e.g. --steps {more} "
                         f"(steps={more} in Python)")
    return PretrainArgs(**saved)


def _resumed_corpus(saved: list[str], given: list[str], out: Path) -> list[str]:
    """The corpus a resumed run reads: its own, or the one given in its place when its own has gone.

    A corpus given with resume is never silently ignored. The run's own files (however spelt) are fine;
    other files are refused while the run's own are there, since the saved position in the data stream means
    nothing in other text; they are used when the run's own are missing (the corpus was moved).
    """
    missing = [p for p in saved if not os.path.exists(p)]
    if not given or _canonical(given) == _canonical(saved):
        if missing:
            raise FileNotFoundError(f"the run's corpus {', '.join(missing)} is not there any more: give its new "
                                    f"location, e.g. `bertlab pretrain NEW_PATH --out {out} --resume`")
        return saved
    if not missing:
        raise ValueError(f"resume continues the run on its own corpus ({', '.join(saved)}), not on "
                         f"{', '.join(given)}: leave the corpus out to continue, or train on the new text as a "
                         "new run (another --out, or --overwrite)")
    log.warning("the run's corpus %s is not there any more: continuing on %s, which must hold the same text for "
                "the run to continue exactly", ", ".join(missing), ", ".join(given))
    return given


# ---- the run folder: what it holds, where its paths point, who writes it --------------------------

# What a run writes into its folder: any of these there means the folder holds a run ...
_RUN_FILES = ("checkpoints", "metrics.jsonl", "model.safetensors", "config.json")
# ... and the rest of its final model (bertlab.save), which overwrite removes with them.
_MODEL_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
_CHECKPOINT = re.compile(r"step-\d+")    # checkpoints/step-0000400: the only names `latest` may hold
_LOCK = ".pretrain.lock"


def _check_out(out: Path) -> None:
    """An `out` that is a file, or lies under one, fails now rather than after the tokenizer is trained."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(f"--out {out} is not a folder ({folder} is a file): pass a folder for "
                                         "the run (it is made if missing)")
            return


def _run_files(out: Path) -> list[str]:
    return [name for name in _RUN_FILES if (out / name).exists()]


def _remove_run(out: Path) -> None:
    """overwrite=True: delete the run in `out` (checkpoints, metrics, final model), nothing else in the folder."""
    log.warning("overwrite: deleting the run in %s (%s)", out, ", ".join(_run_files(out)))
    for name in _RUN_FILES + _MODEL_FILES:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


@contextlib.contextmanager
def _locked(out: Path):
    """Hold `out/.pretrain.lock` while this process reads and writes the run folder `out` (made if missing).

    Two runs writing one folder delete each other's checkpoints, so a second run stops with a message naming
    the first (pid, host, start time). The lock is an flock, which the system drops when its process ends,
    however it ends: a killed run leaves the file but not the lock, and the next run takes the file over.
    Folders made here are removed again if the run leaves nothing in them (it failed on bad input).
    """
    made = [p for p in (out, *out.parents) if not p.exists()]     # deepest first
    out.mkdir(parents=True, exist_ok=True)
    path = out / _LOCK
    fd = _lock(path) if fcntl is not None else None
    try:
        yield
    finally:
        if fd is not None:
            path.unlink(missing_ok=True)   # before letting go, so a run waiting on this file sees it was released
            os.close(fd)
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                break                      # not empty: the run wrote something


def _lock(path: Path) -> int:
    """Open and flock `path`, or raise naming the run that holds it; returns the file descriptor."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(fd) or "it has not written its details yet"
            os.close(fd)
            raise FileExistsError(f"{path.parent} is in use by another run ({holder}): wait for it to end, stop "
                                  "it, or choose another --out") from None
        except OSError as e:               # a file system without locks (some network mounts)
            log.warning("cannot lock %s (%s): nothing stops a second run writing to this folder", path, e)
            break
        try:
            ours = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            ours = False
        if ours:
            break
        os.close(fd)                       # its holder deleted the file as it ended: lock the new one
    previous = _lock_holder(fd)
    if previous:
        log.warning("taking over %s from %s, which ended without removing it", path, previous)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}).encode(), 0)
    return fd


def _lock_holder(fd: int) -> str:
    """The run a lock file names, in words; "" for an empty file."""
    raw = os.pread(fd, 4096, 0)
    if not raw.strip():
        return ""
    try:
        holder = json.loads(raw)
        return f"pid {holder['pid']} on host {holder['host']}, started {holder['started']}"
    except (ValueError, KeyError, TypeError):
        return f"a process that wrote {raw[:80]!r}"


# Every path a run stores is relative to its own folder: a run folder resumes from any working directory,
# and a copy of one resumes on its own files instead of reaching back into the original.
_RUN_RELATIVE = "relative to the run folder"   # trainer_state["paths"] in checkpoints that store paths so
_PATH_FIELDS = ("corpus", "eval_corpus", "tokenizer", "init")


def _to_run(path: str, run: Path) -> str:
    """A path as the run folder stores it: relative to the folder, spelt ./… or ../… (a name such as
    init="minilm" that is not a file stays as it is)."""
    if not os.path.exists(path):
        return path
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(run))
    except ValueError:                     # Windows: no relative path leads to another drive
        return os.path.realpath(path)
    return rel if rel.startswith(os.pardir) else os.path.join(os.curdir, rel)


def _from_run(path: str, run: Path) -> str:
    """A path the run folder stored, as one to open from the working directory."""
    if path == os.curdir or path.startswith((os.curdir + os.sep, os.pardir)):
        return os.path.normpath(os.path.join(os.path.realpath(run), path))
    return path


def _map_paths(args: dict, convert: Callable[[str], str]) -> dict:
    """`args` (a PretrainArgs as a dict) with every path passed through `convert`."""
    mapped = dict(args)
    for name in _PATH_FIELDS:
        value = mapped.get(name)
        if isinstance(value, list):
            mapped[name] = [convert(p) for p in value]
        elif isinstance(value, str):
            mapped[name] = convert(value)
    return mapped


def _canonical(value):
    """Paths as the files they name, so `data/x.txt` and `/home/me/data/x.txt` compare equal; others as they are."""
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (str, os.PathLike)) and os.path.exists(value):
        return os.path.realpath(value)
    return value


# ---- checkpoints: which one to resume from ---------------------------------------------------------

def _checkpoints(out: Path, problems: list[str] | None = None) -> list[Path]:
    """The run's checkpoint folders, best first: the one `latest` names, then the others, newest first.

    `latest` is followed only to a step-N folder inside checkpoints/: a pointer edited to `../../other_run`
    must not resume, and then write into, another run. What is wrong with `latest` goes into `problems`.
    """
    root = Path(out) / "checkpoints"
    folders = sorted((p for p in root.glob("step-*") if _CHECKPOINT.fullmatch(p.name) and p.is_dir()),
                     key=_step_of, reverse=True)
    note = problems.append if problems is not None else (lambda _: None)
    try:
        name = (root / "latest").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if folders:
            note("checkpoints/latest is missing")
        return folders
    except (OSError, UnicodeDecodeError) as e:
        note(f"checkpoints/latest cannot be read ({type(e).__name__})")
        return folders
    if not _CHECKPOINT.fullmatch(name):
        note(f"checkpoints/latest names {name[:80]!r}, which is not a checkpoint folder of this run")
        return folders
    if root / name not in folders:
        note(f"checkpoints/latest names {name}, which is missing")
        return folders
    return [root / name] + [p for p in folders if p != root / name]


def _step_of(checkpoint: Path) -> int:
    return int(checkpoint.name[len("step-"):])


def latest_checkpoint(out: Path) -> Path | None:
    """The checkpoint folder resume starts from: the one `latest` names, else the newest with a trainer state.

    A quick look at file names; resume itself also reads every file and falls back further if one is torn.
    """
    return next((p for p in _checkpoints(out) if (p / "trainer_state.pt").is_file()), None)


def _read_checkpoint(checkpoint: Path) -> dict:
    """Everything resume takes from one checkpoint folder, read whole.

    Raises ValueError naming the part that is missing or torn: torch, safetensors and tokenizers each raise
    their own kind of error for a torn file, and the reader needs the file's name more than the error's type.
    """
    parts = {
        "trainer_state.pt": lambda: torch.load(checkpoint / "trainer_state.pt", map_location="cpu",
                                               weights_only=True),
        "rng-rank0.pt": lambda: torch.load(checkpoint / "rng-rank0.pt", map_location="cpu",
                                           weights_only=True),   # checked here; each process reads its own later
        "tokenizer": lambda: Tokenizer.from_file(checkpoint),
        "model.safetensors": lambda: normalise_keys(read_state_dict(checkpoint)),
    }
    read = {}
    for part, reader in parts.items():
        try:
            read[part] = reader()
        except Exception as e:
            reason = "missing" if isinstance(e, FileNotFoundError) else (str(e).strip().splitlines() or [""])[0][:200]
            raise ValueError(f"{part}: {type(e).__name__}: {reason or 'cut short'}") from e
        if part == "trainer_state.pt":
            state = read[part]
            missing = {"args", "step", "optimizer", "data", "mask_generator"} - set(state)
            if missing:
                raise ValueError(f"trainer_state.pt lacks {', '.join(sorted(missing))}")
    return {**read["trainer_state.pt"], "checkpoint": checkpoint, "tokenizer": read["tokenizer"],
            "weights": read["model.safetensors"]}


def _resume_point(out: Path) -> dict:
    """The newest checkpoint in `out` that reads back whole, read (`_read_checkpoint`).

    A kill or a full disk can leave the newest checkpoint torn or empty, and a person can delete a file or
    edit `latest`: resume then falls back to the newest checkpoint that still reads, and says which and why,
    instead of stopping with a traceback.
    """
    problems: list[str] = []
    candidates = _checkpoints(out, problems)
    for checkpoint in candidates:
        try:
            state = _read_checkpoint(checkpoint)
        except ValueError as e:
            problems.append(f"{checkpoint.name} cannot be read ({e})")
            continue
        if problems:
            log.warning("resuming from %s (step %d), the newest checkpoint that reads back whole: %s",
                        checkpoint, state["step"], "; ".join(problems))
        return state
    if candidates:
        raise ValueError(f"no checkpoint in {out / 'checkpoints'} can be resumed: {'; '.join(problems)}. Start "
                         "over with --overwrite (overwrite=True), or choose another --out")
    advice = ("start over with --overwrite (overwrite=True)" if _run_files(out)
              else "start a new run without --resume")
    raise FileNotFoundError(f"nothing to resume in {out}: it has no checkpoints ({advice})")


def _check_args(a: PretrainArgs) -> None:
    if a.steps < 1:
        raise ValueError(f"steps must be at least 1, got {a.steps}")
    if a.batch_size < 1 or a.grad_accum < 1 or a.batch_size % a.grad_accum:
        raise ValueError(f"batch_size {a.batch_size} must be a positive multiple of grad_accum {a.grad_accum}")
    if a.max_len < 5:
        raise ValueError(f"max_len {a.max_len} is too small: [CLS] A [SEP] B [SEP] needs at least 5 tokens")
    if not 0 < a.mask_probability < 1:
        raise ValueError(f"mask_probability must be between 0 and 1, got {a.mask_probability}")
    if a.lr <= 0:
        raise ValueError(f"lr must be positive, got {a.lr}")
    if a.keep_checkpoints < 1 or a.save_every < 1 or a.log_every < 1:
        raise ValueError("keep_checkpoints, save_every and log_every must each be at least 1")
    if a.init and any(getattr(a, n) is not None for n in ("layers", "hidden", "heads", "intermediate",
                                                           "max_position_embeddings")):
        raise ValueError("--init takes its sizes from the checkpoint: drop --layers/--hidden/--heads/"
                         "--intermediate/--max-position-embeddings")
    for name in ("layers", "hidden", "heads", "intermediate"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(a, name)}")
    BertConfig.preset(a.preset, **_size_overrides(a))  # raises for an unknown preset or a size that cannot work


def _size_overrides(a: PretrainArgs) -> dict:
    """--layers/--hidden/--heads/--intermediate as BertConfig fields.

    A new hidden width brings what every preset has at that width: heads of 64 dimensions and a 4× FFN.
    """
    sizes = dict(num_hidden_layers=a.layers, hidden_size=a.hidden,
                 num_attention_heads=a.heads or (a.hidden and max(1, a.hidden // 64)),
                 intermediate_size=a.intermediate or (a.hidden and 4 * a.hidden))
    return {k: v for k, v in sizes.items() if v is not None}


class _Run:
    def __init__(self, args: PretrainArgs, state: dict | None, callbacks: Sequence[Callback]):
        self.args, self.callbacks = args, list(callbacks)
        self.dist = _Dist(args.device)
        a, dist = args, self.dist
        if a.batch_size % (a.grad_accum * dist.world):
            raise ValueError(f"batch_size {a.batch_size} must be divisible by grad_accum × processes "
                             f"= {a.grad_accum * dist.world}")
        self.out = Path(a.out)
        self.warmup = a.warmup_steps if a.warmup_steps is not None else max(1, a.steps // 10)

        random.seed(a.seed)
        torch.manual_seed(a.seed + dist.rank)  # dropout differs per process, as it would per batch row
        if state is None:
            self.tokenizer = self._tokenizer()
            self.model = self._model()
            self.step = 0
        else:  # pretrain() has read the checkpoint to resume from (the newest intact one in `out`) into `state`
            ckpt = state["checkpoint"]
            self.tokenizer = state["tokenizer"]
            self.model = self._model()
            load_weights(self.model, state["weights"])
            self.step = state["step"]
        # validate the corpus before any training starts (empty, missing, no multi-sentence document …)
        self.data = PretrainingData(a.corpus, self.tokenizer, max_len=a.max_len, seed=a.seed, balance=a.nsp_balance)
        self.data.check()
        self.mask_gen = torch.Generator().manual_seed(a.seed)
        self.optimizer = torch.optim.AdamW(param_groups(self.model, a.weight_decay), lr=a.lr,
                                           betas=(0.9, 0.999), eps=1e-6)
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])
            self.data.load_state_dict(state["data"])
            self.mask_gen.set_state(state["mask_generator"])
            self._set_rng(torch.load(ckpt / f"rng-rank{dist.rank}.pt", map_location="cpu", weights_only=True))
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
    def train(self):
        a, dist = self.args, self.dist
        if dist.main:
            self.out.mkdir(parents=True, exist_ok=True)
            self._trim_metrics()
        micro = a.batch_size // a.grad_accum
        rows = slice(dist.rank, None, dist.world)
        stream = self.data.batches(a.batch_size)
        bar = tqdm(total=a.steps, initial=self.step, disable=not (a.progress and dist.main), desc="pretrain",
                   unit="step", dynamic_ncols=True)
        window = _Window()
        interrupted = False
        # the stream's position and the random generators' states after the last *finished* step: a Ctrl-C
        # mid-step has already drawn that step's masks and dropout, which the resumed step must draw again
        data_state, rng_state = self.data.state_dict(), self._rng_states()
        try:
            while self.step < a.steps:
                t0 = time.perf_counter()
                # mask the whole global batch at once, then split it: grad_accum and DDP change no mask
                batch = self._mask(next(stream))
                n_masked = int((batch["labels"] != IGNORE).sum())
                masked = []
                for i in range(0, a.batch_size, micro):
                    m = {k: v[i:i + micro] for k, v in batch.items()}
                    T = int(m["attention_mask"].sum(1).max())   # drop columns that are padding in every row
                    masked.append({k: v[:, :T] if v.dim() == 2 else v for k, v in m.items()})
                lr = lr_at(self.step, a.steps, self.warmup, a.lr)
                for g in self.optimizer.param_groups:
                    g["lr"] = lr
                self.optimizer.zero_grad(set_to_none=True)
                sums = torch.zeros(6, dtype=torch.float64)
                for i, m in enumerate(masked):
                    mine = {k: v[rows].to(dist.device) for k, v in m.items()}
                    sync = i == len(masked) - 1 or dist.world == 1
                    ctx = self.forward.no_sync() if not sync else contextlib.nullcontext()
                    with ctx:
                        with torch.autocast(dist.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                            out = self.forward(mine["input_ids"], mine["token_type_ids"], mine["attention_mask"],
                                               labels=mine["labels"])
                        mlm, nsp, c_mlm, c_nsp = pretraining_loss(out, mine["labels"], mine["next_sentence_label"],
                                                                  n_masked, a.batch_size)
                        ((mlm + nsp) * dist.world).backward()
                    sums += torch.tensor([mlm.item(), nsp.item(), c_mlm.item(), c_nsp.item(),
                                          int((mine["labels"] != IGNORE).sum()), int(mine["attention_mask"].sum())],
                                         dtype=torch.float64)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), a.clip)
                with _deferred_interrupt() as pending:  # weights, step and records change together or not at all
                    self.optimizer.step()
                    self.step += 1
                    data_state, rng_state = self.data.state_dict(), self._rng_states()
                if dist.world > 1:
                    torch.distributed.all_reduce(sums)
                mlm_l, nsp_l, c_mlm, c_nsp, n_m, n_tok = sums.tolist()
                window.add(mlm_l, nsp_l, c_mlm, n_m, c_nsp, a.batch_size, n_tok, time.perf_counter() - t0)
                if dist.main:
                    bar.update(1)
                    bar.set_postfix(loss=f"{mlm_l + nsp_l:.3f}", mlm_acc=f"{c_mlm / max(1, n_m):.3f}",
                                    nsp_acc=f"{c_nsp / a.batch_size:.3f}", tok_s=f"{window.tok_s:,.0f}", refresh=False)
                if self.step % a.log_every == 0 or self.step == a.steps:
                    self._log(window.summary(self.step, lr, float(grad_norm)))
                    window = _Window()
                if self.step % a.save_every == 0 and self.step < a.steps:
                    self._checkpoint(data_state, rng_state)
                if pending:  # a Ctrl-C held during the optimizer step, now that the step is recorded
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            interrupted = True
            log.warning("interrupted at step %d: saving a checkpoint; continue with resume=True", self.step)
        finally:
            bar.close()
        self._checkpoint(data_state, rng_state)
        if dist.main:
            save(self.model, self.tokenizer, self.out)
            if a.eval_corpus and not interrupted:
                from .evaluate import evaluate
                result = evaluate(self.model, self.tokenizer, a.eval_corpus, max_len=a.max_len, seed=a.seed)
                self._log({"step": self.step, "eval": asdict(result)})
        dist.barrier()
        self.model.eval()
        LAST_RUN.update(interrupted=interrupted, step=self.step, out=str(self.out))
        return self.model, self.tokenizer

    def _mask(self, examples) -> dict[str, torch.Tensor]:
        batch = collate(examples, self.tokenizer.pad_id)
        inputs, labels = mask_tokens(batch["input_ids"], self.tokenizer, self.args.mask_probability,
                                     generator=self.mask_gen, mode=self.args.mask_mode,
                                     max_predictions=self.args.max_predictions, whole_word=self.args.whole_word)
        return {**batch, "input_ids": inputs, "labels": labels}

    # -- records --
    def _log(self, metrics: dict) -> None:
        if not self.dist.main:
            return
        with open(self.out / "metrics.jsonl", "a") as f:
            f.write(json.dumps(metrics) + "\n")
        for cb in self.callbacks:
            cb(metrics)

    def _trim_metrics(self) -> None:
        """Keep the lines of metrics.jsonl up to the step training starts from, so each step is logged once.

        A run killed after logging step 6 and resumed from its step-4 checkpoint trains steps 5 and 6 again:
        their old lines go, and so does a last line the kill cut short.
        """
        path = self.out / "metrics.jsonl"
        if not path.exists():
            return
        kept, dropped = [], 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                keep = json.loads(line)["step"] <= self.step
            except (ValueError, KeyError, TypeError):
                keep = False                       # cut short by a kill
            if keep:
                kept.append(line)
            else:
                dropped += 1
        if dropped:
            tmp = path.with_name(".metrics.jsonl.tmp")
            tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
            os.replace(tmp, path)
            log.info("metrics.jsonl: dropped %d line(s) after step %d, which is where training starts again",
                     dropped, self.step)

    def _stored_state(self, data_state: dict) -> tuple[dict, dict]:
        """The run's settings and the data stream's state as a checkpoint stores them: paths relative to `out`."""
        args = _map_paths(asdict(self.args), lambda p: _to_run(p, self.out))
        args["out"] = os.curdir     # the folder the checkpoint is in; resume uses whatever folder it is given
        data = dict(data_state)
        if "files" in data:
            data["files"] = [_to_run(f, self.out) for f in data["files"]]
        return args, data

    def _checkpoint(self, data_state: dict, rng_state: tuple) -> None:
        """checkpoints/step-N/ written under a temporary name, renamed, then `latest` swapped atomically."""
        dist, root = self.dist, self.out / "checkpoints"
        name = f"step-{self.step:07d}"
        tmp = root / f".{name}.tmp"
        if dist.main:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            save(self.model, self.tokenizer, tmp)
            args, data = self._stored_state(data_state)
            torch.save({"args": args, "paths": _RUN_RELATIVE, "step": self.step,
                        "optimizer": self.optimizer.state_dict(), "data": data, "mask_generator": rng_state[0]},
                       tmp / "trainer_state.pt")
        dist.barrier()
        torch.save(rng_state[1], tmp / f"rng-rank{dist.rank}.pt")  # each process its own dropout state
        dist.barrier()
        if dist.main:
            final = root / name
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
            pointer = root / ".latest.tmp"
            pointer.write_text(name + "\n")
            os.replace(pointer, root / "latest")
            # prune the oldest, never the one just written nor a newer one (a resume that fell back past a
            # torn checkpoint writes below it, and replaces it when it gets there)
            older = sorted((p for p in root.glob("step-*") if _CHECKPOINT.fullmatch(p.name)
                            and _step_of(p) < self.step), key=_step_of)
            for old in older[: max(0, len(older) - (self.args.keep_checkpoints - 1))]:
                shutil.rmtree(old, ignore_errors=True)
        dist.barrier()

    def _rng_states(self) -> tuple:
        return self.mask_gen.get_state(), self._rng()

    def _rng(self) -> dict:
        state = {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]),
                 "python_pos": random.getstate()[2]}
        if torch.cuda.is_available():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def _set_rng(self, state: dict) -> None:
        torch.set_rng_state(state["torch"])
        random.setstate((3, tuple(state["python"]), state["python_pos"]))
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])


class _Window:
    """Running sums between two log lines."""

    def __init__(self):
        self.mlm = self.nsp = self.c_mlm = self.n_mlm = self.c_nsp = self.n_nsp = self.tokens = self.seconds = 0.0
        self.steps = 0

    def add(self, mlm, nsp, c_mlm, n_mlm, c_nsp, n_nsp, tokens, seconds):
        self.mlm += mlm; self.nsp += nsp; self.c_mlm += c_mlm; self.n_mlm += n_mlm  # noqa: E702
        self.c_nsp += c_nsp; self.n_nsp += n_nsp; self.tokens += tokens; self.seconds += seconds  # noqa: E702
        self.steps += 1

    @property
    def tok_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def summary(self, step: int, lr: float, grad_norm: float) -> dict:
        n = max(1, self.steps)
        return {"step": step, "loss": (self.mlm + self.nsp) / n, "mlm_loss": self.mlm / n, "nsp_loss": self.nsp / n,
                "mlm_acc": self.c_mlm / max(1, self.n_mlm), "nsp_acc": self.c_nsp / max(1, self.n_nsp),
                "lr": lr, "grad_norm": grad_norm, "tok_s": self.tok_s, "time": time.time()}


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
