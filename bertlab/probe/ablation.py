"""Ablating attention heads: switch some off and measure what changes.

    with ablate(model, [(0, 1)]): ...                          # head 1 of layer 0 silenced for the block
    ab = Ablation(model, tokenizer, "Tom went to the [MASK] to open a savings account.")
    ab.effect([(0, 1), (1, 3)]).guesses                        # the top guesses (Guess) with those two heads off
    head_importance(model, tokenizer, text, targets=["bank"])  # every head alone, scored

`Ablation` keeps the run with every head on, so each new set of heads costs one forward pass: that is what
lets the HeadAblation widget answer a click at once, and what `head_importance` repeats head by head.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F

from ..hooks import act_name
from .fill_mask import Guess, GuessChange
from .running import base_model, has_mlm_head, inference, max_length, mlm_head

__all__ = ["ablate", "Ablation", "AblationEffect", "head_importance", "HeadImportance"]


def _heads_by_layer(model, heads) -> dict[int, list[int]]:
    cfg = base_model(model).config
    L, A = cfg.num_hidden_layers, cfg.num_attention_heads
    if isinstance(heads, Mapping):
        pairs = [(l, h) for l, hs in heads.items() for h in ([hs] if isinstance(hs, int) else hs)]
    elif isinstance(heads, (list, tuple, set)):
        pairs = list(heads)
    else:
        raise ValueError(f"heads must be a list of (layer, head) pairs or a dict layer → [heads], "
                         f"got {type(heads).__name__}")
    by_layer: dict[int, list[int]] = {}
    for pair in pairs:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair)):
            raise ValueError(f"{pair!r} is not a (layer, head) pair of ints: write e.g. [(0, 1), (2, 3)]")
        l, h = pair
        if not -L <= l < L or not -A <= h < A:
            raise ValueError(f"head ({l}, {h}) does not exist: this model has layers 0 … {L - 1} and heads "
                             f"0 … {A - 1} in each (negative indexes count from the end, as in Python)")
        l, h = l % L, h % A                     # (-1, -1): the last head of the last layer
        by_layer.setdefault(l, [])
        if h not in by_layer[l]:
            by_layer[l].append(h)
    return by_layer


@contextlib.contextmanager
def ablate(model, heads) -> Iterator:
    """Zero the outputs of some attention heads for the body of a `with` block.

    `heads` is a list of (layer, head) pairs, or a dict layer → [heads]. Each affected layer gets one
    hook on `encoder.layer.{l}.attention.self.hook_z` (B, heads, T, Dh); all are removed on exit, even
    after an error. Zeroing z removes the head's contribution before the output projection (its bias
    stays), the usual "zero ablation".
    """
    by_layer = _heads_by_layer(model, heads)
    bert = base_model(model)

    def zero(chosen: list[int]):
        def fn(z, name):
            z = z.clone()
            z[:, chosen] = 0                                           # (B, heads, T, Dh): silence those heads
            return z
        return fn

    with bert.hooks([(act_name("z", l), zero(hs)) for l, hs in by_layer.items()]):
        yield model


# ---- one text, some heads off ---------------------------------------------------------------------------

@dataclass
class AblationEffect:
    """What switching `heads` off does to one text (`Ablation.effect`).

    metric "prediction" (a model with an MLM head and a [MASK] in the text): `baseline` and `guesses` are
    the top-k `Guess`es (token, probability) for the first [MASK] with every head on and with `heads` off,
    and `compared` lists every token of either top-k as a `GuessChange` (token, P before = every head on,
    P after = heads off), the baseline's first. metric "output" (no MLM head, or no [MASK]): `change[t]` is how far token t's last hidden state
    moved, as cosine distance; exactly 0 with no head off, not 1e-7 of rounding.
    """
    heads: list[tuple[int, int]]
    metric: str
    tokens: list[str]
    mask_positions: list[int]
    baseline: list[Guess] | None = None
    guesses: list[Guess] | None = None
    compared: list[GuessChange] | None = None
    change: torch.Tensor | None = None           # (T,)


class Ablation:
    """One text, run once with every head on (`clean`); `effect(heads)` runs it with `heads` zeroed and compares.

    `metric` is "prediction" when the model has an MLM head and the text a [MASK], else "output" (see
    `AblationEffect`). The clean run happens on first use and is kept.
    """

    def __init__(self, model, tokenizer, text: str):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text is {text!r}: pass a sentence to ablate heads on")
        self.model, self.tokenizer = model, tokenizer
        self.bert = base_model(model)
        self.enc = tokenizer(text, max_length=max_length(model, tokenizer))
        self.tokens = self.enc.tokens
        self.mask_positions = [i for i, t in enumerate(self.enc.input_ids) if t == tokenizer.mask_id]
        self.metric = "prediction" if has_mlm_head(model) and self.mask_positions else "output"

    @cached_property
    def clean(self) -> torch.Tensor:
        """The last hidden state (T, H) with every head on."""
        return self.last_hidden(())

    def last_hidden(self, heads) -> torch.Tensor:
        """The last hidden state (T, H), float32, with `heads` zeroed; the hooks live only for this call."""
        with inference(self.model), (ablate(self.model, heads) if heads else contextlib.nullcontext()):
            return self.bert(**self.enc).last_hidden_state[0].float()

    def mask_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The MLM head's logits at every [MASK] of the text, (masks, V), from a (T, H) hidden state."""
        with inference(self.model):
            return mlm_head(self.model)(hidden[self.mask_positions]).float()

    @cached_property
    def _clean_probs(self) -> torch.Tensor:
        return self.mask_logits(self.clean)[0].softmax(-1).cpu()      # (V,): the first [MASK], every head on

    def effect(self, heads=(), top_k: int = 5) -> AblationEffect:
        """Run the text with `heads` (pairs (layer, head)) zeroed: one forward pass, compared with `clean`."""
        by_layer = _heads_by_layer(self.model, heads)
        pairs = sorted((l, h) for l, hs in by_layer.items() for h in hs)
        hidden = self.last_hidden(pairs) if pairs else self.clean
        result = AblationEffect(pairs, self.metric, self.tokens, self.mask_positions)
        if self.metric == "output":
            if pairs:
                cos = F.cosine_similarity(hidden, self.clean, dim=-1).cpu()
                result.change = (1.0 - cos).clamp_min(0.0)             # (T,)
            else:
                result.change = torch.zeros(len(self.tokens))
            return result
        on = self._clean_probs
        off = self.mask_logits(hidden)[0].softmax(-1).cpu() if pairs else on
        n = min(on.shape[-1], self.tokenizer.vocab_size)   # ids past the tokenizer's have no token to show
        k = min(top_k, n)
        top_on, top_off = on[:n].topk(k).indices.tolist(), off[:n].topk(k).indices.tolist()
        word = self.tokenizer.id_to_token
        result.baseline = [Guess(word(i), float(on[i])) for i in top_on]
        result.guesses = [Guess(word(i), float(off[i])) for i in top_off]
        result.compared = [GuessChange(word(i), float(on[i]), float(off[i])) for i in dict.fromkeys(top_on + top_off)]
        return result


