"""Probes: ask a trained BERT a question and get plain numbers back.

    fill_mask(model, tok, "The river [MASK] was muddy.")            # what goes in the gap, with probabilities
    next_sentence(model, tok, "It rained all day.", "The river rose.")   # P(IsNext)
    v = word_vectors(model, tok, ["the river bank", "the bank account"], "bank")   # (2, H)
    cosine_distances(v)                                              # (2, 2): same word, different contexts
    sentence_embedding(model, tok, texts, pooling="mean")            # (n, H)
    attention_rollout(model(**enc, output_attentions=True).attentions)   # (B, T, T)
    head_importance(model, tok, "The river [MASK] was muddy.", targets=["bank"])
    with ablate(model, [(0, 1)]): ...                                # head 1 of layer 0 silenced
    Ablation(model, tok, "The river [MASK] was muddy.").effect([(0, 1)])   # the guesses with that head off

What every probe (and every widget) runs on, in bertlab.probe.running: `inference(model)`,
`base_model(model)`, `has_mlm_head(model)`, `has_nsp_head(model)`, `mlm_head(model)`, `max_length(model, tok)`,
`run(model, enc, **flags)`, `attention_weights(model, batch)` and `embedding_parts(model, enc)`.
Ablation lives in bertlab.probe.ablation.

Every probe runs without gradients in eval mode (each module's own mode comes back afterwards), takes
text, and returns CPU tensors or small dataclasses, so a notebook can print or plot the answer directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..model.bert import BertOutput
from .running import (attention_weights, base_model, check_pair, embedding_parts, has_mlm_head, has_nsp_head, inference,
                      max_length, mlm_head, run)



# ---- input checks shared by the probes -------------------------------------------------------------

def _texts(texts, name: str) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"{name} must be a list of str, got {type(texts).__name__}"
                         + (f": for one text pass [{name[:-1]}]" if isinstance(texts, str) else ""))
    if len(texts) == 0:
        raise ValueError(f"{name} is empty: pass at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"{name}[{i}] is {t!r}: every entry must be a non-empty str")
    return list(texts)


def _layer_index(layer, n_layers: int) -> int | None:
    """`layer` as an index into hidden_states (0 … L), or None for all of them."""
    if layer is None or (isinstance(layer, str) and layer == "all"):
        return None
    valid = (f"pass 0 … {n_layers} (0 = the embedding output, {n_layers} = the last layer), "
             f"-{n_layers + 1} … -1 counting from the end, or 'all'")
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise ValueError(f"layer must be an int or 'all', got {layer!r}: {valid}")
    if not -(n_layers + 1) <= layer <= n_layers:
        raise ValueError(f"layer {layer} is out of range for a {n_layers}-layer model: {valid}")
    return layer % (n_layers + 1)


def _pick_layer(hidden_states: tuple[torch.Tensor, ...], layer: int | None, dim: int) -> torch.Tensor:
    """One layer's states, or all of them stacked along `dim`."""
    return torch.stack(hidden_states, dim=dim) if layer is None else hidden_states[layer]


# ---- masked-word guesses and next-sentence prediction -------------------------------------------

@dataclass
class Guess:
    token: str
    probability: float


@dataclass
class FillMask:
    """The model's guesses for each `[MASK]` in a text.

    `guesses[i]` are the top-k for the i-th mask, most probable first; `by_layer[l][i]` the same read off
    layer l + 1's hidden state through the MLM head (the "logit lens": what each layer would predict if it
    were the last), so `by_layer[-1] == guesses`.
    """
    text: str
    tokens: list[str]
    mask_positions: list[int]
    guesses: list[list[Guess]]
    by_layer: list[list[list[Guess]]] = field(default_factory=list)


