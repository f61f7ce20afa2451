"""What training changed inside: two checkpoints of one architecture, compared on the same texts.

    d = diff(model_a, model_b, tokenizer, texts)     # a = the base (before), b = after fine-tuning / more training
    d.attention          # (layers, heads): share of attention that moved, 0 … 1
    d.residual           # (layers + 1,): relative change of the residual stream, row 0 the embedding output
    d.residual_cls       # (layers + 1,): the same at [CLS] alone, which a sentence classifier reads
    d.lens[:10]          # the tokens the mean difference promotes, read through a's MLM head, best first

Attention: for each head and each query token, half the L1 distance between the two rows (the total variation
distance: the share of the row's weight that went elsewhere), averaged over the real tokens of every text.
Residual: at each layer, the mean over tokens of ‖h_b − h_a‖ divided by the mean ‖h_a‖; `residual_cls` the same
at the [CLS] position alone. Where the change sits says something about the task: a sentence classifier's loss
reads only [CLS] (through the pooler), a tagger's reads every other token.

The lens is the activation-difference lens of Minder et al. (ICLR 2026), made for an encoder. They average
h_tuned − h_base over text unrelated to the fine-tuning and read the mean through the unembedding: the tokens
it promotes tend to name what the model was tuned on. An MLM has its read-out built in, so here δ is the
mean difference of the last layer's states over the texts' real tokens, and a token's score is how much
adding δ to the base's own states raises its log-probability under the base's MLM head, averaged over the
same tokens: mean_i [log p_a(token | h_a,i + δ) − log p_a(token | h_a,i)]. (The head is not linear, so δ is
read where the base's states live, not at zero.) A base without an MLM head gives `lens = None`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import files
from ..probe._checks import check_texts
from ..probe.running import base_model, check_pair, has_mlm_head, inference, max_length, mlm_head

__all__ = ["ModelDiff", "LensToken", "diff"]

FORMAT = "bertlab-model-diff/1"
MAX_FILE_BYTES = 64 * 2**20    # a diff file is kilobytes; a bigger one is not ours, and is refused before it is read
BATCH_SIZE = 16
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
LENS_ROWS = 4096      # token states the lens reads (a seeded sample when the texts have more)


@dataclass
class LensToken:
    """A token the mean difference promotes, and by how much (mean rise in log-probability, nats)."""
    token: str
    score: float

    def __iter__(self):
        return iter((self.token, self.score))


@dataclass
class ModelDiff:
    """What changed from model a to model b: attention moved per head, residual change per layer, and the lens
    (see the module docstring), measured on `n_texts` texts, `n_tokens` real tokens; `names` of the two models."""
    attention: torch.Tensor              # (layers, heads)
    residual: torch.Tensor               # (layers + 1,)
    lens: list[LensToken] | None
    n_texts: int
    n_tokens: int
    names: tuple[str, str] = ("a", "b")
    residual_cls: torch.Tensor | None = None   # (layers + 1,), or None in a file written without it

    def top_heads(self, n: int = 5) -> list[tuple[int, int, float]]:
        """The `n` heads whose attention moved most: (layer, head, share moved), largest first."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int of at least 1, got {n!r}")
        L, H = self.attention.shape
        order = self.attention.flatten().argsort(descending=True)[:n].tolist()
        return [(i // H, i % H, float(self.attention.flatten()[i])) for i in order]

    def lens_tokens(self, n: int = 10) -> list[str]:
        """The first `n` tokens of the lens (an empty list when there is no lens)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int of at least 1 (lens tokens to list), got {n!r}")
        return [t.token for t in (self.lens or [])[:n]]

    def to_json(self) -> dict:
        return {"format": FORMAT, "names": list(self.names), "n_texts": self.n_texts, "n_tokens": self.n_tokens,
                "attention": [[round(float(x), 6) for x in row] for row in self.attention],
                "residual": [round(float(x), 6) for x in self.residual],
                "residual_cls": None if self.residual_cls is None else [round(float(x), 6) for x in self.residual_cls],
                "lens": None if self.lens is None else [[t.token, round(t.score, 6)] for t in self.lens]}

    def save(self, path) -> Path:
        """Write the diff as a small JSON file (atomically; a link or a folder there is refused)."""
        path = files.path_to_write(path, "a model-diff file")
        files.replace_text(path, json.dumps(self.to_json(), ensure_ascii=False, indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path) -> "ModelDiff":
        """Read a file written by `save`."""
        path = files.path_to_read(path, "a model-diff file", "`ModelDiff.save`")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:               # a diff is layers × heads numbers and a few tokens: kilobytes
            raise ValueError(f"{path} holds {size / 2**20:.0f} MiB, far more than a model-diff file (at most "
                             f"{MAX_FILE_BYTES // 2**20} MiB): pass the file ModelDiff.save wrote")
        text = files.read_text(path, "a model-diff file")
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError(f"it holds a JSON {type(data).__name__}, not the object ModelDiff.save writes")
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
            att = torch.tensor(data["attention"], dtype=torch.float32)
            res = torch.tensor(data["residual"], dtype=torch.float32)
            if att.dim() != 2 or res.shape != (att.shape[0] + 1,):
                raise ValueError("attention must be (layers, heads) and residual (layers + 1,)")
            lens = None if data["lens"] is None else [LensToken(str(t), float(s)) for t, s in data["lens"]]
            at_cls = data.get("residual_cls")
            at_cls = None if at_cls is None else torch.tensor(at_cls, dtype=torch.float32)
            if at_cls is not None and at_cls.shape != res.shape:
                raise ValueError("residual_cls must have the shape of residual, (layers + 1,)")
            names = data["names"]
            if not (isinstance(names, list) and len(names) == 2 and all(isinstance(x, str) and x for x in names)):
                raise ValueError(f"names must be two non-empty str, got {names!r}")
            if att.numel() == 0:
                raise ValueError("attention holds no head")
            if not all(bool(torch.isfinite(t).all()) for t in (att, res) + (() if at_cls is None else (at_cls,))):
                raise ValueError("it holds nan or inf, which diff never writes")
            if lens is not None and not all(math.isfinite(t.score) for t in lens):
                raise ValueError("a lens score is nan or inf, which diff never writes")
            return cls(att, res, lens, int(data["n_texts"]), int(data["n_tokens"]), tuple(data["names"]), at_cls)
        except RecursionError:                  # json's parser on thousands of nested brackets
            raise ValueError(f"{path} is not a bertlab model-diff file (its JSON nests too deep): write it with "
                             "ModelDiff.save") from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path} is not a bertlab model-diff file ({e}): write it with ModelDiff.save") from None

    def __str__(self) -> str:
        a, b = self.names
        heads = ", ".join(f"L{l}H{h} {s:.2f}" for l, h, s in self.top_heads(3))
        res = " ".join(f"{x:.3f}" for x in self.residual.tolist())
        if self.residual_cls is not None:
            res += "; at [CLS]: " + " ".join(f"{x:.3f}" for x in self.residual_cls.tolist())
        lens = "no lens (the base has no MLM head)" if self.lens is None else ", ".join(self.lens_tokens(10))
        return (f"{a} → {b} on {self.n_texts} texts ({self.n_tokens} tokens)\n"
                f"attention moved most: {heads}\nresidual change per layer: {res}\nlens: {lens}")


def _same_shape(a, b) -> None:
    ca, cb = base_model(a).config, base_model(b).config
    for field in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        if getattr(ca, field) != getattr(cb, field):
            raise ValueError(f"the two models differ in {field} ({getattr(ca, field)} and {getattr(cb, field)}): "
                             "diff compares two checkpoints of one architecture (a model and its fine-tuned copy, "
                             "or two snapshots of one pre-training run)")


def diff(model_a, model_b, tokenizer, texts, top_k: int = 30, names=("a", "b")) -> ModelDiff:
    """Compare `model_b` with the base `model_a` on `texts` (see the module docstring); `top_k` lens tokens.

    Use text unrelated to the fine-tuning for the lens (the bundled corpus's held-out prose is a good
    default): on the tuning data itself the difference says what the inputs are, not what changed.
    Each model's mode is restored afterwards; the weights are only read.
    """
    bert_a, bert_b = base_model(model_a), base_model(model_b)
    _same_shape(model_a, model_b)
    check_pair(model_a, tokenizer)
    check_pair(model_b, tokenizer)
    texts = check_texts(texts, "texts")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1 (lens tokens to keep), got {top_k!r}")
    if (not isinstance(names, (tuple, list)) or len(names) != 2
            or not all(isinstance(n, str) and n for n in names)):
        raise ValueError(f"names must be two non-empty str (the base's and the other's), got {names!r}")
    L, H = bert_a.config.num_hidden_layers, bert_a.config.num_attention_heads
    moved = torch.zeros(L, H, dtype=torch.float64)
    dist = torch.zeros(L + 1, dtype=torch.float64)
    norm = torch.zeros(L + 1, dtype=torch.float64)
    dist_cls = torch.zeros(L + 1, dtype=torch.float64)
    norm_cls = torch.zeros(L + 1, dtype=torch.float64)
    delta = torch.zeros(bert_a.config.hidden_size, dtype=torch.float64)
    last_a: list[torch.Tensor] = []
    n = 0
    limit = min(max_length(model_a, tokenizer), max_length(model_b, tokenizer))
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    with inference(model_a), inference(model_b):
        for s in range(0, len(order), BATCH_SIZE):
            batch = tokenizer.batch([texts[i] for i in order[s:s + BATCH_SIZE]], max_length=limit)
            outs = []
            for bert in (bert_a, bert_b):
                outs.append(bert(**{k: getattr(batch, k).to(bert.device) for k in INPUTS},
                                 output_attentions=True, output_hidden_states=True))
            real = batch.attention_mask.bool()                                       # (B, T)
            for l in range(L):
                pa, pb = (o.attentions[l].double().cpu() for o in outs)              # (B, heads, T, T)
                tv = 0.5 * (pa - pb).abs().sum(-1)                                   # (B, heads, T): per query
                moved[l] += (tv * real[:, None]).sum((0, 2))
            for l in range(L + 1):
                ha, hb = (o.hidden_states[l].double().cpu()[real] for o in outs)     # (n, H)
                dist[l] += (hb - ha).norm(dim=-1).sum()
                norm[l] += ha.norm(dim=-1).sum()
                ca, cb = (o.hidden_states[l][:, 0].double().cpu() for o in outs)    # (B, H): [CLS]
                dist_cls[l] += (cb - ca).norm(dim=-1).sum()
                norm_cls[l] += ca.norm(dim=-1).sum()
            ha, hb = (o.last_hidden_state.double().cpu()[real] for o in outs)
            delta += (hb - ha).sum(0)
            last_a.append(ha.float())
            n += int(real.sum())
    attention = (moved / n).float()
    residual = (dist / norm.clamp_min(1e-12)).float()
    residual_cls = (dist_cls / norm_cls.clamp_min(1e-12)).float()
    if not all(bool(torch.isfinite(t).all()) for t in (attention, residual, residual_cls)):
        raise ValueError("the comparison came out nan or inf: one of the models returns inf or nan on these texts "
                         "(check its weights)")
    lens = None
    if has_mlm_head(model_a):
        delta = (delta / n).float()
        states = torch.cat(last_a)
        if len(states) > LENS_ROWS:
            states = states[torch.randperm(len(states), generator=torch.Generator().manual_seed(0))[:LENS_ROWS]]
        head = mlm_head(model_a)
        rise = torch.zeros(tokenizer.vocab_size, dtype=torch.float64)
        with inference(model_a):
            for chunk in states.split(256):
                chunk = chunk.to(bert_a.device)
                before = head(chunk).float().log_softmax(-1)[:, :tokenizer.vocab_size]
                after = head(chunk + delta.to(chunk.device)).float().log_softmax(-1)[:, :tokenizer.vocab_size]
                rise += (after - before).double().sum(0).cpu()
        rise /= len(states)
        special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id}
        ranked = [i for i in rise.argsort(descending=True).tolist() if i not in special][:top_k]
        lens = [LensToken(tokenizer.id_to_token(i), float(rise[i])) for i in ranked]
        if not all(math.isfinite(t.score) for t in lens):
            raise ValueError("the lens came out non-finite: one of the models returns inf or nan on these texts")
    return ModelDiff(attention, residual, lens, len(texts), n, tuple(names), residual_cls)
