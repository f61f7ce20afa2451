"""The numbers of a pre-training run, checked before anything is loaded or trained.

A learning rate of inf or a negative clipping threshold does not fail: the run goes on and trains nonsense
(a negative threshold scales every gradient by a negative number, so AdamW climbs the loss), and the
reader finds out hours later from a NaN model. So every number `PretrainArgs` holds is checked here
against the range in which it means something, and the error names the flag, the value and that range.
The model sizes are checked by `BertConfig` itself; this module checks what the run does with them.
"""

from __future__ import annotations

import logging
import math
import numbers
import os

from .. import optim
from ..checkpoint import resolve
from ..inputs import check_vocabularies
from ..optim import NonFiniteLoss  # noqa: F401  (re-exported: the trainer's callers catch it here)
from ..tokenizer import Tokenizer
from ..utils import default_device
from .runfolder import latest_checkpoint

log = logging.getLogger(__name__)

# field: (whole number?, lowest, is the lowest allowed?, highest or None, what the number is)
RANGES = {
    "steps": (True, 1, True, None, "optimizer steps"),
    "batch_size": (True, 1, True, None, "sequences per step"),
    "grad_accum": (True, 1, True, None, "micro-batches per step"),
    "max_len": (True, 5, True, 2**16, "tokens per sequence ([CLS] A [SEP] B [SEP] needs 5; BERT's own 512)"),
    "lr": (False, 0, False, None, "the peak learning rate, e.g. 1e-4"),
    "warmup_steps": (True, 0, True, None, "warm-up steps (0: none)"),
    "weight_decay": (False, 0, True, None, "AdamW's decoupled weight decay, e.g. 0.01; a negative one grows "
                                           "the weights"),
    "clip": (False, 0, False, None, "the gradient-norm threshold, e.g. 1.0; a negative one reverses the "
                                    "gradient"),
    "mask_probability": (False, 0, False, 1, "the share of tokens masked, e.g. 0.15"),
    "max_predictions": (True, 1, True, None, "masked tokens per sequence in --mask-mode bert"),
    "vocab_size": (True, 6, True, 2**20, "tokens in a trained vocabulary (the 5 specials and more; BERT's "
                                         "own has 30,522)"),
    "hidden_dropout": (False, 0, True, 1, "a dropout probability in [0, 1)"),
    "attention_dropout": (False, 0, True, 1, "a dropout probability in [0, 1)"),
    "seed": (True, 0, True, 2**63 - 1, "the random seed"),
    "save_every": (True, 1, True, None, "steps between checkpoints"),
    "keep_checkpoints": (True, 1, True, None, "checkpoints kept"),
    "log_every": (True, 1, True, None, "steps between log lines"),
    "snapshot_every": (True, 0, True, None, "the whole number of steps between snapshots (0: none)"),
}


def check_given(options: dict) -> None:
    """Each number in `options` (PretrainArgs fields as `pretrain` receives them) in its range, and a device this
    machine has, or a ValueError naming the flag, the value given and the values allowed. Called before anything
    is read, trained or loaded: the defaults are all in range, so only what was given can be wrong."""
    for name, value in options.items():
        if name in RANGES:
            check_value(name, value)
    if options.get("device") is not None:
        default_device(options["device"])     # a device this machine lacks: say which devices it has


def check_paths(corpus, out) -> None:
    """`corpus` (a path, a list of them, or None with resume) and `out` (a path) as pretrain takes them."""
    def is_path(p) -> bool:
        return isinstance(p, (str, os.PathLike)) and not isinstance(p, bytes) and str(p) != ""
    if not is_path(out):
        raise TypeError(f"out must be the run folder, a str or pathlib.Path, got {out!r} ({type(out).__name__})")
    items = [] if corpus is None else [corpus] if is_path(corpus) else corpus
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)) or not all(map(is_path, items)):
        raise TypeError(f"corpus must be a text file or folder (a str or pathlib.Path), a list of them, or None "
                        f"with resume=True, got {corpus!r}")


def check_value(name: str, value) -> None:
    whole, low, low_ok, high, what = RANGES[name]
    if value is None and name in ("warmup_steps", "hidden_dropout", "attention_dropout"):
        return                              # None: the default (10 % of steps, the preset's dropout)
    flag = "--" + name.replace("_", "-")
    allowed = _range(whole, low, low_ok, high, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if whole else numbers.Real):
        raise ValueError(f"{flag} {value!r} ({name}={value!r}): must be {allowed}, {what}")
    if not _finite(value) or value < low or (value == low and not low_ok) or (
            high is not None and (value > high or (value == high and name != "seed"))):
        raise ValueError(f"{flag} {value!r} ({name}={value!r}) is out of range: it must be {allowed}, {what}")


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except (TypeError, OverflowError):
        return False


def _range(whole: bool, low, low_ok: bool, high, name: str) -> str:
    kind = "a whole number" if whole else "a finite number"
    if high is None:
        return f"{kind} {'≥' if low_ok else '>'} {low}"
    if name == "seed":
        return f"{kind} from 0 to 2**63 - 1"
    return f"{kind} in {'[' if low_ok else '('}{low}, {high})"


def stop_if_not_finite(step: int, mlm_loss: float, nsp_loss: float, grad_norm: float, args, out) -> None:
    """Raise NonFiniteLoss (optim's, shared with fine-tuning) when step `step`'s loss or gradient norm is NaN or
    infinite, before the optimizer applies it. The error names the checkpoint in the run folder `out` that
    resume would start from."""
    values = {"MLM": mlm_loss, "NSP": nsp_loss, "gradient norm": grad_norm}
    if all(map(_finite, values.values())):
        return
    latest = latest_checkpoint(out)
    where = (f"the last good checkpoint, {latest}, is left as the one --resume finds" if latest is not None
             else "no checkpoint was written yet")
    optim.stop_if_not_finite(step, values, f"{where}. Resuming would replay the same steps, so start a new run "
                             f"with a lower learning rate (--lr {args.lr:g} now), a longer warm-up (--warmup-steps) "
                             f"or a lower --clip ({args.clip:g} now)")


def check_init_tokenizer(args, vocab_size: int, tokenizer) -> None:
    """--init with --tokenizer: a tokenizer larger than the checkpoint's vocabulary is an error; one that is not
    the checkpoint's own is a warning saying what it means (each embedding was learned for another token)."""
    check_vocabularies(vocab_size, tokenizer, f"--init {args.init}")
    if not args.tokenizer:
        return
    own = Tokenizer.from_file(resolve(args.init)).get_vocab()
    given = tokenizer.get_vocab()
    moved = sum(1 for token, i in given.items() if own.get(token) != i)
    if moved:
        log.warning("--tokenizer %s is not the tokenizer of --init %s: %d of its %d tokens are missing there or "
                    "have another id, so their embeddings were learned for other tokens and continued "
                    "pre-training starts from scrambled word vectors (leave --tokenizer out to use the "
                    "checkpoint's own)", args.tokenizer, args.init, moved, len(given))
