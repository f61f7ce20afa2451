"""Context mixing: how much each input token feeds one position's output, by six measures, scored against an
intervention.

    mix = context_mixing(model, tok, "She paid the [MASK] with her card at the shop.")
    mix.scores["value_zeroing"]          # (T,): each token's share in the [MASK]'s output
    board = mixing_scoreboard(model, tok, texts)
    board.summary                        # measure → (mean, std) Spearman against the intervention

Attention weights are the obvious answer to "which words did the [MASK] use?", and they can mislead: a head
that attends strongly to a token whose value vector is tiny moves almost nothing (Kobayashi et al. 2020),
and attention says nothing of the feed-forward blocks and residuals. The measures here, from the weights
alone to the ones that read what actually flows:

- `"attention"`: the last layer's weights from the position, averaged over heads.
- `"rollout"`: attention rollout through every layer (Abnar & Zuidema 2020; `attention_rollout`).
- `"norm"`: ‖Σ_h α^h_ij f^h(x_j)‖, the size of what token j's value vector, through each head's share of the
  output projection, adds to position i (Kobayashi et al. 2020), per layer, rolled out like attention.
- `"value_zeroing"`: zero token j's value vector in every head of a layer and measure how far position i's
  layer output moves (cosine distance; Mohebbi et al. 2023), per layer, rows normalised, then rolled out.
  It reads the whole layer (values, output projection, residual, LayerNorm, feed-forward).
- `"integrated_gradients"`: attribution of log P(target) to each input embedding (`saliency`, 16 steps).
- `"gradient"`: ‖∂ log P(target) / ∂ e_j‖, the plain gradient norm, the cheapest sensitivity.

ALTI (Ferrando et al. 2022) is not here: its layer-wise decomposition of the LayerNorm and residual needs a
per-component distance the other measures do not share, and value zeroing already reads the same parts.

The yardstick is an intervention (`patch`): blank one input token at a time (its embedding replaced by
[PAD]'s, the other tokens kept) and measure how much log P(target) at the [MASK] falls, relative to blanking
every word. A measure that ranks the tokens as this does (Spearman's ρ per sentence) tells what the model
*uses*; one that does not only tells where it looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..hooks import act_name
from ..model.attention import additive_mask
from .patching import _target_id, patch
from .running import base_model, has_mlm_head, inference, max_length, mlm_head
from .saliency import saliency

__all__ = ["context_mixing", "ContextMixing", "mixing_scoreboard", "MixingScoreboard", "MEASURES",
           "leave_one_out"]

MEASURES = ("attention", "rollout", "norm", "value_zeroing", "integrated_gradients", "gradient")


@dataclass
class ContextMixing:
    """Each measure's (T,) scores for how much every token of `tokens` feeds `position`'s output."""
    tokens: list[str]
    position: int
    target: str | None
    scores: dict[str, torch.Tensor]


def _rows_normalised(m: torch.Tensor) -> torch.Tensor:
    return m / m.sum(-1, keepdim=True).clamp_min(1e-12)


def _roll_out(per_layer: list[torch.Tensor], add_residual: bool) -> torch.Tensor:
    """Multiply per-layer (T, T) mixing matrices from the bottom up, as attention rollout does."""
    out = None
    for m in per_layer:
        m = _rows_normalised(m)
        if add_residual:
            m = 0.5 * m + 0.5 * torch.eye(m.shape[-1])
        out = m if out is None else m @ out
    return out


def _norm_based(bert, cache, T: int) -> list[torch.Tensor]:
    """Per layer (T, T): ‖Σ_h α^h_ij · W_O^h v^h_j‖ (Kobayashi et al. 2020)."""
    cfg = bert.config
    A, Dh, H = cfg.num_attention_heads, cfg.head_dim, cfg.hidden_size
    mats = []
    for l, layer in enumerate(bert.encoder.layer):
        alpha = cache["pattern", l][0].float()      # (heads, T, T)
        v = cache["v", l][0].float()                # (heads, T, Dh)
        W = layer.attention.output.dense.weight.float().view(H, A, Dh)                   # (H_out, heads, Dh)
        fv = torch.einsum("hjd,ohd->hjo", v, W)                                          # (heads, T, H): f^h(x_j)
        mixed = torch.einsum("hij,hjo->ijo", alpha, fv)                                  # (T, T, H)
        mats.append(mixed.norm(dim=-1).cpu())
    return mats


def _value_zeroing(bert, hidden_states, T: int) -> list[torch.Tensor]:
    """Per layer (T, T): cosine distance of position i's layer output when token j's values are zeroed."""
    mats = []
    rows = torch.arange(T, device=bert.device)
    for l, layer in enumerate(bert.encoder.layer):
        x = hidden_states[l].expand(T, -1, -1)                       # (T copies, T, H): copy j loses token j

        def zero_value(v, _name):                                    # v: (T copies, heads, T, Dh)
            v = v.clone()
            v[rows, :, rows] = 0
            return v

        mask = additive_mask(None, x, causal=bert.config.is_decoder)  # the model's own mask (a decoder's too)
        with bert.hooks([(act_name("v", l), zero_value)]):
            y, _ = layer(x, mask)                                    # (T copies, T, H)
        ref = hidden_states[l + 1][0]                                # (T, H)
        dist = 1 - F.cosine_similarity(y.float(), ref.float()[None], dim=-1)             # (copy j, position i)
        mats.append(dist.T.clamp_min(0).cpu())                                           # (i, j)
    return mats


def context_mixing(model, tokenizer, text: str, position: int | None = None, target: str | None = None,
                   measures: Sequence[str] = MEASURES, steps: int = 16) -> ContextMixing:
    """Every measure's score for each token of `text` feeding `position` (default: the single [MASK]).

    The two gradient measures need a masked-LM model and `target` (default: its top guess at the [MASK]);
    the other four read the encoder alone, so any model has them.
    """
    unknown = [m for m in measures if m not in MEASURES]
    if unknown or isinstance(measures, str):
        raise ValueError(f"measures must be a list drawn from {', '.join(MEASURES)}, got {measures!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str, got {text!r}")
    bert = base_model(model)
    enc = tokenizer(text)
    T = len(enc.input_ids)
    if T > max_length(model, tokenizer):
        raise ValueError(f"text is {T} tokens, more than the {max_length(model, tokenizer)} this model takes")
    masks = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
    if position is None:
        if len(masks) != 1:
            raise ValueError(f"give position= (a token index) or a text with exactly one [MASK]; found "
                             f"{len(masks)} in {text!r}")
        position = masks[0]
    if isinstance(position, bool) or not isinstance(position, int) or not -T <= position < T:
        raise ValueError(f"position must be a token index 0 … {T - 1} of {enc.tokens}, got {position!r}")
    position %= T
    gradients = [m for m in measures if m in ("integrated_gradients", "gradient")]
    if gradients and not has_mlm_head(model):
        raise ValueError(f"{', '.join(gradients)} attribute log P(target) at a [MASK], which needs a masked-LM "
                         f"head; {type(model).__name__} has none: leave them out of measures")

    scores: dict[str, torch.Tensor] = {}
    inputs = enc.to_tensors(bert.device)
    with inference(model):
        names = lambda n: n.endswith(("hook_pattern", "hook_v"))                       # noqa: E731
        out, cache = bert.run_with_cache(**inputs, names=names, output_attentions=True,
                                         output_hidden_states=True)
        attn = [a[0].float().cpu() for a in out.attentions]                             # L of (heads, T, T)
        if "attention" in measures:
            scores["attention"] = attn[-1].mean(0)[position]
        if "rollout" in measures:
            scores["rollout"] = _roll_out([a.mean(0) for a in attn], add_residual=True)[position]
        if "norm" in measures:
            scores["norm"] = _roll_out(_norm_based(bert, cache, T), add_residual=True)[position]
        if "value_zeroing" in measures:
            scores["value_zeroing"] = _roll_out(_value_zeroing(bert, out.hidden_states, T), add_residual=False)[position]
        tid = None
        if gradients:
            head = mlm_head(model)
            tid = (int(head(out.last_hidden_state[0, position])[:tokenizer.vocab_size].argmax()) if target is None
                   else _target_id(tokenizer, target))
    target_word = tokenizer.id_to_token(tid) if tid is not None else None
    if "integrated_gradients" in measures:
        scores["integrated_gradients"] = saliency(model, tokenizer, text, target=target_word, steps=steps).scores
    if "gradient" in measures:
        scores["gradient"] = saliency(model, tokenizer, text, target=target_word, method="gradient").scores
    return ContextMixing(list(enc.tokens), position, target_word, {m: scores[m] for m in measures})


# ---- the yardstick and the scoreboard ---------------------------------------------------------------------

def _blank(tokenizer, enc) -> str:
    """The text with every word piece replaced by [PAD] ([CLS], [SEP], [MASK] kept): the same length."""
    keep = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id}
    return " ".join(t if i in keep else "[PAD]" for t, i in zip(enc.tokens[1:-1], enc.input_ids[1:-1]))


def leave_one_out(model, tokenizer, text: str, target: str | None = None) -> torch.Tensor:
    """The intervention, (T,): for each token, the share of log P(target) (over the all-blank text) lost
    when that token alone is blanked: 1 − effect of noising its embedding (`patch`, row 0)."""
    enc = tokenizer(text)
    p = patch(model, tokenizer, text, _blank(tokenizer, enc), target=target, site="resid", direction="noise")
    return 1 - p.effect[0]


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 1 … n with ties averaged (Spearman's ρ is Pearson's r on these)."""
    order = x.argsort()
    ranks = torch.empty_like(x, dtype=torch.float64)
    ranks[order] = torch.arange(1, len(x) + 1, dtype=torch.float64)
    for v in x.unique():
        tie = x == v
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman's rank correlation of two 1-D tensors (ties averaged): 1 = the same order, -1 = reversed."""
    ra, rb = _ranks(a.double()), _ranks(b.double())
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = float(ra.norm() * rb.norm())
    return float((ra * rb).sum()) / denom if denom > 0 else float("nan")


