"""A pre-training run's folder: what it holds, who may write it, where its paths point, which checkpoint resumes.

    out/
      .pretrain.lock          held (flock) while a process writes here; names that process
      metrics.jsonl           one line per logged step, then the held-out scores
      snapshots.jsonl         with snapshot_every: the model's view of one sentence every N steps
      model.safetensors …     the final model and tokenizer (bertlab.save)
      checkpoints/
        latest                the name of the checkpoint resume starts from, replaced atomically
        step-0000400/         model + tokenizer, trainer_state.pt, rng-rank{R}.pt for each process R

The trainer decides what goes into a checkpoint (weights, optimizer, step, data position, random states);
this module keeps the folder safe to stop, copy, move and resume, whatever happened to it in between:
- a checkpoint is written under a temporary name and renamed into place, and `latest` is swapped
  atomically, so a crash mid-write never leaves a half-written checkpoint as the latest;
- a lock file stops a second process writing into the folder, and a folder that holds a run is never
  silently reused;
- every path a checkpoint stores is relative to its folder, so a moved or copied run resumes in place;
- resume falls back past a torn or missing checkpoint to the newest one that reads back whole, saying so,
  and continues the saved run's own settings and corpus: only the options in RESUMABLE may change.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import random
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Callable

try:
    import fcntl  # the run-folder lock; Windows has no flock, and runs there go unlocked
except ImportError:
    fcntl = None

import torch

from .. import files, settings
from ..checkpoint import normalise_keys, read_state_dict
from ..tokenizer import Tokenizer
from .args import PretrainArgs

log = logging.getLogger(__name__)

# What a run writes into its folder: any of these there means the folder holds a run ...
RUN_FILES = ("checkpoints", "metrics.jsonl", "snapshots.jsonl", "model.safetensors", "config.json")
# ... and the rest of its final model (bertlab.save), which overwrite removes with them.
MODEL_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
_CHECKPOINT = re.compile(r"step-\d+")    # checkpoints/step-0000400: the only names `latest` may hold
_LOCK = ".pretrain.lock"


# ---- the folder: is it free, who writes it --------------------------------------------------------

def check_out(out: Path) -> None:
    """An `out` that is a file, or lies under one, fails now rather than after the tokenizer is trained."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise NotADirectoryError(f"--out {out} is not a folder ({folder} is a file): pass a folder for "
                                         "the run (it is made if missing)")
            return


def run_files(out: Path) -> list[str]:
    """The names in `out` that show it holds a run (empty: the folder is free for a new one)."""
    return [name for name in RUN_FILES if (out / name).exists() or (out / name).is_symlink()]


def remove_run(out: Path) -> None:
    """overwrite=True: delete the run in `out` (checkpoints, metrics, final model), nothing else in the folder."""
    log.warning("overwrite: deleting the run in %s (%s)", out, ", ".join(run_files(out)))
    for name in RUN_FILES + MODEL_FILES:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


@contextlib.contextmanager
def locked(out: Path):
    """Hold `out/.pretrain.lock` while this process reads and writes the run folder `out` (made if missing).

    Two runs writing one folder delete each other's checkpoints, so a second run stops with a message naming
    the first (pid, host, start time). The lock is an flock, which the system drops when its process ends,
    however it ends: a killed run leaves the file but not the lock, and the next run takes the file over.
    Folders made here are removed again if the run leaves nothing in them (it failed on bad input).
    """
    made = [p for p in (out, *out.parents) if not p.exists()]     # deepest first
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / _LOCK
        fd = _lock(path) if fcntl is not None else None
    except OSError as e:
        if isinstance(e, (FileExistsError, files.LinkRefused)) or e.errno not in _CANNOT_WRITE:
            raise
        raise PermissionError(e.errno, f"cannot write in --out {out} ({e.strerror}): choose a folder you may "
                              "write to") from None
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


_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


def _lock(path: Path) -> int:
    """Open and flock `path`, or raise naming the run that holds it; returns the file descriptor.

    Opened without following a link: a `.pretrain.lock` planted as a link to another file would have that
    file truncated and overwritten with the lock's JSON, even by a run that is then refused."""
    while True:
        files.refuse_link(path, "the run folder's lock")
        try:
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(path, flags, 0o644)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
                files.refuse_link(path, "the run folder's lock")
            raise
        try:
            files.refuse_shared(fd, path, "the run folder's lock")
        except files.LinkRefused:
            os.close(fd)
            raise
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


def check_files(out: Path) -> None:
    """Refuse a run folder in which anything the trainer reads or writes is a symbolic link or a special file.

    Every file of a run is opened by name: a link planted there (or a `cp -as` copy, which is made of links)
    would have the run append its log to, or write its checkpoints into, whatever the link points to, and a
    FIFO where metrics.jsonl should be would block resume for ever. So each is checked, down every
    checkpoint, before anything is written; files.open_for_append refuses them again at each write.
    """
    for name in (*RUN_FILES, *MODEL_FILES, _LOCK):
        files.refuse_link(out / name, f"{name} of the run in {out}", folder_ok=name == "checkpoints")
    root = out / "checkpoints"
    if root.is_dir():
        for folder, dirs, names in os.walk(root):
            for name in dirs + names:
                files.refuse_link(Path(folder) / name, f"every file under {root}", folder_ok=True)


