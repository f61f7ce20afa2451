"""`finetune`: the one fine-tuning loop, for every task shape of the paper.

    model, tokenizer = bertlab.load("bertlab-mini")
    data = bertlab.load_task("follows")
    result = bertlab.finetune(model, tokenizer, data["train"], data["val"], task="classify", steps=60, lr=3e-4)
    bertlab.evaluate_task(result.model, tokenizer, data["test"], task="classify")    # {"accuracy": ...}

The recipe is the paper's (section 4, appendix A.3): a new output layer on the pre-trained encoder, every
parameter trained end to end with AdamW (weight decay 0.01, none on biases and LayerNorm), linear warm-up
over the first 10 % of the steps then linear decay, gradient clipping at 1.0, dropout as the model's config
says, each batch padded only to its own longest row. The optimizer, schedule and clipping are
`bertlab.optim`'s, the same functions `bertlab.pretrain` steps with.
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import asdict, dataclass, field

import torch
from tqdm.auto import tqdm

from ..checkpoint import load
from ..model.bert import Bert
from ..optim import NonFiniteLoss, adamw, clip, lr_at, set_lr, stop_if_not_finite
from ..probe.running import check_pair
from ..settings import Range, setting
from ..utils import default_device, set_seed
from . import checks
from .metrics import choose_tau, evaluate_task, qa_scores
from .tasks import HEADS, METRIC, encode, make_head

log = logging.getLogger("bertlab")
WHOLE_1 = dict(whole=True, low=1)


@dataclass
class FineTuneSettings:
    """Everything that decides a fine-tuning run's numbers (with the data and the starting weights).

    Each field carries its help and the range in which it means something (bertlab/settings.py): `finetune`
    checks the values against them (`checks.check_settings`) and `bertlab finetune` makes its flags from them,
    so the defaults, the ranges, the messages and `--help` are one list.
    """
    task: str = setting(help="classify, tag, qa or choice")
    steps: int = setting(100, "optimizer steps", range=Range(**WHOLE_1, what="optimizer steps"))
    lr: float = setting(3e-4, "peak learning rate",
                        range=Range(low=0, low_ok=False, what="the peak learning rate, e.g. 3e-4"))
    batch_size: int = setting(16, "records per optimizer step",
                              range=Range(**WHOLE_1, what="records per step (a choice record counts once, with its "
                                                          "endings)"))
    seed: int = setting(0, "the random seed (the new head's weights, the order of the records)",
                        range=Range(whole=True, low=0, high=2**63 - 1, high_ok=True, what="the random seed"))
    warmup: float = setting(0.1, "the share of the steps spent warming up linearly, then linear decay to zero",
                            range=Range(low=0, high=1, what="the share of the steps spent warming up, e.g. 0.1"))
    weight_decay: float = setting(0.01, "AdamW's weight decay, not applied to biases and LayerNorm",
                                  range=Range(low=0, what="AdamW's weight decay, e.g. 0.01 (a negative one grows "
                                                          "the weights)"))
    eps: float = setting(1e-6, "AdamW's epsilon (Google's BERT: 1e-6; PyTorch's default: 1e-8)",
                         range=Range(low=0, low_ok=False, what="AdamW's epsilon, e.g. 1e-6"))
    clip: float | None = setting(1.0, "gradient-norm clipping threshold (None in Python: no clipping)",
                                 range=Range(low=0, low_ok=False, optional=True,
                                             what="the gradient-norm threshold, e.g. 1.0, or None for no clipping "
                                                  "(a negative one reverses the gradient)"))
    eval_every: int | None = setting(None, "score val every N steps too (it is always scored at the end)",
                                     range=Range(**WHOLE_1, optional=True,
                                                 what="steps between scores on val, or None for the end only"))
    max_length: int | None = setting(None, "cut longer inputs to this many tokens (None: cut nothing; an input "
                                           "longer than the model's positions is refused)",
                                     range=Range(whole=True, low=3, optional=True,
                                                 what="tokens an input is cut to, or None to cut nothing ([CLS] A "
                                                      "[SEP] B [SEP] needs 3 of them)"))


@dataclass
class FineTuneResult:
    """What `finetune` returns: the fine-tuned `model` (its task head on the encoder, in eval mode), the
    `history` of the run (training loss every step; the validation metric at each evaluation), the `settings`,
    the label names when the labels were strings (`labels`), and for QA the no-answer threshold `tau` chosen
    on the validation set (0 without one)."""
    model: torch.nn.Module
    settings: FineTuneSettings
    history: list[dict] = field(default_factory=list)
    labels: list | None = None
    tau: float = 0.0

    @property
    def metric(self) -> str:
        return METRIC[self.settings.task]

    def evaluate(self, tokenizer, records) -> dict:
        """`evaluate_task` with this run's task, label names and (QA) threshold."""
        return evaluate_task(self.model, tokenizer, records, task=self.settings.task, tau=self.tau, names=self.labels)

    def to_dict(self) -> dict:
        return {"settings": asdict(self.settings), "history": self.history, "labels": self.labels, "tau": self.tau}


