"""Sparse autoencoders on one layer of an encoder: features, not neurons.

    sae = train_sae(model, tokenizer, layer=3, width=3072, k=32, steps=2000)    # the bundled corpus
    sae_report(model, tokenizer, sae, texts)      # fvu, l0, dead, and the MLM loss with the SAE spliced in
    steer(model, tokenizer, sae, "The [MASK] was muddy.", feature=17, value=8.0)   # guesses, feature clamped

Why. A neuron of a BERT layer takes part in many unrelated things (superposition); a sparse autoencoder
rewrites each residual vector h (H numbers) as a few active *features* out of many (`width`, e.g. 8 × H),
z = TopK(ReLU(W_enc (h − b_dec) + b_enc)), ĥ = W_dec z + b_dec, trained to make ĥ close to h. The TopK
rule (Gao et al. 2024, "Scaling and evaluating sparse autoencoders") keeps exactly `k` features per token, so
sparsity is a setting, not a penalty to tune. Decoder columns are kept at unit length, so a feature's value
is its size along its direction. The input is divided by one scale (so the mean ‖h‖² is H: the learning
rate does not depend on how large a model's residual stream happens to be) and multiplied back after.

What the field reports, and `sae_report` measures: the fraction of variance unexplained (FVU: ‖h − ĥ‖²
over ‖h − mean h‖²), L0 (active features per token: k, by construction), dead features (never active on the
report's texts), and, because a good reconstruction in squared error can still break the model, the MLM loss
and top-1 with ĥ spliced in place of h, beside the clean model and beside zeroing the layer (InterPLM reports
the same for ESM-2). The honest caveats come with it: an autoencoder trained on a *randomly initialised* model
of the same shape also finds sparse, tidy-looking features (arXiv 2501.17727), and a plain linear probe on h
often beats one on the features; study.py measures both for bertlab-mini.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn

from .. import files
from ..model.heads import IGNORE
from ..probe._checks import check_texts
from ..probe.fill_mask import Guess
from ..probe.running import base_model, inference, max_length, mlm_head
from .residual import check_layer, hook_name, masked_batches, residual_stream

__all__ = ["SparseAutoencoder", "train_sae", "SAEReport", "sae_report", "steer", "steered_probabilities", "FORMAT"]

FORMAT = "bertlab-sae/1"


def _positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value!r}")
    return value


def _as_int(value) -> int | None:
    """An integer of any kind (int, numpy's, a 0-d integer tensor) as an int; None for anything else (bool too)."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and (value.dim() or value.is_floating_point())):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _as_float(value) -> float | None:
    """A real number of any kind (int, float, numpy's, a 0-d tensor) as a float; None for anything else."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dim()):
        return None
    if isinstance(value, (numbers.Real, torch.Tensor)):
        return float(value)
    return None


class SparseAutoencoder(nn.Module):
    """A TopK sparse autoencoder for the residual stream at `layer` (0 = embeddings, as hidden_states).

    `encode(h)` (..., d_model) → (..., width), exactly `k` non-negative values per row, the rest zero;
    `decode(z)` → (..., d_model); `sae(h)` is decode(encode(h)).
    """

    def __init__(self, d_model: int, width: int, k: int, layer: int):
        super().__init__()
        self.d_model, self.width = _positive_int("d_model", d_model), _positive_int("width", width)
        self.k, self.layer = _positive_int("k", k), _positive_int("layer", layer, minimum=0)
        if k > width:
            raise ValueError(f"k = {k} features per token cannot exceed the width {width}: choose k ≤ width "
                             "(a few percent of it is usual, e.g. k = 32 of 3072)")
        self.W_dec = nn.Parameter(F.normalize(torch.randn(d_model, width), dim=0))   # (H, F) unit columns
        self.W_enc = nn.Parameter(self.W_dec.detach().t().clone())                   # (F, H) starts as W_decᵀ
        self.b_enc = nn.Parameter(torch.zeros(width))
        self.b_dec = nn.Parameter(torch.zeros(d_model))
        self.register_buffer("scale", torch.ones(()))               # inputs are divided by it (mean ‖h‖² = H)
        self.register_buffer("max_activation", torch.zeros(width))  # each feature's largest value in training

    @property
    def hook_name(self) -> str:
        return hook_name(self.layer)

    def _check(self, h: torch.Tensor) -> None:
        if not isinstance(h, torch.Tensor) or not h.is_floating_point() or h.shape[-1:] != (self.d_model,):
            shape = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
            raise ValueError(f"encode takes floating-point residual vectors of size {self.d_model} in the last "
                             f"dimension, (..., {self.d_model}); got {shape}")
        if not bool(torch.isfinite(h).all()):
            raise ValueError("the residual vectors hold nan or inf, so every feature would be nan: the model that "
                             "produced them computes nan (check its weights), or the tensor was not filled")

    # Each computes where the autoencoder's weights are and answers on the device of what it was given: a
    # shipped autoencoder (loaded on the CPU) reads a model that `bertlab.load` put on CUDA, inside its hooks.

    def pre_activations(self, h: torch.Tensor) -> torch.Tensor:
        """W_enc (h − b_dec)/scale + b_enc, before ReLU and TopK: (..., width), on h's device."""
        self._check(h)
        x = (h.to(device=self.W_enc.device, dtype=self.W_enc.dtype) - self.b_dec) / self.scale
        return F.linear(x, self.W_enc, self.b_enc).to(h.device)

    def encode(self, h: torch.Tensor) -> torch.Tensor:
        pre = self.pre_activations(h)
        values, indices = pre.topk(self.k, dim=-1)                                 # (..., k)
        return torch.zeros_like(pre).scatter(-1, indices, values.relu())            # (..., width)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        if not isinstance(z, torch.Tensor) or z.shape[-1:] != (self.width,):
            shape = tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__
            raise ValueError(f"decode takes feature vectors of size {self.width}, (..., {self.width}); got {shape}")
        x = F.linear(z.to(device=self.W_dec.device, dtype=self.W_dec.dtype), self.W_dec)
        return (x * self.scale + self.b_dec).to(z.device)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(h))

    def direction(self, feature: int) -> torch.Tensor:
        """The feature's unit decoder direction in the residual stream's own units: (d_model,)."""
        return self.W_dec[:, self.check_feature(feature)].detach()

    def check_feature(self, feature) -> int:
        feature = _as_int(feature)
        if feature is None or not -self.width <= feature < self.width:
            raise ValueError(f"feature must be an int in 0 … {self.width - 1} (this autoencoder has {self.width} "
                             f"features), got {feature!r}")
        return feature % self.width

    # ---- files ------------------------------------------------------------------------------

    def save(self, path, dtype: torch.dtype = torch.float32) -> Path:
        """Write the weights and settings to one safetensors file, atomically (a link or folder is refused).
        `dtype=torch.float16` halves the file, for shipping; `load` computes in float32 either way."""
        if dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"dtype must be torch.float32, torch.float16 or torch.bfloat16, got {dtype!r}")
        path = files.path_to_write(path, "an autoencoder file")
        meta = {"format": FORMAT, "d_model": str(self.d_model), "width": str(self.width), "k": str(self.k),
                "layer": str(self.layer)}
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        try:
            save_file({k: v.detach().to(dtype).contiguous().cpu() for k, v in self.state_dict().items()}, str(tmp),
                      metadata=meta)
            os.chmod(tmp, files.umask_mode())     # safetensors writes 0600; a colleague must read it as any file
            os.replace(tmp, path)
        except (SafetensorError, OSError) as e:
            tmp.unlink(missing_ok=True)
            raise OSError(f"{path} could not be written ({e}); nothing was written there: free some space or "
                          "choose a folder you can write") from None
        return path

    @classmethod
    def load(cls, path) -> "SparseAutoencoder":
        """Read a file written by `save` (float16 or float32 weights; computed in float32)."""
        path = files.path_to_read(path, "an autoencoder file", "`sae.save(path)`")
        try:                                    # the header only: no tensor is read before it is checked
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
        except (SafetensorError, OSError, ValueError) as e:
            raise ValueError(f"{path} is not a readable autoencoder file ({e}): write it with sae.save(path)") from None
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path} is not a bertlab autoencoder file (format {meta.get('format')!r}, expected "
                             f"{FORMAT!r}): write it with sae.save(path) from this version of bertlab")
        # the settings must describe the tensors before they size anything: an edited header could ask for GBs
        said = tuple(meta.get(k, "") for k in ("d_model", "width"))
        found = shapes.get("W_dec")
        if found is None or tuple(str(n) for n in found) != said:
            raise ValueError(f"{path}: its settings (d_model {said[0]!r}, width {said[1]!r}) do not match its decoder "
                             f"W_dec ({found or 'missing'}): the file is damaged or was edited; write it again with "
                             "sae.save(path)")
        try:
            sae = cls(int(meta["d_model"]), int(meta["width"]), int(meta["k"]), int(meta["layer"]))
        except (KeyError, ValueError) as e:
            raise ValueError(f"{path} has unreadable settings ({e}): write it again with sae.save(path)") from None
        expected = {k: tuple(v.shape) for k, v in sae.state_dict().items()}
        if expected != shapes:                  # an extra or oversized tensor is refused unread
            raise ValueError(f"{path} holds tensors {shapes}, but its settings call for {expected}: the file is "
                             "damaged or was edited; write it again with sae.save(path)")
        try:
            with safe_open(str(path), framework="pt") as f:
                tensors = {k: f.get_tensor(k) for k in shapes}
        except (SafetensorError, OSError, ValueError) as e:
            raise ValueError(f"{path} is not a readable autoencoder file ({e}): write it with sae.save(path)") from None
        for k, v in tensors.items():
            if not v.is_floating_point() or not bool(torch.isfinite(v).all()):
                what = f"{v.dtype} values" if not v.is_floating_point() else "nan or inf"
                raise ValueError(f"{path}: the tensor {k} holds {what}, which sae.save never writes: the file is "
                                 "damaged or was edited; write it again with sae.save(path)")
        sae.load_state_dict({k: v.float() for k, v in tensors.items()})
        return sae.eval().requires_grad_(False)

    def extra_repr(self) -> str:
        return f"layer={self.layer}, d_model={self.d_model}, width={self.width}, k={self.k}"