def remove_stale(out: Path) -> None:
    """Delete the half-written checkpoints and pointer files of runs that were killed while writing them.

    Only the process holding the lock calls this, so no other run is writing them now.
    """
    root = out / "checkpoints"
    if not root.is_dir() or root.is_symlink():    # a linked checkpoints/ is refused by check_files, not entered
        return
    for p in root.glob(".*.tmp"):
        log.info("removing %s, left by a run that was stopped while writing it", p)
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def fresh_staging(out: Path, step: int) -> Path:
    """`staging(out, step)`, emptied and made anew (whatever was at its name, a link included, is removed)."""
    tmp = staging(out, step)
    if tmp.is_dir() and not tmp.is_symlink():
        shutil.rmtree(tmp)
    else:
        tmp.unlink(missing_ok=True)
    tmp.mkdir(parents=True)
    return tmp


@contextlib.contextmanager
def writing_checkpoint(out: Path, step: int):
    """Around the writing of a checkpoint: a full disk (or another failed write) becomes one OSError naming the
    file, saying that the previous checkpoint is intact and `resume` continues from it."""
    try:
        yield
    except Exception as e:
        previous = latest_checkpoint(out)
        intact = (f"the checkpoint being written (step {step}) was not published: {previous} is intact and "
                  "--resume continues from it" if previous is not None else
                  f"no checkpoint of step {step} was published, and the run has no earlier one")
        error = files.write_error(e, getattr(e, "file", None) or staging(out, step), intact)
        if error is None:
            raise
        shutil.rmtree(staging(out, step), ignore_errors=True)   # give the space back
        raise error from e


def reports_write_errors(write_checkpoint: Callable) -> Callable:
    """A trainer's checkpoint method (`run.out`, `run.step`), its failed writes said by `writing_checkpoint`."""
    @functools.wraps(write_checkpoint)
    def wrapper(run, *args, **kwargs):
        with writing_checkpoint(run.out, run.step):
            return write_checkpoint(run, *args, **kwargs)
    return wrapper


def save_tensors(obj, path: Path) -> None:
    """torch.save, with a failed write (a full disk) named as such: torch says only 'file write failed'."""
    try:
        torch.save(obj, path)
    except Exception as e:
        error = files.write_error(e, path)
        if error is None:
            raise
        raise error from e


# ---- paths: stored relative to the folder ----------------------------------------------------------
# Every path a run stores is relative to its own folder: a run folder resumes from any working directory,
# and a copy of one resumes on its own files instead of reaching back into the original.

RUN_RELATIVE = "relative to the run folder"   # trainer_state["paths"] in checkpoints that store paths so
_PATH_FIELDS = ("corpus", "eval_corpus", "tokenizer", "init")


def to_run(path: str, run: Path) -> str:
    """A path as the run folder stores it: relative to the folder, spelt ./… or ../… (a name such as
    init="minilm" that is not a file stays as it is)."""
    if not os.path.exists(path):
        return path
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(run))
    except ValueError:                     # Windows: no relative path leads to another drive
        return os.path.realpath(path)
    return rel if rel.startswith(os.pardir) else os.path.join(os.curdir, rel)


def from_run(path: str, run: Path) -> str:
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


def stored(args: dict, data_state: dict, out: Path) -> tuple[dict, dict]:
    """A run's settings and its data stream's state as a checkpoint stores them: paths relative to `out`."""
    args = _map_paths(args, lambda p: to_run(p, out))
    args["out"] = os.curdir     # the folder the checkpoint is in; resume uses whatever folder it is given
    data = dict(data_state)
    if "files" in data:
        data["files"] = [to_run(f, out) for f in data["files"]]
    return args, data


def restored(state: dict, out: Path) -> tuple[dict, dict]:
    """The settings and data state a checkpoint of the run in `out` stored, with paths to open from here.

    `out` is always the folder given, never the one the checkpoint was written in: a copied run folder
    resumes in the copy and leaves the original alone.
    """
    args, data = dict(state["args"]), state["data"]
    if "warmup_steps" in args:                 # runs started before warm-up became a share of the steps
        count = args.pop("warmup_steps")
        args["warmup"] = 0.1 if count is None else count / args["steps"]
    if state.get("paths") == RUN_RELATIVE:     # older checkpoints stored the paths as they were given
        args = _map_paths(args, lambda p: from_run(p, out))
        if "files" in data:
            data = {**data, "files": [from_run(f, out) for f in data["files"]]}
    args["out"] = str(out)
    return args, data


def canonical(value):
    """Paths as the files they name, so `data/x.txt` and `/home/me/data/x.txt` compare equal; others as they are."""
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (str, os.PathLike)) and os.path.exists(value):
        return os.path.realpath(value)
    return value