# ---- every head alone -------------------------------------------------------------------------------------

@dataclass
class HeadImportance:
    """How much each head matters for one text: `scores[l, h]` is the change when head h of layer l is zeroed.

    metric "mlm_loss": rise in the cross-entropy of the true words at the [MASK]s (baseline: the loss
    unablated). "prediction": drop in the probability of the unablated model's top guess at each [MASK]
    (baseline: that probability). "output": mean cosine distance between the ablated and unablated last
    hidden states over the real tokens (baseline: 0.0). With several masks the change is averaged. Larger
    means more important; a negative score means the head was in the way.
    """
    scores: torch.Tensor           # (L, heads)
    baseline: float
    metric: str
    tokens: list[str]


def _target_id(tokenizer, word: str, k: int) -> int:
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"targets[{k}] is {word!r}: give the true word for each [MASK]")
    pieces = tokenizer.tokenize(word)
    if len(pieces) == 1 and pieces[0] != "[UNK]":
        return tokenizer.token_to_id(pieces[0])
    if tokenizer.token_to_id(word) is not None:                        # a piece such as "##ing"
        return tokenizer.token_to_id(word)
    raise ValueError(f"targets[{k}] {word!r} is {len(pieces)} tokens {pieces} in this vocabulary but fills one "
                     "[MASK]: pick a word that is one token, or write one [MASK] per piece and pass the pieces")