def fill_mask(model, tokenizer, text: str, top_k: int = 5, by_layer: bool = False,
              positions: Sequence[int] | None = None, text_pair: str | None = None) -> FillMask:
    """Top-k tokens for every `[MASK]` in `text`, with probabilities (and per layer with `by_layer=True`).

    Each mask is guessed on its own from the same forward pass (all masks stay masked), as BERT was trained.
    `positions` hides those token positions of `text` behind [MASK] first and guesses only them: their ids
    are replaced, nothing is re-tokenized (what clicking a token in MaskPlayground does), so `text` need
    not contain [MASK]; `FillMask.text` is then the masked text. With `text_pair` the two texts are
    encoded as a pair ([CLS] A [SEP] B [SEP]) and the masks of both are guessed.
    """
    head = mlm_head(model)
    if text_pair is not None and not isinstance(text_pair, str):
        raise ValueError(f"text_pair must be a str (the second text) or None, got {type(text_pair).__name__}")
    if positions is None and (not isinstance(text, str) or "[MASK]" not in text + (text_pair or "")):
        raise ValueError("text must contain [MASK] where the model should guess a word, e.g. "
                         "'The river [MASK] was muddy.'")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass the sentence whose tokens to hide behind [MASK]")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
    max_len = max_length(model, tokenizer)
    enc = tokenizer(text, text_pair, max_length=max_len)
    ids, tokens = list(enc.input_ids), list(enc.tokens)
    if positions is None:
        positions = [i for i, t in enumerate(ids) if t == tokenizer.mask_id]
        if not positions:
            raise ValueError(f"no [MASK] left in {text!r} after truncation to {max_len} tokens: "
                             "put the [MASK] earlier or shorten the text")
    else:
        positions = _maskable(positions, ids, tokenizer)
        for i in positions:
            ids[i], tokens[i] = tokenizer.mask_id, tokenizer.id_to_token(tokenizer.mask_id)
        text = tokenizer.decode(ids[1:-1], skip_special_tokens=False)

    def top(states: torch.Tensor) -> list[list[Guess]]:                 # states: (n, H), one row per guess list
        probs = head(states).float().softmax(-1).cpu()                  # (n, V)
        probs = probs[:, :tokenizer.vocab_size]   # ids the tokenizer has no token for are never guesses
        p, top_ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)    # sorted, most probable first
        return [[Guess(tokenizer.id_to_token(i), q) for q, i in zip(pr, ir)]
                for pr, ir in zip(p.tolist(), top_ids.tolist())]

    inputs = dict(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc.token_type_ids]),
                  attention_mask=torch.tensor([enc.attention_mask]))
    bert, m = base_model(model), len(positions)
    with inference(model):
        out = bert(**{k: v.to(bert.device) for k, v in inputs.items()}, output_hidden_states=by_layer)
        if by_layer:      # every layer through the head at once: its decoder weights are read once, not L times
            rows = top(torch.cat([h[0, positions] for h in out.hidden_states[1:]]))      # L · masks lists
            layers = [rows[l:l + m] for l in range(0, len(rows), m)]
            guesses = layers[-1]
        else:
            layers = []
            guesses = top(out.last_hidden_state[0, positions])
    return FillMask(text, tokens, list(positions), guesses, layers)


def _maskable(positions, ids: list[int], tokenizer) -> list[int]:
    """`positions` checked: ints that name word pieces (not [CLS], [SEP] or padding) of the encoded text."""
    if isinstance(positions, (str, int)) or not isinstance(positions, Sequence) or not positions:
        raise ValueError(f"positions must be a non-empty list of token positions, got {positions!r}"
                         + (f": write [{positions}]" if isinstance(positions, int) else ""))
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id}
    for i in positions:
        if (isinstance(i, bool) or not isinstance(i, int) or not 0 < i < len(ids) - 1 or ids[i] in special):
            raise ValueError(f"position {i!r} cannot be masked: choose one of the word pieces, positions 1 … "
                             f"{len(ids) - 2} ([CLS] and [SEP] are never masked)")
    return list(positions)


def next_sentence(model, tokenizer, a: str, b: str) -> float:
    """P(IsNext): the model's belief that `b` is the sentence that followed `a` (NSP head, label 0 = IsNext)."""
    if not has_nsp_head(model):
        raise ValueError(f"{type(model).__name__} has no next-sentence head: load a model pre-trained with NSP, "
                         "e.g. bertlab.load('bertlab-tiny')")
    for name, s in (("a", a), ("b", b)):
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"sentence {name} is {s!r}: give two non-empty sentences to compare")
    enc = tokenizer(a, b, max_length=max_length(model, tokenizer))
    with inference(model):
        out = model.bert(**enc.to_tensors(model.bert.device))
        logits = model.cls.seq_relationship(out.pooler_output)         # (1, 2)
    return float(logits.float().softmax(-1)[0, 0])


# ---- contextual vectors -------------------------------------------------------------------------

def _find_word(enc_ids: list[int], word_ids: list[int | None], pieces: list[int]) -> list[int]:
    """Start positions of every span that is exactly `pieces` and begins and ends on word boundaries."""
    n, T = len(pieces), len(enc_ids)
    starts = []
    for s in range(T - n + 1):
        if word_ids[s] is None or (s > 0 and word_ids[s - 1] == word_ids[s]):
            continue                                                   # not the start of a word
        if s + n < T and word_ids[s + n] is not None and word_ids[s + n] == word_ids[s + n - 1]:
            continue                                                   # the word goes on ("bank" in "banks")
        if enc_ids[s:s + n] == pieces:
            starts.append(s)
    return starts


