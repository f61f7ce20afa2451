"""The numbers of a pre-training run, checked before anything is loaded or trained.

A learning rate of inf or a negative clipping threshold does not fail: the run goes on and trains nonsense
(a negative threshold scales every gradient by a negative number, so AdamW climbs the loss), and the
reader finds out hours later from a NaN model. So every number `PretrainArgs` holds is checked here
against the range its field declares (pretraining/args.py), and the error names the flag, the value and that
range.
The model sizes are checked by `BertConfig` itself; this module checks what the run does with them.
"""

from __future__ import annotations

import logging
import math
import os

from .. import optim, settings
from ..checkpoint import resolve
from ..inputs import check_vocabularies
from ..optim import NonFiniteLoss  # noqa: F401  (re-exported: the trainer's callers catch it here)
from ..tokenizer import Tokenizer
from ..utils import default_device
from .args import PretrainArgs
from .runfolder import latest_checkpoint

log = logging.getLogger(__name__)

# every field's range, as PretrainArgs declares it (bertlab/settings.py): the one list of what each number may be
RANGES = settings.ranges(PretrainArgs)
MASK_MODES = ("dynamic", "bert")         # masking.mask_tokens' `mode`


def check_given(options: dict) -> None:
    """Each number in `options` (PretrainArgs fields as `pretrain` receives them) in its range, and a device this
    machine has, or a ValueError naming the flag, the value given and the values allowed. Called before anything
    is read, trained or loaded: the defaults are all in range, so only what was given can be wrong."""
    settings.check_given(PretrainArgs, options)
    mode = options.get("mask_mode", "dynamic")
    if mode not in MASK_MODES:           # masking.py says it too, but only as `mode`, once the corpus is read
        raise ValueError(f"--mask-mode {mode!r} (mask_mode={mode!r}) must be 'dynamic' (HuggingFace/RoBERTa) or "
                         "'bert' (Google's original)")
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
    """`value` for the PretrainArgs field `name` in its declared range (settings.check_value)."""
    settings.check_value(PretrainArgs, name, value)


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except (TypeError, OverflowError):
        return False


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
                             f"with a lower learning rate (--lr {args.lr:g} now), a longer warm-up (--warmup) "
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