def head_importance(model, tokenizer, text: str, targets: Sequence[str] | None = None,
                    metric: str = "auto") -> HeadImportance:
    """Score every head by zeroing it alone (see `ablate`) and measuring how much the answer changes.

    With `metric="auto"`: a text with [MASK]s and `targets` (the true word for each [MASK], in order) gives
    "mlm_loss"; [MASK]s without targets give "prediction"; anything else, or a model without an MLM head
    (MiniLM), gives "output". One forward pass per head: L × heads passes in all.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass a sentence to ablate heads on")
    metrics = ("auto", "mlm_loss", "prediction", "output")
    if metric not in metrics:
        raise ValueError(f"metric must be one of {', '.join(repr(m) for m in metrics)}, got {metric!r}")
    if targets is not None and (isinstance(targets, str) or not isinstance(targets, Sequence)):
        raise ValueError(f"targets must be a list of words, one per [MASK], got {targets!r}"
                         + (f": write [{targets!r}]" if isinstance(targets, str) else ""))
    if metric == "auto":
        metric = (("mlm_loss" if targets is not None else "prediction") if has_mlm_head(model) and "[MASK]" in text
                  else "output")
    if metric == "output" and targets is not None:
        raise ValueError("targets are scored at [MASK]s by a masked-LM head: this text or model has none "
                         "(use bertlab.load('bertlab-tiny') and a text with [MASK]), or drop targets")
    if metric != "output":
        mlm_head(model)                                                # a ValueError that says why not
    if metric == "mlm_loss" and targets is None:
        raise ValueError("metric 'mlm_loss' needs targets, the true word for each [MASK]")

    ablation = Ablation(model, tokenizer, text)
    positions = ablation.mask_positions
    if metric != "output" and not positions:
        raise ValueError(f"metric {metric!r} reads the [MASK]s, but {text!r} has none (after truncation): "
                         "put [MASK] where a word goes, or use metric='output'")
    if metric == "mlm_loss":
        if len(targets) != len(positions):
            raise ValueError(f"{text!r} has {len(positions)} [MASK](s) but {len(targets)} target(s) were "
                             "given: pass one true word per [MASK], in order")
        target_ids = torch.tensor([_target_id(tokenizer, w, k) for k, w in enumerate(targets)])

    clean = ablation.clean
    if metric == "prediction":
        top_ids = ablation.mask_logits(clean).argmax(-1).cpu()        # (masks,)

    def measure(h: torch.Tensor) -> float:
        if metric == "output":
            return float((1.0 - F.cosine_similarity(h, clean, dim=-1)).mean())
        logp = ablation.mask_logits(h).log_softmax(-1).cpu()          # (masks, V)
        if metric == "mlm_loss":
            return float(F.nll_loss(logp, target_ids))
        return float(logp.gather(1, top_ids[:, None]).exp().mean())   # P(unablated guess), averaged over masks

    cfg = ablation.bert.config
    scores = torch.zeros(cfg.num_hidden_layers, cfg.num_attention_heads)
    baseline = measure(clean) if metric != "output" else 0.0
    for l in range(cfg.num_hidden_layers):
        for h in range(cfg.num_attention_heads):
            value = measure(ablation.last_hidden([(l, h)]))
            scores[l, h] = value - baseline if metric in ("mlm_loss", "output") else baseline - value
    return HeadImportance(scores, baseline, metric, ablation.tokens)