def check_sae(model, sae) -> SparseAutoencoder:
    if not isinstance(sae, SparseAutoencoder):
        raise ValueError(f"sae must be a SparseAutoencoder (from train_sae or SparseAutoencoder.load), got "
                         f"{type(sae).__name__}")
    cfg = base_model(model).config
    if sae.d_model != cfg.hidden_size or sae.layer > cfg.num_hidden_layers:
        raise ValueError(f"this autoencoder reads layer {sae.layer} of a {sae.d_model}-wide model, but the model is "
                         f"{cfg.hidden_size} wide with {cfg.num_hidden_layers} layers: use the model it was trained on")
    return sae


# ---- training ----------------------------------------------------------------------------------

def train_sae(model, tokenizer, texts=None, *, layer: int, width: int, k: int, steps: int, seed: int = 0,
              batch_size: int = 1024, lr: float | None = None, max_tokens: int | None = None,
              progress: bool = False, callback=None) -> SparseAutoencoder:
    """Train a TopK autoencoder on the residual stream of `model` at `layer` over `texts` (the bundled corpus,
    244 k tokens, by default), `steps` Adam steps on `batch_size` random rows each, every draw seeded by `seed`.

    `lr` defaults to Gao et al.'s rule, 2e-4 / sqrt(width / 16384). `callback(step, loss)` is called after
    each step (a list of losses is the training curve). The model is only read (eval mode, no gradients).
    The autoencoder trains on the model's device and stays there (`.cpu()` it, or `save` it, to ship it);
    its random draws come from one CPU generator, so a seed gives the same rows on any device.
    """
    layer = check_layer(model, layer)
    width, k, steps = _positive_int("width", width), _positive_int("k", k), _positive_int("steps", steps)
    batch_size = _positive_int("batch_size", batch_size)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if lr is not None and (isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < 1):
        raise ValueError(f"lr must be a learning rate between 0 and 1 (e.g. 1e-3), or None for the default; got {lr!r}")
    if texts is not None:
        texts = check_texts(texts, "texts")
        # any() stops at the first text with a word in it; texts of control or zero-width characters have none
        if not any(len(tokenizer(t).input_ids) > 2 for t in texts):
            raise ValueError(f"none of the {len(texts)} texts holds a token the tokenizer keeps (only [CLS] and "
                             "[SEP] would be left): pass texts with words in them")
    d = base_model(model).config.hidden_size
    sae = SparseAutoencoder(d, width, k, layer)                 # checks k ≤ width before the slow part
    acts = residual_stream(model, tokenizer, texts, layer=layer, seed=seed,
                           **({} if max_tokens is None else {"max_tokens": max_tokens}))
    # train where the model is: the rows come back on the CPU (residual_stream keeps them there, so a corpus
    # fits in host memory while collecting) and move once; on the CPU nothing moves, so its numbers are the same
    device = base_model(model).device
    h = acts.h.to(device)                                        # (N, H)
    sae = sae.to(device)
    if not bool(torch.isfinite(h).all()):
        raise ValueError(f"the model's layer {layer} outputs nan or inf on these texts, so there is nothing to learn: "
                         "check the model's weights (a diverged training run?)")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        sae.W_dec.copy_(F.normalize(torch.randn(d, width, generator=gen), dim=0))
        sae.W_enc.copy_(sae.W_dec.t())
        sae.b_dec.copy_(h.mean(0))                               # start at the data's mean (Gao et al. use a median)
        sae.scale.fill_(float((h - h.mean(0)).pow(2).sum(-1).mean().div(d).sqrt().clamp_min(1e-6)))
    lr = lr if lr is not None else 2e-4 / math.sqrt(width / 16384)
    opt = torch.optim.Adam(sae.parameters(), lr=lr, betas=(0.9, 0.999), eps=6.25e-10)
    variance = (h - h.mean(0)).pow(2).sum(-1).mean()
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc=f"SAE layer {layer}")
    with torch.enable_grad():
        for step in range(steps):
            rows = torch.randint(len(h), (min(batch_size, len(h)),), generator=gen)   # drawn on the CPU: one stream
            x = h[rows.to(device)]                                                    # (B, H)
            loss = (sae(x) - x).pow(2).sum(-1).mean() / variance   # the batch's FVU against the corpus variance
            opt.zero_grad(set_to_none=True)
            loss.backward()
            with torch.no_grad():   # no gradient along a column's own direction: unit columns stay a fixed point
                sae.W_dec.grad -= (sae.W_dec.grad * sae.W_dec).sum(0, keepdim=True) * sae.W_dec
            opt.step()
            with torch.no_grad():
                sae.W_dec.div_(sae.W_dec.norm(dim=0, keepdim=True).clamp_min(1e-8))
            if callback is not None:
                callback(step, float(loss.detach()))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(fvu=f"{float(loss.detach()):.3f}")
    if bar is not None:
        bar.close()
    with torch.no_grad():
        top = torch.zeros(width, device=device)
        for chunk in h.split(8192):
            top = torch.maximum(top, sae.encode(chunk).max(0).values)
        sae.max_activation.copy_(top)
    sae.eval()
    return sae.requires_grad_(False)