# ---- resume: the saved run's settings, and what may change -----------------------------------------

RESUMABLE = settings.resumable(PretrainArgs)     # the fields PretrainArgs declares resumable


def resumed_args(state: dict, paths: list[str], out: Path, kwargs: dict) -> dict:
    """The saved run's settings (PretrainArgs fields), in `out`, with the options in `kwargs` that resume may
    change; `paths` is the corpus given with resume, if any. Updates `state["data"]` to match."""
    saved, state["data"] = restored(state, out)
    changed = [k for k, v in kwargs.items() if k not in RESUMABLE and canonical(v) != canonical(saved.get(k))]
    if changed:  # refuse rather than silently train on with the saved value
        raise ValueError("resume continues the saved run exactly, so these cannot change: "
                         + ", ".join(f"{k}={kwargs[k]!r} (saved: {saved.get(k)!r})" for k in changed)
                         + f". Only {', '.join(RESUMABLE)} can; start a new run in another folder instead.")
    saved.update({k: v for k, v in kwargs.items() if k in RESUMABLE})
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
    return saved


def _resumed_corpus(saved: list[str], given: list[str], out: Path) -> list[str]:
    """The corpus a resumed run reads: its own, or the one given in its place when its own has gone.

    A corpus given with resume is never silently ignored. The run's own files (however spelt) are fine;
    other files are refused while the run's own are there, since the saved position in the data stream means
    nothing in other text; they are used when the run's own are missing (the corpus was moved).
    """
    missing = [p for p in saved if not os.path.exists(p)]
    if not given or canonical(given) == canonical(saved):
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


# ---- checkpoints: writing one safely, and which one to resume from ---------------------------------

def staging(out: Path, step: int) -> Path:
    """checkpoints/.step-N.tmp: where the checkpoint of step N is written before `publish` renames it."""
    return Path(out) / "checkpoints" / f".step-{step:07d}.tmp"


def publish(out: Path, step: int, keep: int) -> None:
    """Rename the written `staging(out, step)` to checkpoints/step-N, point `latest` at it, keep the newest `keep`."""
    root, name = Path(out) / "checkpoints", f"step-{step:07d}"
    final = root / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging(out, step), final)
    files.replace_text(root / "latest", name + "\n")   # a random temporary name: nothing planted is written through
    # prune the oldest, never the one just written nor a newer one (a resume that fell back past a
    # torn checkpoint writes below it, and replaces it when it gets there)
    older = sorted((p for p in root.glob("step-*") if _CHECKPOINT.fullmatch(p.name) and _step_of(p) < step),
                   key=_step_of)
    for old in older[: max(0, len(older) - (keep - 1))]:
        shutil.rmtree(old, ignore_errors=True)


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
    def tensors(name: str):          # weights_only: a checkpoint is data, never code to run
        return torch.load(checkpoint / name, map_location="cpu", weights_only=True)

    parts = {
        "trainer_state.pt": lambda: tensors("trainer_state.pt"),
        "rng-rank0.pt": lambda: tensors("rng-rank0.pt"),   # checked here; each process reads its own later
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


def resume_point(out: Path) -> dict:
    """The newest checkpoint in `out` that reads back whole, read: its trainer state (args, step, optimizer,
    data, mask_generator, paths) plus `checkpoint` (its folder), `tokenizer` and `weights`.

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
    advice = ("start over with --overwrite (overwrite=True)" if run_files(out)
              else "start a new run without --resume")
    raise FileNotFoundError(f"nothing to resume in {out}: it has no checkpoints ({advice})")


# ---- random state: dropout must draw the same numbers after a resume --------------------------------

def rng_state() -> dict:
    """This process's global generators (torch, Python, CUDA): what dropout and `random` draw next."""
    state = {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]),
             "python_pos": random.getstate()[2]}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(checkpoint: Path, rank: int) -> None:
    """Set this process's generators to those its rank saved in `checkpoint` (rng-rank{rank}.pt)."""
    state = torch.load(checkpoint / f"rng-rank{rank}.pt", map_location="cpu", weights_only=True)
    torch.set_rng_state(state["torch"])
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---- the loss log --------------------------------------------------------------------------------

def trim_metrics(out: Path, step: int, name: str = "metrics.jsonl") -> None:
    """Keep the lines of metrics.jsonl (or another per-step log, `name`) up to `step`, where training starts
    from, so each step is logged once.

    A run killed after logging step 6 and resumed from its step-4 checkpoint trains steps 5 and 6 again:
    their old lines go, and so does a last line the kill cut short.
    """
    path = Path(out) / name
    if not path.exists() and not path.is_symlink():
        return
    kept, dropped = [], 0
    for line in files.read_text(path, f"{name} of the run in {out}").splitlines():
        try:
            keep = json.loads(line)["step"] <= step
        except (ValueError, KeyError, TypeError):
            keep = False                       # cut short by a kill
        if keep:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        files.replace_text(path, "".join(line + "\n" for line in kept))
        log.info("%s: dropped %d line(s) after step %d, which is where training starts again", name, dropped, step)