def finetune(model, tokenizer, train, val=None, *, task: str, steps: int = 100, lr: float = 3e-4,
             batch_size: int = 16, seed: int = 0, progress: bool = False, callbacks=(), device=None,
             **options) -> FineTuneResult:
    """Fine-tune `model` on `train` records of `task` ("classify", "tag", "qa", "choice"); see the module doc.

    `model`: a bertlab model with any head (its encoder is used; a new task head is put on it), a bare
    `Bert`, a model that already has this task's head (trained further as it is), or a name or folder for
    `bertlab.load`. The model passed in is not changed: the run trains a copy. `val`: records scored at the
    end (and every `eval_every` steps) into `history`; for QA it also chooses the no-answer threshold τ.
    `batch_size` counts records (a choice record is all its endings). Options: the other fields of
    `FineTuneSettings` (warmup, weight_decay, eps, clip, eval_every, max_length). `callbacks` are called with
    each history entry.

    Everything is checked before the first step (checks.py: settings, the records and labels of both splits,
    what the tokenizer makes of them), and a loss or gradient that stops being finite stops the run before
    its update with `NonFiniteLoss`, as `pretrain` does; the run up to there is on the error's `.result`.
    """
    result = prepare(model, tokenizer, train, val, task=task, steps=steps, lr=lr, batch_size=batch_size, seed=seed,
                     progress=progress, callbacks=callbacks, device=device, **options)
    _train(result, tokenizer, train, val, progress, callbacks)
    return result


def prepare(model, tokenizer, train, val=None, *, task: str, steps: int = 100, lr: float = 3e-4,
            batch_size: int = 16, seed: int = 0, progress: bool = False, callbacks=(), device=None,
            **options) -> FineTuneResult:
    """`finetune` up to its first step: every check, and the run with its new head, not trained yet.

    For a caller with more to check against the head before training (the CLI's --test file): then `_train`.
    """
    unknown = set(options) - set(FineTuneSettings.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown finetune option(s): {', '.join(sorted(map(str, unknown)))}; the options are "
                         f"{', '.join(f for f in FineTuneSettings.__dataclass_fields__ if f not in ('task', 'steps', 'lr', 'batch_size', 'seed'))}")
    s = FineTuneSettings(task=task, steps=steps, lr=lr, batch_size=batch_size, seed=seed, **options)
    checks.check_settings(s)
    checks.check_call(progress, callbacks)
    checks.check_tokenizer(tokenizer)
    if device is not None:
        device = default_device(device)        # a device this machine lacks: a ValueError naming those it has
    checks.check_records(task, train, "train")
    if val is not None:
        checks.check_records(task, val, "val")
    names, n = checks.label_space(task, train)
    if val is not None:
        checks.check_labels(task, val, names, n, "val", against=checks.split_name(train, "train"))
    if isinstance(model, (str, os.PathLike)):
        if not str(model).strip():
            raise ValueError("model is an empty name: pass a model (from bertlab.load), a name such as "
                             "'bertlab-mini', or a checkpoint folder")
        model, own = load(model, device=device or "cpu", model_class=Bert)
        _warn_if_foreign(own, tokenizer)
    bert = _encoder(task, model)
    check_pair(bert, tokenizer)        # more tokens than embeddings: an error; fewer: a warning
    positions = bert.config.max_position_embeddings
    if s.max_length is not None and s.max_length > positions:
        raise ValueError(f"max_length={s.max_length} is more than the model's {positions} positions: pass "
                         f"max_length={positions} or less")
    checks.check_encodable(task, train, tokenizer, positions, "train", s.max_length)
    if val is not None:
        checks.check_encodable(task, val, tokenizer, positions, "val")
    set_seed(seed)                                   # the new head's weights
    head = _task_model(task, model, bert, n, names)
    if device is not None:
        head = head.to(device)
    return FineTuneResult(head, s, labels=names)