# ---- the report --------------------------------------------------------------------------------

@dataclass
class SAEReport:
    """How well `sae` stands in for its layer on `texts` (masked as in pre-training, seeded).

    `fvu`: fraction of variance unexplained; `l0`: active features per token (mean); `dead`: features never
    active on these texts, of `width`; the MLM loss (cross-entropy on the masked tokens, nats) and top-1
    accuracy of the clean model, with ĥ spliced in at the layer, and with the layer's output set to zero.
    `loss_recovered` = (zero − spliced) / (zero − clean): 1 is as good as the model, 0 as bad as no layer.
    """
    layer: int
    width: int
    k: int
    fvu: float
    l0: float
    dead: int
    mlm_loss_clean: float
    mlm_loss_spliced: float
    mlm_loss_zero: float
    top1_clean: float
    top1_spliced: float
    top1_zero: float
    n_tokens: int
    n_masked: int

    @property
    def loss_recovered(self) -> float:
        gap = self.mlm_loss_zero - self.mlm_loss_clean
        return (self.mlm_loss_zero - self.mlm_loss_spliced) / gap if gap else float("nan")

    @property
    def dead_fraction(self) -> float:
        return self.dead / self.width

    def as_dict(self) -> dict:
        return {**asdict(self), "loss_recovered": self.loss_recovered}

    def __str__(self) -> str:
        return (f"layer {self.layer}, {self.width} features, k = {self.k}: FVU {self.fvu:.3f}, L0 {self.l0:.1f}, "
                f"dead {self.dead} ({self.dead_fraction:.1%})\n"
                f"MLM loss clean {self.mlm_loss_clean:.3f} · spliced {self.mlm_loss_spliced:.3f} · layer zeroed "
                f"{self.mlm_loss_zero:.3f} (loss recovered {self.loss_recovered:.1%})\n"
                f"top-1     clean {self.top1_clean:.1%} · spliced {self.top1_spliced:.1%} · layer zeroed "
                f"{self.top1_zero:.1%}  ({self.n_masked} masked of {self.n_tokens} tokens)")