@dataclass
class MixingScoreboard:
    """Spearman's ρ between each measure and the intervention, per sentence (`per_text`) and as `summary`:
    measure → (mean, std) over the texts, best first."""
    texts: list[str]
    per_text: dict[str, list[float]]
    summary: dict[str, tuple[float, float]]

    def best(self) -> str:
        """The measure with the highest mean ρ."""
        return next(iter(self.summary))


def mixing_scoreboard(model, tokenizer, texts: Sequence[str], measures: Sequence[str] = MEASURES,
                      steps: int = 16) -> MixingScoreboard:
    """Score every measure against `leave_one_out` on each text (one [MASK] each, the model's top guess as
    target). Only the words are ranked: [CLS], [SEP] and the [MASK] are never blanked."""
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise ValueError("texts must be a non-empty list of texts with one [MASK] each")
    per_text: dict[str, list[float]] = {m: [] for m in measures}
    for text in texts:
        mix = context_mixing(model, tokenizer, text, measures=measures, steps=steps)
        truth = leave_one_out(model, tokenizer, text, target=mix.target)
        words = [i for i, t in enumerate(mix.tokens) if t not in ("[CLS]", "[SEP]", "[MASK]")]
        for m in measures:
            per_text[m].append(spearman(mix.scores[m][words], truth[words]))
    summary = {}
    for m, rhos in per_text.items():
        r = torch.tensor([x for x in rhos if not math.isnan(x)], dtype=torch.float64)
        summary[m] = (float(r.mean()), float(r.std()) if len(r) > 1 else 0.0)
    summary = dict(sorted(summary.items(), key=lambda kv: -kv[1][0]))
    return MixingScoreboard(list(texts), per_text, summary)
