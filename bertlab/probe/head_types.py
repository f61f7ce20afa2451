"""Head types: what each attention head mostly looks at (Clark, Khandelwal, Levy & Manning 2019).

    ht = head_types(model, tokenizer, sentences)
    ht.share["[SEP]"]         # (layers, heads): average attention each head puts on [SEP]
    ht.labels[3][5]           # "[SEP]", "previous", "broad", ...

"What Does BERT Look At?" found that BERT's 144 heads fall into a few behaviours: heads that attend
broadly (high entropy, mostly in the lowest layers), heads that look at the previous or the next token,
heads that put most of their weight on [SEP] (over half the attention of many heads in layers 6–10 of
BERT-base), on [CLS] or on punctuation, and a few that track syntax. Attending to [SEP] or punctuation
works as a "no-op": a head that has nothing to do puts its weight somewhere harmless.

For each head, averaged over the query tokens (rows) of every text: the share of attention on [CLS], on the
[SEP] tokens, on punctuation, on the previous token, the next token and itself, and the entropy of its rows
(beside the entropy of uniform attention over the same rows, log T, the most a row can have). Shares may
overlap ([CLS]'s row attending to itself counts as "self" and as "[CLS]"); the first row has no previous
token and the last no next one, so a perfect previous-token head scores (T − 1)/T.

The label, one of `LABELS`:
- the measure with the largest share, when that share is at least `THRESHOLD` = 0.5: Clark et al. call a
  head a previous- or next-token head when it puts "more than 50 % of its attention" there (section 3.1),
  and a majority is the natural line for "mostly looks at X";
- else "broad" when the mean row entropy is at least `BROAD` = 0.7 of log T: such a row is as spread as a
  uniform row over T^0.7 tokens (8 of 20), the "very broad attention" Clark et al. see in the lowest layers
  (their section 3.4; they give no number, so this line is ours);
- else "mixed": focused, but on no single one of these patterns (syntactic and coreference heads land here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ._checks import check_texts
from .running import base_model, inference, max_length

MEASURES = ("[CLS]", "[SEP]", "punctuation", "previous", "next", "self")
LABELS = MEASURES + ("broad", "mixed")
THRESHOLD = 0.5   # a head "attends to X" when X gets at least half of its attention, on average
BROAD = 0.7       # ... and "attends broadly" when its rows keep 70 % of the uniform distribution's entropy
PUNCTUATION = set(".,;:!?'\"()-")


@dataclass
class HeadTypes:
    """Per (layer, head) measures: `share[m]` (layers, heads) for each m in MEASURES, `entropy` and
    `uniform_entropy` (layers, heads), in nats, and `labels[layer][head]` (one of LABELS), measured over
    `n_texts` texts and `n_tokens` query rows in all."""
    share: dict[str, torch.Tensor]
    entropy: torch.Tensor
    uniform_entropy: torch.Tensor
    labels: list[list[str]]
    n_texts: int
    n_tokens: int

    def counts(self, layer: int | None = None) -> Counter:
        """How many heads carry each label, in one layer or (None) in the whole model."""
        n = len(self.labels)
        if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or not -n <= layer < n):
            raise ValueError(f"layer {layer!r} does not exist: there are {n} layers (0 … {n - 1}; negative "
                             "indexes count from the end), or None for the whole model")
        rows = self.labels if layer is None else [self.labels[layer]]
        return Counter(label for row in rows for label in row)

    def counts_per_layer(self) -> list[dict[str, int]]:
        """One dict per layer, every label of LABELS in order (zeros included): a table or a stacked bar."""
        return [{label: row.count(label) for label in LABELS} for row in self.labels]


def _pairs(texts) -> list[tuple[str, str | None]]:
    """`texts` as (text, text_pair or None) tuples, or a ValueError that says which entry is wrong."""
    if isinstance(texts, str):
        raise ValueError("texts must be a list of sentences, got a str: for one sentence pass [text]")
    if not isinstance(texts, Sequence):
        raise ValueError(f"texts must be a list of sentences, got {type(texts).__name__}")
    pairs = [t if isinstance(t, tuple) else (t, None) for t in texts]
    for i, t in enumerate(pairs):
        if len(t) != 2 or not (t[1] is None or (isinstance(t[1], str) and t[1].strip())):
            raise ValueError(f"texts[{i}] is {texts[i]!r}: a pair must be a (text, text_pair) tuple of two "
                             "non-empty str")
    check_texts([a for a, _ in pairs], "texts")                              # non-empty, every text a non-empty str
    return pairs


def _label(shares: dict[str, float], entropy: float, uniform: float) -> str:
    best = max(MEASURES, key=lambda m: shares[m])
    if shares[best] >= THRESHOLD:
        return best
    return "broad" if uniform > 0 and entropy >= BROAD * uniform else "mixed"


def head_types(model, tokenizer, texts) -> HeadTypes:
    """Measure every head of `model` on `texts` (sentences; a pair as a (text, text_pair) tuple).

    Ten to twenty sentences give stable labels for a real model. Each text runs on its own (no padding,
    so every row is a real token's and log T is its uniform entropy), in eval mode without gradients.
    """
    pairs = _pairs(texts)
    bert = base_model(model)
    L, H = bert.config.num_hidden_layers, bert.config.num_attention_heads
    sums = {m: torch.zeros(L, H, dtype=torch.float64) for m in MEASURES}
    entropy = torch.zeros(L, H, dtype=torch.float64)
    uniform = torch.zeros(L, H, dtype=torch.float64)
    rows = 0
    device, limit = bert.device, max_length(model, tokenizer)
    with inference(model):
        for a, b in pairs:
            enc = tokenizer(a, b, max_length=limit)
            out = bert(**{k: v.to(device) for k, v in enc.to_tensors().items()}, output_attentions=True)
            att = torch.stack(out.attentions)[:, 0].double().cpu()          # (L, H, T, T): row i = query i
            T = att.shape[-1]
            ids = enc.input_ids
            on = lambda cols: att[..., cols].sum(-1).sum(-1)                 # noqa: E731  summed over rows
            sums["[CLS]"] += on([i for i, t in enumerate(ids) if t == tokenizer.cls_id])
            sums["[SEP]"] += on([i for i, t in enumerate(ids) if t == tokenizer.sep_id])
            sums["punctuation"] += on([i for i, tok in enumerate(enc.tokens) if tok in PUNCTUATION])
            idx = torch.arange(T)
            sums["self"] += att[..., idx, idx].sum(-1)
            sums["previous"] += att[..., idx[1:], idx[:-1]].sum(-1)          # query 0 has no previous token
            sums["next"] += att[..., idx[:-1], idx[1:]].sum(-1)              # the last query has no next token
            entropy += -(att * att.clamp_min(1e-12).log()).sum(-1).sum(-1)
            uniform += T * torch.log(torch.tensor(float(T), dtype=torch.float64))
            rows += T
    share = {m: (s / rows).float() for m, s in sums.items()}
    entropy, uniform = (entropy / rows).float(), (uniform / rows).float()
    labels = [[_label({m: float(share[m][l, h]) for m in MEASURES}, float(entropy[l, h]), float(uniform[l, h]))
               for h in range(H)] for l in range(L)]
    return HeadTypes(share, entropy, uniform, labels, len(pairs), rows)