def word_vectors(model, tokenizer, sentences: Sequence[str], word: str, layer=-1,
                 occurrence: int = 0) -> torch.Tensor:
    """The contextual vector of `word` in each sentence: its sub-token vectors averaged.

    The word is matched as whole words, piece by piece as the tokenizer splits it, so "bank" matches
    "Bank" in an uncased vocabulary but not "banks" or "embankment". `occurrence` picks the n-th match in
    each sentence (0 = first, -1 = last). `layer` indexes `hidden_states`: 0 is the embedding output
    (no context yet), -1 the last layer. Returns (n_sentences, H), or (n_sentences, L + 1, H) for
    `layer="all"`. All sentences run as one padded batch.
    """
    sentences = _texts(sentences, "sentences")
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"word is {word!r}: pass the word to look for, e.g. 'bank'")
    if isinstance(occurrence, bool) or not isinstance(occurrence, int):
        raise ValueError(f"occurrence must be an int (0 = first match, -1 = last), got {occurrence!r}")
    bert = base_model(model)
    index = _layer_index(layer, bert.config.num_hidden_layers)
    pieces = tokenizer.tokenize(word)
    if tokenizer.unk_id is not None and "[UNK]" in pieces:
        raise ValueError(f"{word!r} is not in this vocabulary (it tokenizes to {pieces}), so its vector would "
                         "be [UNK]'s: choose a word the tokenizer can spell")
    piece_ids = [tokenizer.token_to_id(p) for p in pieces]

    batch = tokenizer.batch(sentences, max_length=max_length(model, tokenizer))
    spans = []
    for i, (enc, sentence) in enumerate(zip(batch.encodings, sentences)):
        starts = _find_word(enc.input_ids, enc.word_ids, piece_ids)
        if not starts:
            raise ValueError(f"{word!r} (pieces {pieces}) is not a word of sentence {i} ({sentence!r}), whose "
                             f"tokens are {enc.tokens}: check the spelling, match the whole word (\"bank\" does "
                             "not match \"banks\"), or drop that sentence")
        if not -len(starts) <= occurrence < len(starts):
            raise ValueError(f"sentence {i} ({sentence!r}) has {len(starts)} occurrence(s) of {word!r}, so "
                             f"occurrence={occurrence} does not exist: pass 0 … {len(starts) - 1}")
        s = starts[occurrence]
        spans.append((s, s + len(pieces)))

    with inference(model):
        out = bert(**batch, output_hidden_states=True)
    states = torch.stack(out.hidden_states, dim=1).float().cpu()        # (B, L + 1, T, H)
    vectors = torch.stack([states[i, :, s:e].mean(dim=1) for i, (s, e) in enumerate(spans)])  # (B, L + 1, H)
    return vectors if index is None else vectors[:, index]


def cosine_distances(vectors) -> torch.Tensor:
    """1 − cosine similarity between every pair: (n, H) → (n, n), or per layer (n, L, H) → (L, n, n).

    0 means the same direction, 1 unrelated (orthogonal), 2 opposite. The diagonal is exactly 0.
    """
    if isinstance(vectors, (list, tuple)):
        if not vectors:
            raise ValueError("vectors is empty: pass a (n, H) tensor or a list of (H,) vectors")
        vectors = torch.stack([torch.as_tensor(v) for v in vectors])
    if not isinstance(vectors, torch.Tensor) or not vectors.is_floating_point():
        raise ValueError(f"vectors must be a floating-point tensor of shape (n, H) or (n, L, H), "
                         f"got {type(vectors).__name__}")
    if vectors.dim() not in (2, 3) or vectors.shape[0] == 0:
        raise ValueError(f"vectors must have shape (n, H) or (n, L, H) with n ≥ 1, got {tuple(vectors.shape)}"
                         + (": stack single vectors with torch.stack" if vectors.dim() == 1 else ""))
    x = vectors.detach().float().cpu()
    if x.dim() == 3:
        x = x.transpose(0, 1)                                          # (n, L, H) → (L, n, H)
    unit = F.normalize(x, dim=-1)                                      # a zero vector stays zero
    d = 1.0 - unit @ unit.transpose(-2, -1)                            # (…, n, n)
    d = ((d + d.transpose(-2, -1)) / 2).clamp(0.0, 2.0)                # symmetric to the last bit, in [0, 2]
    d.diagonal(dim1=-2, dim2=-1).zero_()
    return d


