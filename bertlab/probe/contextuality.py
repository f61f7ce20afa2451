"""How contextual are the vectors? Ethayarajh (2019)'s three measures, layer by layer, with their baselines.

    c = contextuality(model, tokenizer, sentences)
    c.self_similarity          # per layer: how alike one word's vectors are across its contexts
    c.adjusted("self_similarity")   # minus the anisotropy baseline

"How Contextual are Contextualized Word Representations?" (Ethayarajh, EMNLP 2019) measures, for words
that occur in several sentences:
- **self-similarity**: the mean cosine between a word's vectors in its different contexts. 1 would be a
  static embedding; lower means context changes the vector more. It falls in the upper layers.
- **intra-sentence similarity**: the mean cosine between each word's vector and its sentence's mean vector;
  how much the words of one sentence are pulled together.
- **maximum explainable variance (MEV)**: the share of the variance of a word's occurrence vectors that
  their first principal component explains (uncentred, as the paper's occurrence matrix); how well *one*
  static vector could stand in for all of them. After subtracting the anisotropy baseline, under 5 % in
  every layer of BERT, ELMo and GPT-2: a static embedding explains little of a contextual one.
Each is compared with a baseline, because contextual vectors are **anisotropic**: they all point into a
narrow cone, so even two random words have a high cosine (the paper's upper layers: > 0.9 in GPT-2). The
baselines are the same statistics on random words from random contexts; `adjusted` subtracts them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ._checks import check_texts, layer_index
from .running import base_model, inference, max_length

MEASURES = ("self_similarity", "intra_similarity", "mev")
BATCH = 32   # sentences per forward pass


@dataclass
class Contextuality:
    """Per layer (`layers`: hidden-state indices, 0 = the embedding output, L = the last layer), each measure
    and its baseline, as lists parallel to `layers`.

    `baseline_cosine` (the mean cosine between random words' vectors from different sentences) is the
    baseline of both similarities; `baseline_mev` is the MEV of random sets of vectors of different words,
    the same sizes as the real ones. `words` are the words that occur in at least `min_sentences` sentences
    (those self-similarity and MEV average over), `occurrences[w]` how many vectors each has, and
    `word_self_similarity[w]` its own self-similarity per layer (which words context moves most).
    """
    layers: list[int]
    self_similarity: list[float]
    intra_similarity: list[float]
    mev: list[float]
    baseline_cosine: list[float]
    baseline_mev: list[float]
    words: list[str]
    n_sentences: int
    occurrences: dict[str, int] = field(default_factory=dict)
    word_self_similarity: dict[str, list[float]] = field(default_factory=dict)

    def adjusted(self, measure: str) -> list[float]:
        """A measure minus its anisotropy baseline, per layer (the paper's "anisotropy-adjusted" value)."""
        if measure not in MEASURES:
            raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
        base = self.baseline_mev if measure == "mev" else self.baseline_cosine
        return [v - b for v, b in zip(getattr(self, measure), base)]


def _word_vectors(bert, tokenizer, sentences: list[str], limit: int) -> list[tuple[list[str], torch.Tensor]]:
    """Per sentence: its words (lowercased; punctuation and [UNK] skipped) and their vectors (W, L+1, H),
    the word's pieces averaged. Sentences run in padded batches; padding does not reach the real tokens."""
    result = []
    for start in range(0, len(sentences), BATCH):
        batch = tokenizer.batch(sentences[start:start + BATCH], max_length=limit)
        out = bert(**batch.to(bert.device), output_hidden_states=True)
        states = torch.stack(out.hidden_states, dim=2).float().cpu()          # (B, T, L+1, H)
        for b, enc in enumerate(batch.encodings):
            pieces = defaultdict(list)                                        # word id → its token positions
            for i, w in enumerate(enc.word_ids):
                if w is not None:
                    pieces[w].append(i)
            words, vectors = [], []
            for idx in pieces.values():
                if any(enc.tokens[i] == "[UNK]" for i in idx):
                    continue                                                  # every unknown word would be one word
                word = "".join(enc.tokens[i].removeprefix("##") for i in idx).lower()
                if not any(ch.isalnum() for ch in word):
                    continue                                                  # punctuation
                words.append(word)
                vectors.append(states[b, idx].mean(0))                        # (L+1, H)
            result.append((words, torch.stack(vectors) if vectors else torch.empty(0, *states.shape[2:])))
    return result


def _mev(v: torch.Tensor) -> torch.Tensor:
    """v: (n, L, H) → (L,) share of variance along the first principal direction (uncentred, as the paper).

    Uncentred, n vectors: at least 1/n of the variance lies along the first direction whatever they are,
    which is why the MEV baseline uses sets of the same sizes.
    """
    s = torch.linalg.svdvals(v.transpose(0, 1))                              # (L, min(n, H))
    return s[:, 0] ** 2 / (s ** 2).sum(-1)


def _mean_pair_cosine(v: torch.Tensor) -> torch.Tensor:
    """v: (n, L, H), n ≥ 2 → (L,) mean cosine over the n(n−1)/2 pairs."""
    u = F.normalize(v, dim=-1).transpose(0, 1)                               # (L, n, H)
    sim = u @ u.transpose(1, 2)                                              # (L, n, n)
    n = v.shape[0]
    return (sim.sum((1, 2)) - sim.diagonal(dim1=1, dim2=2).sum(-1)) / (n * (n - 1))


def contextuality(model, tokenizer, sentences, layer="all", samples: int = 1000, seed: int = 0,
                  min_sentences: int = 2) -> Contextuality:
    """Ethayarajh's self-similarity, intra-sentence similarity and MEV (with baselines) per layer.

    `sentences`: the learner's own (a word must occur in at least `min_sentences` of them to count; the
    paper used 5, and MEV needs many occurrences to mean much, see `_mev`); `layer`: "all" or one
    hidden-state index (0 … L, negative from the end); `samples`: random word pairs for the baseline, drawn
    with `seed` so the numbers repeat. Words are whole words (pieces averaged), lowercased; punctuation and
    [UNK] are skipped. Self-similarity and MEV use every occurrence of a word, two in one sentence included
    (the paper's occurrence matrix); the cosine baseline pairs words from different sentences only.
    """
    sentences = check_texts(sentences, "sentences")
    if isinstance(min_sentences, bool) or not isinstance(min_sentences, int) or min_sentences < 2:
        raise ValueError(f"min_sentences must be an int of at least 2 (a word needs two contexts to compare), "
                         f"got {min_sentences!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive int (random word pairs for the baseline), got {samples!r}")
    bert = base_model(model)
    n_layers = bert.config.num_hidden_layers
    chosen = layer_index(layer, n_layers)
    occurrences = defaultdict(list)                                          # word → [(sentence, (L+1, H))]
    intra, everything = [], []
    with inference(model):
        per_sentence = _word_vectors(bert, tokenizer, sentences, max_length(model, tokenizer))
    for s, (words, vectors) in enumerate(per_sentence):
        if len(words) == 0:
            continue
        everything.extend((s, v) for v in vectors)
        for w, v in zip(words, vectors):
            occurrences[w].append((s, v))
        mean = vectors.mean(0, keepdim=True)                                 # (1, L+1, H): the sentence vector
        intra.append(F.cosine_similarity(vectors, mean, dim=-1).mean(0))     # (L+1,)
    repeated = {w: occ for w, occ in occurrences.items() if len({s for s, _ in occ}) >= min_sentences}
    if not repeated:
        raise ValueError(f"no word occurs in {'two' if min_sentences == 2 else min_sentences} of the sentences, so "
                         "self-similarity and MEV have nothing to compare: give several sentences that share "
                         "words, e.g. 'bank' in a river sentence and in a money sentence"
                         + ("" if min_sentences == 2 else ", or lower min_sentences"))
    stacked = {w: torch.stack([v for _, v in occ]) for w, occ in repeated.items()}  # (n, L+1, H) each
    self_sim = torch.stack([_mean_pair_cosine(v) for v in stacked.values()])        # (words, L+1)
    mev = torch.stack([_mev(v) for v in stacked.values()])                          # (words, L+1)

    # the anisotropy baselines: random words from different sentences, seeded
    g = torch.Generator().manual_seed(seed)
    n = len(everything)
    i, j = torch.randint(n, (samples,), generator=g), torch.randint(n, (samples,), generator=g)
    keep = torch.tensor([everything[a][0] != everything[b][0] for a, b in zip(i.tolist(), j.tolist())])
    if not keep.any():
        raise ValueError("the baseline needs words from at least two different sentences")
    a = torch.stack([everything[k][1] for k in i[keep].tolist()])
    b = torch.stack([everything[k][1] for k in j[keep].tolist()])
    base_cos = F.cosine_similarity(a, b, dim=-1).mean(0)                     # (L+1,)
    base_mev = torch.stack([_mev(torch.stack([everything[k][1] for k in
                                              torch.randint(n, (len(occ),), generator=g).tolist()]))
                            for occ in repeated.values()]).mean(0)

    layers = list(range(n_layers + 1)) if chosen is None else [chosen]
    pick = lambda t: [float(t[l]) for l in layers]                           # noqa: E731
    return Contextuality(layers, pick(self_sim.mean(0)), pick(torch.stack(intra).mean(0)), pick(mev.mean(0)),
                         pick(base_cos), pick(base_mev), sorted(repeated), len(sentences),
                         {w: len(occ) for w, occ in repeated.items()},
                         {w: pick(v) for w, v in zip(repeated, self_sim)})
