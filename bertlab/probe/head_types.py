"""Head types: what each attention head mostly looks at (Clark, Khandelwal, Levy & Manning 2019).

    ht = head_types(model, tok, sentences)
    ht.share["[SEP]"]         # (layers, heads): average attention each head puts on [SEP]
    ht.labels[3][5]           # "[SEP]", "previous", "broad", ...

"What Does BERT Look At?" found that BERT's 144 heads fall into a few behaviours: heads that attend
broadly (high entropy, mostly in the lowest layers), heads that look at the previous or the next token,
heads that put most of their weight on [SEP] (over half the attention of many heads in layers 6–10 of
BERT-base), on [CLS] or on punctuation, and a few that track syntax. Attending to [SEP] or punctuation
works as a "no-op": a head that has nothing to do puts its weight somewhere harmless.

For each head, averaged over the query tokens of every text: the share of attention on [CLS], on the [SEP]
tokens, on punctuation, on the previous token, the next token and itself, and the entropy of its rows
(beside the entropy of uniform attention over the same rows, the most a row can have). The label is the
measure with the largest share when that share is at least `THRESHOLD` (half the attention), else
"broad" when the entropy is at least `BROAD` of the uniform entropy, else "mixed".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from . import _encoder, _inference, _texts

MEASURES = ("[CLS]", "[SEP]", "punctuation", "previous", "next", "self")
THRESHOLD = 0.5   # a head "attends to X" when X gets at least half of its attention, on average
BROAD = 0.7       # ... and "attends broadly" when its rows keep 70 % of the uniform distribution's entropy
PUNCTUATION = set(".,;:!?'\"()-")


@dataclass
class HeadTypes:
    """Per (layer, head) measures: `share[m]` (layers, heads) for each m in MEASURES, `entropy` and
    `uniform_entropy` (layers, heads), in nats, and `labels[layer][head]`."""
    share: dict[str, torch.Tensor]
    entropy: torch.Tensor
    uniform_entropy: torch.Tensor
    labels: list[list[str]]
    n_texts: int
    n_tokens: int

    def counts(self, layer: int | None = None) -> Counter:
        """How many heads carry each label, in one layer or (None) in the whole model."""
        rows = self.labels if layer is None else [self.labels[layer]]
        return Counter(label for row in rows for label in row)


def _label(shares: dict[str, float], entropy: float, uniform: float) -> str:
    best = max(MEASURES, key=lambda m: shares[m])
    if shares[best] >= THRESHOLD:
        return best
    return "broad" if uniform > 0 and entropy >= BROAD * uniform else "mixed"


def head_types(model, tokenizer, texts) -> HeadTypes:
    """Measure every head of `model` on `texts` (sentences; a pair as a (text, text_pair) tuple)."""
    if isinstance(texts, str):
        raise ValueError("texts must be a list of sentences, got a str: for one sentence pass [text]")
    pairs = [t if isinstance(t, tuple) else (t, None) for t in texts]
    _texts([a for a, _ in pairs], "texts")
    bert = _encoder(model)
    L, H = bert.config.num_hidden_layers, bert.config.num_attention_heads
    sums = {m: torch.zeros(L, H, dtype=torch.float64) for m in MEASURES}
    entropy = torch.zeros(L, H, dtype=torch.float64)
    uniform = torch.zeros(L, H, dtype=torch.float64)
    rows = 0
    device = next(bert.parameters()).device
    with _inference(model):
        for a, b in pairs:
            enc = tokenizer(a, b, max_length=bert.config.max_position_embeddings)
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
