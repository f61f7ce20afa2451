"""One layer's residual stream over a corpus, read through the model's hook points.

    acts = residual_stream(model, tokenizer, texts, layer=3)     # acts.h (N, H), one row per real token
    acts.where(i)                                                # (sentence index, position) of row i

`layer` counts as `hidden_states` does everywhere in bertlab: 0 is the embedding output, 1 … L the output of
encoder layer 1 … L. The hook point is `embeddings.hook_normed` for 0 and `encoder.layer.{layer-1}.hook_resid_post`
otherwise, so the same name serves for reading (here), splicing an autoencoder in (sae.py) and steering.

The forward pass stops right after the layer is read (a hook raises a private exception, which the `hooks`
context turns into a clean exit with its hooks removed), so collecting layer 3 of a 6-layer model costs half
a forward pass. The texts are masked as in pre-training (15 %, 80/10/10, a seeded generator), because that is
the input the model was trained on and the one `sae_report` measures: an autoencoder that never saw a [MASK]
position would be judged, and steered, on inputs it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ..pretraining.data import read_documents
from ..pretraining.masking import mask_tokens
from ..probe._checks import check_texts
from ..probe.running import base_model, inference, max_length

#: the bundled corpus the autoencoders train on by default: the demo corpus's English prose (train split)
DEMO_TRAIN = Path(__file__).resolve().parent.parent / "assets" / "corpus" / "train"
BATCH_SIZE = 32          # sentences per forward pass (sorted by length, so little padding)
MAX_TOKENS = 250_000     # rows kept at most: 250 k × 384 floats is 384 MB; the bundled corpus has 244 k tokens


class _Stop(Exception):
    """Raised by the reading hook once the layer is read: the rest of the forward pass is not needed."""


def demo_sentences(limit: int | None = None) -> list[str]:
    """The bundled corpus's English sentences (bertlab/assets/corpus/train/en_*.txt), in file order."""
    files = sorted(DEMO_TRAIN.glob("en_*.txt"))
    sentences = [s for doc in read_documents(files) for s in doc if s.strip()]
    return sentences[:limit] if limit is not None else sentences


def check_layer(model, layer) -> int:
    """`layer` as 0 … L (0 = the embedding output), negative counting from the end, or a ValueError."""
    n = base_model(model).config.num_hidden_layers
    if isinstance(layer, bool) or not isinstance(layer, int) or not -(n + 1) <= layer <= n:
        raise ValueError(f"layer must be an int in 0 … {n} for this {n}-layer model (0 = the embedding output, "
                         f"{n} = the last layer's output; -1 counts from the end), got {layer!r}")
    return layer % (n + 1)


def hook_name(layer: int) -> str:
    """The hook point on the encoder (`Bert`) whose activation is `hidden_states[layer]`."""
    return "embeddings.hook_normed" if layer == 0 else f"encoder.layer.{layer - 1}.hook_resid_post"


@dataclass
class Residual:
    """Rows of the residual stream at one layer: `h` (N, H) float32, and for each row the token id, the
    sentence it came from (an index into `texts`) and its position in that sentence's encoding."""
    layer: int
    h: torch.Tensor
    token_ids: torch.Tensor
    sentence: torch.Tensor
    position: torch.Tensor
    texts: list[str]

    def where(self, i: int) -> tuple[int, int]:
        return int(self.sentence[i]), int(self.position[i])


def masked_batches(model, tokenizer, texts: list[str], seed: int = 0, probability: float = 0.15):
    """Batches of `texts` (sorted by length) masked as in pre-training with a seeded generator: yields
    (indices into texts, Batch with the masked input_ids, MLM labels (B, T) with -100 where not chosen)."""
    limit = max_length(model, tokenizer)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    gen = torch.Generator().manual_seed(seed)
    for b in range(0, len(order), BATCH_SIZE):
        idx = order[b:b + BATCH_SIZE]
        batch = tokenizer.batch([texts[i] for i in idx], max_length=limit)
        inputs, labels = (mask_tokens(batch.input_ids, tokenizer, probability=probability, generator=gen)
                          if probability > 0 else (batch.input_ids, None))
        yield idx, batch, inputs, labels


def _subsample(tokenizer, texts: list[str], max_tokens: int, seed: int) -> list[int]:
    """Indices of the texts to read: all of them if their tokens fit in `max_tokens`, else a seeded random
    choice of whole texts that fills it (not the shortest ones, which sorting by length would keep)."""
    lengths = [len(tokenizer.tokenize(t)) + 2 for t in texts]
    if sum(lengths) <= max_tokens:
        return list(range(len(texts)))
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed)).tolist()
    chosen, total = [], 0
    for i in order:
        if total >= max_tokens:
            break
        chosen.append(i)
        total += lengths[i]
    return sorted(chosen)


def residual_stream(model, tokenizer, texts=None, *, layer: int, max_tokens: int = MAX_TOKENS, seed: int = 0,
                    probability: float = 0.15) -> Residual:
    """Every real token's residual-stream vector at `layer` over `texts` (the bundled corpus by default),
    the texts masked as in pre-training (`probability` 0 reads them unmasked); at most `max_tokens` rows."""
    texts = demo_sentences() if texts is None else check_texts(texts, "texts")
    layer = check_layer(model, layer)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int (rows of the residual stream to keep), got {max_tokens!r}")
    bert = base_model(model)
    name = hook_name(layer)
    chosen = _subsample(tokenizer, texts, max_tokens, seed)
    rows, ids, sent, pos = [], [], [], []
    kept = 0
    grabbed: list[torch.Tensor] = []

    def grab(h, _name):
        grabbed.append(h.detach())
        raise _Stop

    with inference(model):
        for sub, batch, inputs, _ in masked_batches(model, tokenizer, [texts[i] for i in chosen], seed, probability):
            idx = [chosen[i] for i in sub]
            grabbed.clear()
            try:
                with bert.hooks([(name, grab)]):
                    bert(input_ids=inputs.to(bert.device), token_type_ids=batch.token_type_ids.to(bert.device),
                         attention_mask=batch.attention_mask.to(bert.device))
            except _Stop:
                pass
            h = grabbed[0].float().cpu()                                   # (B, T, H)
            real = batch.attention_mask.bool()                             # (B, T)
            b_idx, t_idx = real.nonzero(as_tuple=True)
            rows.append(h[b_idx, t_idx])
            ids.append(inputs[b_idx, t_idx])
            sent.append(torch.tensor(idx)[b_idx])
            pos.append(t_idx)
            kept += len(b_idx)
            if kept >= max_tokens:
                break
    cat = lambda xs: torch.cat(xs)[:max_tokens]                            # noqa: E731
    return Residual(layer, cat(rows), cat(ids), cat(sent), cat(pos), texts)