def sae_report(model, tokenizer, sae: SparseAutoencoder, texts, seed: int = 0) -> SAEReport:
    """Measure `sae` on `texts` (see SAEReport): three forward passes per batch, hooks removed after each."""
    head = mlm_head(model)
    sae = check_sae(model, sae)
    texts = check_texts(texts, "texts")
    bert = base_model(model)
    name = sae.hook_name
    sums = dict(err=0.0, sq=torch.zeros(sae.d_model, dtype=torch.float64), s=torch.zeros(sae.d_model, dtype=torch.float64),
                n=0, l0=0.0, masked=0)
    fired = torch.zeros(sae.width, dtype=torch.bool)
    loss = {"clean": 0.0, "spliced": 0.0, "zero": 0.0}
    right = {"clean": 0, "spliced": 0, "zero": 0}

    def splice(h, _name):
        return sae(h.float()).to(h.dtype)

    def zero(h, _name):
        return torch.zeros_like(h)

    def read(h, _name):
        read.h = h.detach().float()

    sae_mode = sae.training
    sae.eval()
    try:
        with inference(model), torch.no_grad():
            for _, batch, inputs, labels in masked_batches(model, tokenizer, texts, seed):
                kw = dict(input_ids=inputs.to(bert.device), token_type_ids=batch.token_type_ids.to(bert.device),
                          attention_mask=batch.attention_mask.to(bert.device))
                labels = labels.to(bert.device)
                chosen = labels != IGNORE
                for run, fn in (("clean", read), ("spliced", splice), ("zero", zero)):
                    with bert.hooks([(name, fn)]):
                        last = bert(**kw).last_hidden_state
                    logits = head(last[chosen]).float()                              # (N, V)
                    loss[run] += float(F.cross_entropy(logits, labels[chosen], reduction="sum"))
                    right[run] += int((logits.argmax(-1) == labels[chosen]).sum())
                real = batch.attention_mask.bool().to(read.h.device)
                h = read.h[real]                                                     # (n, H)
                z = sae.encode(h)
                sums["err"] += float((sae.decode(z) - h).pow(2).sum())
                sums["s"] += h.double().sum(0).cpu()
                sums["sq"] += h.double().pow(2).sum(0).cpu()
                sums["n"] += len(h)
                sums["l0"] += float((z > 0).sum())
                fired |= (z > 0).any(0).cpu()
                sums["masked"] += int(chosen.sum())
    finally:
        sae.train(sae_mode)
    n, m = sums["n"], max(sums["masked"], 1)
    total_var = float((sums["sq"] - sums["s"].pow(2) / n).sum())
    if sums["masked"] == 0:
        raise ValueError(f"no token of the {len(texts)} texts was chosen for masking (they are too short): pass "
                         "more or longer texts, e.g. a few dozen sentences")
    return SAEReport(sae.layer, sae.width, sae.k, sums["err"] / total_var if total_var else float("nan"),
                     sums["l0"] / n, int((~fired).sum()), loss["clean"] / m, loss["spliced"] / m, loss["zero"] / m,
                     right["clean"] / m, right["spliced"] / m, right["zero"] / m, n, sums["masked"])