def _warn_if_foreign(own, tokenizer) -> None:
    """A model given by name or folder came with its own tokenizer: say so when `tokenizer` is another one."""
    given, mine = tokenizer.get_vocab(), own.get_vocab()
    moved = sum(1 for token, i in given.items() if mine.get(token) != i)
    if moved or len(given) != len(mine):
        log.warning("the tokenizer is not the model's own: %d of its %d tokens are missing from the model's "
                    "vocabulary or have another id there, so the model reads those ids as other words (use "
                    "the tokenizer bertlab.load gives with the model)", moved, len(given))


def _encoder(task: str, model) -> Bert:
    """The `Bert` under `model` (a bertlab model: a Bert or any head on one)."""
    bert = model if isinstance(model, Bert) else getattr(model, "bert", None)
    if not isinstance(bert, Bert):
        raise ValueError(f"finetune needs a bertlab model (a Bert or any head on one) or a name for bertlab.load, "
                         f"got {type(model).__name__}")
    return bert


def _task_model(task: str, model, bert: Bert, n: int | None, names):
    """A copy of `model` with `task`'s head: kept if it already is that head, else a new head on its encoder."""
    n = len(names) if names is not None else n
    if isinstance(model, HEADS[task]) and (task not in ("classify", "tag") or model.num_labels == n):
        return copy.deepcopy(model)
    if isinstance(model, HEADS[task]):      # this task's head, but for another number of labels: say it is replaced
        log.warning("the model's %s head has %d outputs but the labels of train need %d, so a new head replaces it "
                    "and its trained weights are not used (give every label the head was trained on, in its "
                    "numbering, to train it further)", task, model.num_labels, n)
    if bert.pooler is None and task in ("classify", "choice"):
        raise ValueError(f"{task} reads the pooled [CLS] output, but this encoder has no pooler: load the model "
                         "with its pooler (bertlab.load(name, model_class=bertlab.Bert))")
    return make_head(task, copy.deepcopy(bert), n)


def _train(result: FineTuneResult, tokenizer, train, val, progress: bool, callbacks) -> None:
    s, model = result.settings, result.model
    warmup = max(1, int(s.steps * s.warmup + 1e-9)) if s.warmup else 0
    generator = torch.Generator().manual_seed(s.seed)          # the order of the examples
    optimizer = adamw(model, s.lr, s.weight_decay, s.eps)
    model.train()
    order: list[int] = []
    bar = tqdm(total=s.steps, disable=not progress, desc=f"finetune {s.task}", unit="step", dynamic_ncols=True)
    try:
        for step in range(s.steps):
            if len(order) < s.batch_size:                     # a fresh shuffle every epoch
                order += torch.randperm(len(train), generator=generator).tolist()
            batch = encode(s.task, [train[j] for j in order[:s.batch_size]], tokenizer, result.labels, s.max_length)
            del order[:s.batch_size]
            batch.pop("encodings", None)
            lr = set_lr(optimizer, lr_at(step, s.steps, warmup, s.lr))
            loss = model(**{k: v.to(model.device) for k, v in batch.items()}).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = clip(model, s.clip)
            entry = {"step": step + 1, "loss": loss.item(), "lr": lr}
            _stop_if_not_finite(result, entry, grad_norm)      # before the update: the weights stay good
            optimizer.step()
            if val is not None and ((s.eval_every and (step + 1) % s.eval_every == 0) or step + 1 == s.steps):
                entry.update(_validate(result, tokenizer, val))
                model.train()
            result.history.append(entry)
            for cb in callbacks:
                cb(entry)
            bar.update(1)
            bar.set_postfix(loss=f"{entry['loss']:.3f}", refresh=False)
    finally:
        bar.close()
    model.eval()


def _stop_if_not_finite(result: FineTuneResult, entry: dict, grad_norm) -> None:
    numbers = {"loss": entry["loss"]} | ({"gradient norm": float(grad_norm)} if grad_norm is not None else {})
    s = result.settings
    try:
        stop_if_not_finite(entry["step"], numbers, f"the run up to step {entry['step'] - 1} is on this error's "
                           f".result. Fine-tune again with a lower lr ({s.lr:g} now), a longer warmup ({s.warmup:g} "
                           f"now) or a lower clip ({s.clip} now)")
    except NonFiniteLoss as e:
        result.model.eval()
        e.result = result
        raise


def _validate(result: FineTuneResult, tokenizer, val) -> dict:
    """The validation metric, prefixed "val_"; for QA, τ is chosen on these questions first."""
    result.model.eval()                              # dropout off: scores, and τ, from the model as it is
    if result.settings.task == "qa":
        result.tau = choose_tau(qa_scores(result.model, tokenizer, val))
    scores = evaluate_task(result.model, tokenizer, val, task=result.settings.task, tau=result.tau, names=result.labels)
    return {f"val_{k}": v for k, v in scores.items()}