def sentence_embedding(model, tokenizer, texts: Sequence[str], layer=-1, pooling: str = "cls") -> torch.Tensor:
    """One vector per text: (n, H), or (n, L + 1, H) with `layer="all"`.

    `pooling="mean"` averages every real token of that layer (padding excluded, [CLS] and [SEP] included),
    which is how sentence-transformers pools MiniLM, so at the last layer it is all-MiniLM-L6-v2's
    embedding before its L2 normalisation. `pooling="cls"` takes the [CLS] token's hidden state at that
    layer. Note: at the last layer that is not `pooler_output`, which is tanh(W · h[CLS] + b), the
    NSP-trained summary that sequence classification uses.
    """
    texts = _texts(texts, "texts")
    if pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    bert = base_model(model)
    index = _layer_index(layer, bert.config.num_hidden_layers)
    batch = tokenizer.batch(texts, max_length=max_length(model, tokenizer))
    with inference(model):
        out = bert(**batch, output_hidden_states=True)
    states = _pick_layer(out.hidden_states, index, dim=1).float().cpu()  # (B, T, H) or (B, L + 1, T, H)
    if pooling == "cls":
        return states[..., 0, :]
    mask = batch.attention_mask.float()                                # (B, T): 1 for real tokens
    mask = mask[:, :, None] if index is not None else mask[:, None, :, None]
    return (states * mask).sum(dim=-2) / mask.sum(dim=-2)


# ---- attention rollout --------------------------------------------------------------------------

def attention_rollout(attentions, add_residual: bool = True, head_fusion: str = "mean") -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): how much each output position draws on each input token.

    Per layer the heads are fused (mean, or max/min), the residual connection is added as 0.5·A + 0.5·I
    (half of what a token carries forward is itself), rows are renormalised, and the layers are multiplied
    from the bottom up: R = Â_L ⋯ Â_2 Â_1. Row i of the (B, T, T) result sums to 1. It ignores the values
    and the feed-forward blocks, so read it as a rough map of information flow, not an attribution.

    `attentions` is `BertOutput.attentions` (L tensors of (B, heads, T, T), from `output_attentions=True`),
    a stacked (L, B, heads, T, T) tensor, or a `BertOutput` (or a head's output holding one).
    """
    if isinstance(getattr(attentions, "bert", None), BertOutput):      # a head's output
        attentions = attentions.bert
    if isinstance(attentions, BertOutput):
        attentions = attentions.attentions
        if attentions is None:
            raise ValueError("this BertOutput has no attentions: run the model with output_attentions=True")
    if isinstance(attentions, torch.Tensor):
        if attentions.dim() != 5:
            raise ValueError(f"a stacked attentions tensor must be (L, B, heads, T, T), got {tuple(attentions.shape)}"
                             + (": for one layer pass [attention]" if attentions.dim() == 4 else ""))
        attentions = list(attentions.unbind(0))
    if not isinstance(attentions, Sequence) or len(attentions) == 0:
        raise ValueError("attentions must be a non-empty list of (B, heads, T, T) tensors, one per layer: "
                         "run the model with output_attentions=True and pass out.attentions")
    fuse = {"mean": lambda a: a.mean(dim=1), "max": lambda a: a.amax(dim=1), "min": lambda a: a.amin(dim=1)}
    if head_fusion not in fuse:
        raise ValueError(f"head_fusion must be 'mean', 'max' or 'min', got {head_fusion!r}")
    shape = None
    rollout = None
    for l, a in enumerate(attentions):
        if not isinstance(a, torch.Tensor) or a.dim() != 4 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attentions[{l}] must be a (B, heads, T, T) tensor, got "
                             f"{tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__}")
        if shape is not None and a.shape != shape:
            raise ValueError(f"attentions[{l}] has shape {tuple(a.shape)} but attentions[0] has {tuple(shape)}: "
                             "pass the layers of one forward pass")
        shape = a.shape
        A = fuse[head_fusion](a.detach().float().cpu())               # (B, T, T)
        if add_residual:
            A = 0.5 * A + 0.5 * torch.eye(A.shape[-1])
        A = A / A.sum(dim=-1, keepdim=True)
        rollout = A if rollout is None else A @ rollout                # layer l reads what layers below produced
    return rollout


# ---- inspection probes: one module each (imported last: they use the plumbing above) ---------------
from .attention_maps import AttentionMap, attention_map, merge_word_pieces, word_groups  # noqa: E402
from .contextuality import Contextuality, contextuality  # noqa: E402
from .head_types import HeadTypes, head_types  # noqa: E402
from .layers import LayerProbe, load_probing_set, probe_layers  # noqa: E402
from .nearest import NearestContexts, nearest_contexts  # noqa: E402
from .neurons import AttentionNeurons, attention_neurons  # noqa: E402
from .saliency import Saliency, saliency  # noqa: E402
from .ablation import Ablation, AblationEffect, HeadImportance, ablate, head_importance  # noqa: E402
