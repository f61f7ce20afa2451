"""Reading a feature: where it fires in a corpus, what it writes, and how it runs along a typed sentence.

    f = Features(model, tokenizer, sae, texts)       # every token of `texts` encoded once
    f.top_contexts(17, n=8)                          # the 8 contexts where feature 17 is largest, token marked
    f.frequency                                      # (width,): share of tokens each feature fires on
    promoted_words(model, tokenizer, sae, 17)        # what its decoder direction promotes through the MLM head
    trace(model, tokenizer, sae, "The bank was muddy.", 17)       # its value at every token of a sentence

What a feature *promotes* is read as the diff lens reads a difference (diff.py): add the feature at its largest
training value along its direction to the autoencoder's centre (b_dec, the data's mean at the start of
training) and see which tokens' log-probability under the MLM head rises most. For a layer below the last this
is the logit lens (what the layer would predict were it the last), so it is a hint, not a proof.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..probe._checks import check_texts
from ..probe.running import base_model, inference, max_length, mlm_head
from .residual import residual_stream
from .sae import SparseAutoencoder, check_sae

__all__ = ["Features", "Context", "promoted_words", "trace", "token_purity"]


@dataclass
class Context:
    """One place a feature fired: the sentence's tokens, which one, the value, and the text with it marked."""
    value: float
    tokens: list[str]
    position: int
    sentence: str

    @property
    def marked(self) -> str:
        """The tokens joined, the firing one in [[ ]] (## pieces glued to the word before)."""
        out = ""
        for i, t in enumerate(self.tokens):
            if t in ("[CLS]", "[SEP]", "[PAD]") and i != self.position:
                continue
            glued, word = t.startswith("##"), t[2:] if t.startswith("##") else t
            piece = f"[[{word}]]" if i == self.position else word
            out += piece if glued else ("" if not out else " ") + piece
        return out

    def snippet(self, width: int = 70) -> str:
        """`marked`, cut to about `width` characters around the marked token (… where text was left out)."""
        text = self.marked
        if len(text) <= width:
            return text
        at = text.index("[[")
        start = max(0, min(at - width // 2, len(text) - width))
        return ("…" if start > 0 else "") + text[start:start + width] + ("…" if start + width < len(text) else "")


class Features:
    """Every feature's value on every real token of `texts` (unmasked), computed once and kept sparse."""

    def __init__(self, model, tokenizer, sae: SparseAutoencoder, texts):
        sae = check_sae(model, sae)
        self.texts = check_texts(texts, "texts")
        self.sae, self.tokenizer = sae, tokenizer
        acts = residual_stream(model, tokenizer, self.texts, layer=sae.layer, probability=0.0,
                               max_tokens=10 ** 9)
        with torch.no_grad():
            z = torch.cat([sae.encode(c) for c in acts.h.split(8192)])           # (N, width)
        self.values, self.indices = z.topk(sae.k, dim=-1)                        # (N, k) each
        self.token_ids, self.sentence, self.position = acts.token_ids, acts.sentence, acts.position
        self.n_tokens = len(z)
        fired = torch.zeros(sae.width)
        fired.index_add_(0, self.indices[self.values > 0], torch.ones(int((self.values > 0).sum())))
        self.frequency = fired / max(self.n_tokens, 1)                           # (width,)
        self._tokens: dict[int, list[str]] = {}

    def column(self, feature: int) -> torch.Tensor:
        """The feature's value on every token: (N,), zero where it is not among the token's top k."""
        f = self.sae.check_feature(feature)
        return (self.values * (self.indices == f)).sum(-1)

    def _sentence_tokens(self, s: int) -> list[str]:
        if s not in self._tokens:
            self._tokens[s] = list(self.tokenizer(self.texts[s]).tokens)
        return self._tokens[s]

    def top_contexts(self, feature: int, n: int = 10) -> list[Context]:
        """The `n` tokens where `feature` is largest, with their sentences (only tokens where it fired)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int of at least 1, got {n!r}")
        col = self.column(feature)
        values, rows = col.topk(min(n, len(col)))
        out = []
        for v, r in zip(values.tolist(), rows.tolist()):
            if v <= 0:
                break
            s, p = int(self.sentence[r]), int(self.position[r])
            out.append(Context(v, self._sentence_tokens(s), p, self.texts[s]))
        return out

    def top_features(self, n: int = 10, min_frequency: float = 0.0) -> list[int]:
        """The features with the largest total activation over the texts (the busiest first)."""
        total = torch.zeros(self.sae.width).index_add_(0, self.indices.flatten(), self.values.flatten())
        total[self.frequency < min_frequency] = -1
        return total.argsort(descending=True)[:n].tolist()


def token_purity(features: Features, n: int = 10, min_contexts: int = 5) -> float:
    """Mean, over features with at least `min_contexts` firing contexts, of the share of a feature's top `n`
    contexts that are its most common token: 1.0 means every feature is a one-token detector.

    A cheap stand-in for "this feature looks interpretable": a feature that fires on one token reads
    clearly in a table of contexts, but it may say nothing about what the layer computes (arXiv
    2501.17727 finds such features in randomly initialised transformers too)."""
    shares = []
    for f in range(features.sae.width):
        col = features.column(f)
        if int((col > 0).sum()) < min_contexts:
            continue
        rows = col.topk(min(n, int((col > 0).sum()))).indices
        ids = features.token_ids[rows].tolist()
        shares.append(max(ids.count(i) for i in set(ids)) / len(ids))
    return sum(shares) / len(shares) if shares else float("nan")


def promoted_words(model, tokenizer, sae: SparseAutoencoder, feature: int, k: int = 10) -> list[tuple[str, float]]:
    """The `k` tokens whose log-probability under the MLM head rises most when the feature (at its largest
    training value) is added to the autoencoder's centre: (token, rise in nats), largest first."""
    head = mlm_head(model)
    sae = check_sae(model, sae)
    f = sae.check_feature(feature)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int of at least 1, got {k!r}")
    size = float(sae.max_activation[f]) or 1.0
    device = base_model(model).device
    with inference(model), torch.no_grad():
        centre = sae.b_dec.detach().to(device)
        shifted = centre + size * sae.scale * sae.direction(f).to(device)
        before, after = (head(x[None]).float().log_softmax(-1)[0, :tokenizer.vocab_size].cpu()
                         for x in (centre, shifted))
    rise = after - before
    top = rise.topk(k)
    return [(tokenizer.id_to_token(i), float(r)) for r, i in zip(top.values.tolist(), top.indices.tolist())]


def trace(model, tokenizer, sae: SparseAutoencoder, text: str, feature: int | None = None):
    """The feature's value at every token of `text`: (tokens, (T,) tensor); with feature=None every feature,
    (tokens, (T, width))."""
    sae = check_sae(model, sae)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass the sentence to read the feature along")
    f = None if feature is None else sae.check_feature(feature)
    enc = tokenizer(text, max_length=max_length(model, tokenizer))
    acts = residual_stream(model, tokenizer, [text], layer=sae.layer, probability=0.0)
    with torch.no_grad():
        z = sae.encode(acts.h)                                                   # (T, width)
    return list(enc.tokens), (z if f is None else z[:, f])