# ---- steering ----------------------------------------------------------------------------------

def steer(model, tokenizer, sae: SparseAutoencoder, text: str, feature: int, value: float, top_k: int = 5,
          positions="mask") -> list[Guess]:
    """The top-k guesses at the one `[MASK]` of `text` with `feature` clamped to `value` at the SAE's layer.

    Clamping edits the residual stream along the feature's direction only: h ← h + (value − z_f(h)) · d_f,
    so the autoencoder's reconstruction error stays in h, and clamping a feature to the value it already has
    changes nothing at all. `positions`: "mask" (the [MASK] only, the default) or "all" (every real token).
    The hook is removed afterwards, and the model's mode and weights are untouched.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
    probs = steered_probabilities(model, tokenizer, sae, text, feature, value, positions)
    p, ids = probs.topk(min(top_k, len(probs)))
    return [Guess(tokenizer.id_to_token(i), q) for q, i in zip(p.tolist(), ids.tolist())]


def steered_probabilities(model, tokenizer, sae: SparseAutoencoder, text: str, feature: int, value,
                          positions="mask") -> torch.Tensor:
    """The MLM head's whole distribution at the one `[MASK]` of `text`, (vocab,) on the CPU, with `feature`
    clamped to `value` as `steer` clamps it; `value=None` clamps nothing (the model as it is, the same
    forward pass without the hook). The steering view reads both, to draw every guess against its unclamped
    probability."""
    head = mlm_head(model)
    sae = check_sae(model, sae)
    feature = sae.check_feature(feature)
    number = None if value is None else _as_float(value)
    if value is not None and (number is None or not math.isfinite(number)):
        raise ValueError(f"value must be a finite number (the feature's activation to impose; 0 switches it off), "
                         f"got {value!r}")
    if positions not in ("mask", "all"):
        raise ValueError(f"positions must be 'mask' (clamp at the [MASK] only) or 'all' (every token), got {positions!r}")
    if not isinstance(text, str) or text.count("[MASK]") != 1:
        raise ValueError("text must be a str with exactly one [MASK], where the model guesses, e.g. "
                         f"'The river [MASK] was muddy.'; got {text!r:.80}")
    bert = base_model(model)
    enc = tokenizer(text, max_length=max_length(model, tokenizer))
    where = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
    if not where:
        raise ValueError(f"the [MASK] of {text!r:.60} was cut off at {len(enc.input_ids)} tokens: put it earlier, "
                         "or shorten the text")
    at = where if positions == "mask" else list(range(1, len(enc.input_ids) - 1))
    direction = sae.direction(feature)                                       # (H,)

    def clamp(h, _name):                                                     # h: (1, T, H)
        z_f = sae.encode(h.float())[..., feature]                            # (1, T)
        edit = torch.zeros_like(z_f)
        edit[0, at] = number - z_f[0, at]
        return (h.float() + edit.unsqueeze(-1) * direction.to(h.device) * sae.scale).to(h.dtype)

    with inference(model), torch.no_grad():
        with bert.hooks([(sae.hook_name, clamp)] if number is not None else []):
            last = bert(**{k: v.to(bert.device) for k, v in enc.to_tensors().items()}).last_hidden_state
        probs = head(last[0, where[0]]).float().softmax(-1)[:tokenizer.vocab_size].cpu()
    if not bool(torch.isfinite(probs).all()):
        top = float(sae.max_activation[feature])
        raise ValueError(f"with feature {feature} clamped to {number:g} the model's guesses came out nan: the value is "
                         f"too large for this model; try one near the feature's largest value in training ({top:.3g})")
    return probs


def report_json(report: SAEReport) -> str:
    return json.dumps(report.as_dict(), indent=1)
