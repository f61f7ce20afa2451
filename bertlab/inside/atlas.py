"""A head atlas: what every attention head does over a corpus, and which heads behave alike.

    atlas = head_atlas(model, tokenizer, texts)            # a few hundred sentences
    atlas.share["previous"]        # (layers, heads): mean attention on the previous token
    atlas.sharpness                # (layers, heads): 1 − mean row entropy / log T (0 uniform … 1 one token)
    atlas.coords                   # (layers · heads, 2): heads placed by similarity of behaviour
    atlas.example(layer, head)     # its attention on the example sentences

The measures are Clark et al. (2019)'s, over every real query token of every text: the share of a row's
weight on the previous token, the next token, itself, [CLS], [SEP], punctuation, and the other WordPieces
of its own word ("same word"). With `tags` (one POS tag per whitespace word of each text, as in
bertlab/assets/probing/pos.tsv; `pos_corpus()` gives those sentences and tags) two syntactic relations are
measured too, as Clark et al. measure a dependency: from a determiner to the noun it introduces ("det →
noun": the first NOUN after the DET) and from a noun back to its determiner ("noun → det"), the weight on
that word's pieces averaged over the words that have one.

Placement. Two heads behave alike when they spread the same query's weight the same way: the distance is
the square root of the Jensen-Shannon divergence between their rows, averaged over every query token of the
corpus (Clark et al.'s section 6 uses the same), and classical multidimensional scaling puts the distance
matrix in two dimensions. `label` names each head's strongest measure when it takes at least half the
weight, else "broad" (rows at least 0.7 as spread as uniform) or "mixed", as `head_types` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..probe._checks import check_texts
from ..probe.layers import PROBING_DIR, read_pos_file
from ..probe.running import base_model, inference, max_length

__all__ = ["HeadAtlas", "head_atlas", "pos_corpus", "MEASURES"]

MEASURES = ("previous", "next", "self", "[CLS]", "[SEP]", "punctuation", "same word")
RELATIONS = ("det → noun", "noun → det")
PUNCTUATION = set(".,;:!?'\"()-")
THRESHOLD, BROAD = 0.5, 0.7
EXAMPLES = 3


def pos_corpus() -> tuple[list[str], list[list[str]]]:
    """The 260 POS-tagged sentences of bertlab/assets/probing/pos.tsv: (texts, one tag per word of each)."""
    sentences = read_pos_file(PROBING_DIR / "pos.tsv")
    return [" ".join(w for w, _ in s) for s in sentences], [[t for _, t in s] for s in sentences]


@dataclass
class HeadAtlas:
    """Per (layer, head): `share[m]` for m in MEASURES (and RELATIONS when tags were given), `entropy`,
    `sharpness`, `labels`; `distance` (LH, LH) and `coords` (LH, 2), head i = layer · heads + head;
    `examples`: up to three (tokens, attention (layers, heads, T, T)) to draw a head's pattern with."""
    share: dict[str, torch.Tensor]
    entropy: torch.Tensor
    sharpness: torch.Tensor
    labels: list[list[str]]
    distance: torch.Tensor
    coords: torch.Tensor
    examples: list[tuple[list[str], torch.Tensor]]
    n_texts: int
    n_tokens: int

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.entropy.shape)

    def example(self, layer: int, head: int, index: int = 0) -> tuple[list[str], torch.Tensor]:
        """The tokens of example sentence `index` and head (layer, head)'s attention on it, (T, T)."""
        L, H = self.shape
        if isinstance(layer, bool) or not isinstance(layer, int) or not -L <= layer < L:
            raise ValueError(f"layer must be an int in 0 … {L - 1}, got {layer!r}")
        if isinstance(head, bool) or not isinstance(head, int) or not -H <= head < H:
            raise ValueError(f"head must be an int in 0 … {H - 1}, got {head!r}")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.examples):
            raise ValueError(f"index must be an int in 0 … {len(self.examples) - 1} (the example sentences kept), "
                             f"got {index!r}")
        tokens, att = self.examples[index]
        return tokens, att[layer, head]

    def nearest(self, layer: int, head: int, n: int = 5) -> list[tuple[int, int, float]]:
        """The `n` heads that behave most like (layer, head): (layer, head, distance), closest first."""
        L, H = self.shape
        layer, head = _index(layer, L, "layer"), _index(head, H, "head")
        _count(n)
        row = self.distance[layer * H + head].clone()
        row[layer * H + head] = float("inf")
        order = row.argsort()[:min(n, L * H - 1)].tolist()          # never the head itself
        return [(i // H, i % H, float(row[i])) for i in order]

    def top(self, measure: str, n: int = 5) -> list[tuple[int, int, float]]:
        """The `n` heads with the largest share of `measure`: (layer, head, share), largest first."""
        if not isinstance(measure, str) or measure not in self.share:
            raise ValueError(f"no measure {measure!r}: choose one of {', '.join(self.share)}"
                             + ("" if all(m in self.share for m in RELATIONS) else
                                " (the det/noun relations need tags=... when the atlas is made)"))
        _count(n)
        L, H = self.shape
        flat = self.share[measure].flatten()
        return [(i // H, i % H, float(flat[i])) for i in flat.argsort(descending=True)[:n].tolist()]


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int of at least 1 (how many heads to list), got {n!r}")
    return n


def _index(value, n: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -n <= value < n:
        raise ValueError(f"{name} must be an int in 0 … {n - 1}, got {value!r}")
    return value % n


def _check_tags(tags, texts: list[str]) -> list[list[str]] | None:
    if tags is None:
        return None
    if isinstance(tags, (str, bytes)) or not hasattr(tags, "__len__") or len(tags) != len(texts):
        raise ValueError(f"tags must be a list with one list of tags per text ({len(texts)}), or None; "
                         f"got {type(tags).__name__}" + (f" of {len(tags)}" if hasattr(tags, "__len__") else ""))
    for i, (t, text) in enumerate(zip(tags, texts)):
        words = text.split()
        if isinstance(t, str) or not hasattr(t, "__len__") or len(t) != len(words) or \
                not all(isinstance(x, str) for x in t):
            raise ValueError(f"tags[{i}] must be one str tag per whitespace-separated word of texts[{i}] "
                             f"({len(words)} words), got {t!r}")
    return [list(t) for t in tags]


def _word_spans(enc, text: str, tokenizer) -> list[list[int]]:
    """For each whitespace word of `text`, the token positions of its pieces (empty if cut off)."""
    import re
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    offsets = tokenizer.backend.encode(text).offsets
    out = [[] for _ in spans]
    for t, (s, e) in enumerate(offsets[:len(enc.input_ids)]):
        if enc.word_ids[t] is None or e <= s:
            continue
        for w, (a, b) in enumerate(spans):
            if a <= s and e <= b:
                out[w].append(t)
                break
    return out


def _relations(att: torch.Tensor, spans: list[list[int]], tags: list[str], sums: dict, counts: dict) -> None:
    """Add, per head, the weight from each DET's first piece on the next NOUN, and back (att: (L, H, T, T))."""
    for w, tag in enumerate(tags):
        if tag != "DET" or not spans[w]:
            continue
        noun = next((v for v in range(w + 1, len(tags)) if tags[v] == "NOUN"), None)
        if noun is None or not spans[noun]:
            continue
        sums["det → noun"] += att[..., spans[w][0], spans[noun]].sum(-1)
        sums["noun → det"] += att[..., spans[noun][0], spans[w]].sum(-1)
        counts["det → noun"] += 1
        counts["noun → det"] += 1


def _mds(distance: torch.Tensor) -> torch.Tensor:
    """Classical multidimensional scaling to 2-D: the top two eigenvectors of the double-centred −D²/2."""
    n = distance.shape[0]
    centre = torch.eye(n, dtype=torch.float64) - 1.0 / n
    b = -0.5 * centre @ distance.double().pow(2) @ centre
    values, vectors = torch.linalg.eigh(b)                        # ascending
    top = values.flip(0)[:2].clamp_min(0).sqrt()
    coords = vectors.flip(1)[:, :2] * top
    for j in range(coords.shape[1]):                              # a fixed sign, so the picture is stable
        if coords[:, j].abs().max() > 0 and coords[coords[:, j].abs().argmax(), j] < 0:
            coords[:, j] = -coords[:, j]
    return coords.float()


def head_atlas(model, tokenizer, texts, tags=None) -> HeadAtlas:
    """Measure every head of `model` on `texts` and place the heads by behaviour (module docstring).

    `tags`: optional, one list of POS tags per text (one per whitespace word) for the syntactic relations.
    Each text runs on its own, in eval mode without gradients; the first three are kept as examples.
    """
    texts = check_texts(texts, "texts")
    tags = _check_tags(tags, texts)
    bert = base_model(model)
    L, H = bert.config.num_hidden_layers, bert.config.num_attention_heads
    limit = max_length(model, tokenizer)
    names = MEASURES + (RELATIONS if tags is not None else ())
    sums = {m: torch.zeros(L, H, dtype=torch.float64) for m in names}
    counts = {m: 0 for m in RELATIONS}
    entropy = torch.zeros(L, H, dtype=torch.float64)
    uniform = torch.zeros(L, H, dtype=torch.float64)
    rows_all: list[torch.Tensor] = []              # per text: (L·H, T·T) rows, for the behaviour distances
    examples, n_rows = [], 0
    with inference(model):
        for i, text in enumerate(texts):
            enc = tokenizer(text, max_length=limit)
            out = bert(**{k: v.to(bert.device) for k, v in enc.to_tensors().items()}, output_attentions=True)
            att = torch.stack(out.attentions)[:, 0].double().cpu()               # (L, H, T, T)
            if not bool(torch.isfinite(att).all()):
                raise ValueError(f"the model's attention on texts[{i}] is nan or inf: the model computes nan "
                                 "(check its weights)")
            T = att.shape[-1]
            idx = torch.arange(T)
            on = lambda cols: att[..., cols].sum(-1).sum(-1)                      # noqa: E731
            ids = enc.input_ids
            sums["[CLS]"] += on([j for j, t in enumerate(ids) if t == tokenizer.cls_id])
            sums["[SEP]"] += on([j for j, t in enumerate(ids) if t == tokenizer.sep_id])
            sums["punctuation"] += on([j for j, tok in enumerate(enc.tokens) if tok in PUNCTUATION])
            sums["self"] += att[..., idx, idx].sum(-1)
            sums["previous"] += att[..., idx[1:], idx[:-1]].sum(-1)
            sums["next"] += att[..., idx[:-1], idx[1:]].sum(-1)
            word = torch.tensor([-1 if w is None else w for w in enc.word_ids])
            same = (word[:, None] == word[None, :]) & (word[:, None] >= 0) & ~torch.eye(T, dtype=torch.bool)
            sums["same word"] += (att * same).sum((-1, -2))
            entropy += -(att * att.clamp_min(1e-12).log()).sum(-1).sum(-1)
            uniform += T * torch.log(torch.tensor(float(T), dtype=torch.float64))
            if tags is not None:
                _relations(att, _word_spans(enc, text, tokenizer), tags[i], sums, counts)
            rows_all.append(att.reshape(L * H, T, T).float())
            if len(examples) < EXAMPLES:
                examples.append((list(enc.tokens), att.float()))
            n_rows += T
    share = {}
    for m in names:
        denominator = counts[m] if m in RELATIONS else n_rows
        share[m] = (sums[m] / max(denominator, 1)).float()
    entropy, uniform = entropy / n_rows, uniform / n_rows
    sharpness = (1 - entropy / uniform.clamp_min(1e-12)).float()
    labels = []
    for l in range(L):
        row = []
        for h in range(H):
            best = max(MEASURES, key=lambda m: float(share[m][l, h]))
            if float(share[best][l, h]) >= THRESHOLD:
                row.append(best)
            else:
                row.append("broad" if float(entropy[l, h]) >= BROAD * float(uniform[l, h]) else "mixed")
        labels.append(row)
    distance = _js_distance(rows_all, n_rows)
    return HeadAtlas(share, entropy.float(), sharpness, labels, distance, _mds(distance), examples, len(texts),
                     n_rows)


def _js_distance(rows_all: list[torch.Tensor], n_rows: int) -> torch.Tensor:
    """sqrt of the mean Jensen-Shannon divergence (nats) between every two heads' rows: (LH, LH)."""
    n = rows_all[0].shape[0]
    js = torch.zeros(n, n, dtype=torch.float64)
    for rows in rows_all:                                              # (n, T, T) per text
        p = rows.reshape(n, -1).double()                               # (n, T·T)
        logp = p.clamp_min(1e-12).log()
        for i in range(n):
            m = 0.5 * (p[i] + p)                                        # (n, T·T)
            logm = m.clamp_min(1e-12).log()
            js[i] += 0.5 * ((p[i] * (logp[i] - logm)).sum(-1) + (p * (logp - logm)).sum(-1))
    js = (js / n_rows).clamp_min(0)
    js = 0.5 * (js + js.t())
    js.fill_diagonal_(0)
    return js.sqrt().float()
