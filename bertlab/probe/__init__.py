"""Probes: ask a trained BERT a question and get plain numbers back.

    fill_mask(model, tok, "The river [MASK] was muddy.")            # what goes in the gap, with probabilities
    next_sentence(model, tok, "It rained all day.", "The river rose.")   # P(IsNext)
    v = word_vectors(model, tok, ["the river bank", "the bank account"], "bank")   # (2, H)
    cosine_distances(v)                                              # (2, 2): same word, different contexts
    sentence_embedding(model, tok, texts, pooling="mean")            # (n, H)
    attention_rollout(model(**enc, output_attentions=True).attentions)   # (B, T, T)
    head_importance(model, tok, "The river [MASK] was muddy.", targets=["bank"])
    with ablate(model, [(0, 1)]): ...                                # head 1 of layer 0 silenced

Every probe runs without gradients in eval mode (each module's own mode comes back afterwards), takes
text, and returns CPU tensors or small dataclasses, so a notebook can print or plot the answer directly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..model.bert import Bert, BertOutput
from ..model.heads import BertForMaskedLM, BertForPreTraining


# ---- shared plumbing ---------------------------------------------------------------------------

@contextlib.contextmanager
def _inference(model) -> Iterator[None]:
    """No autograd and eval mode (no dropout) for the body; every module gets its own mode back afterwards."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for m, mode in modes:
            m.training = mode


def _encoder(model) -> Bert:
    """The `Bert` inside a model: the model itself, or a head's `.bert`."""
    if isinstance(model, Bert):
        return model
    if isinstance(getattr(model, "bert", None), Bert):
        return model.bert
    raise ValueError(f"expected a bertlab model (Bert or a head such as BertForPreTraining), got "
                     f"{type(model).__name__}: load one with bertlab.load('minilm') or bertlab.load('bertlab-tiny')")


def _mlm_head(model):
    if isinstance(model, (BertForPreTraining, BertForMaskedLM)):
        return model.cls.predictions
    raise ValueError(f"{type(model).__name__} has no masked-LM head, so it cannot fill in [MASK] "
                     "(MiniLM was distilled into a sentence encoder and lost its head): "
                     "load a pre-trained model with one, e.g. bertlab.load('bertlab-tiny')")


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


def _max_length(model, tokenizer) -> int:
    return min(_encoder(model).config.max_position_embeddings, tokenizer.model_max_length)


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


def fill_mask(model, tokenizer, text: str, top_k: int = 5, by_layer: bool = False) -> FillMask:
    """Top-k tokens for every `[MASK]` in `text`, with probabilities (and per layer with `by_layer=True`).

    Each mask is guessed on its own from the same forward pass (all masks stay masked), as BERT was trained.
    """
    head = _mlm_head(model)
    if not isinstance(text, str) or "[MASK]" not in text:
        raise ValueError("text must contain [MASK] where the model should guess a word, e.g. "
                         "'The river [MASK] was muddy.'")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
    max_len = _max_length(model, tokenizer)
    enc = tokenizer(text, max_length=max_len)
    positions = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
    if not positions:
        raise ValueError(f"no [MASK] left in {text!r} after truncation to {max_len} tokens: "
                         "put the [MASK] earlier or shorten the text")

    def top(hidden: torch.Tensor) -> list[list[Guess]]:                 # hidden: (1, T, H)
        probs = head(hidden[0, positions]).float().softmax(-1).cpu()    # (masks, V)
        p, ids = probs.topk(min(top_k, probs.shape[-1]), dim=-1)        # sorted, most probable first
        return [[Guess(tokenizer.id_to_token(int(i)), float(q)) for q, i in zip(pr, ir)] for pr, ir in zip(p, ids)]

    with _inference(model):
        out = model.bert(**enc, output_hidden_states=by_layer)
        layers = [top(h) for h in out.hidden_states[1:]] if by_layer else []
        guesses = top(out.last_hidden_state)
    return FillMask(text, enc.tokens, positions, guesses, layers)


def next_sentence(model, tokenizer, a: str, b: str) -> float:
    """P(IsNext): the model's belief that `b` is the sentence that followed `a` (NSP head, label 0 = IsNext)."""
    if not isinstance(model, BertForPreTraining):
        raise ValueError(f"{type(model).__name__} has no next-sentence head: load a model pre-trained with NSP, "
                         "e.g. bertlab.load('bertlab-tiny')")
    for name, s in (("a", a), ("b", b)):
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"sentence {name} is {s!r}: give two non-empty sentences to compare")
    enc = tokenizer(a, b, max_length=_max_length(model, tokenizer))
    with _inference(model):
        out = model.bert(**enc)
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
    bert = _encoder(model)
    index = _layer_index(layer, bert.config.num_hidden_layers)
    pieces = tokenizer.tokenize(word)
    if tokenizer.unk_id is not None and "[UNK]" in pieces:
        raise ValueError(f"{word!r} is not in this vocabulary (it tokenizes to {pieces}), so its vector would "
                         "be [UNK]'s: choose a word the tokenizer can spell")
    piece_ids = [tokenizer.token_to_id(p) for p in pieces]

    batch = tokenizer.batch(sentences, max_length=_max_length(model, tokenizer))
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

    with _inference(model):
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
    bert = _encoder(model)
    index = _layer_index(layer, bert.config.num_hidden_layers)
    batch = tokenizer.batch(texts, max_length=_max_length(model, tokenizer))
    with _inference(model):
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


# ---- ablating heads -----------------------------------------------------------------------------

def _heads_by_layer(model, heads) -> dict[int, list[int]]:
    cfg = _encoder(model).config
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
        if not 0 <= l < L or not 0 <= h < A:
            raise ValueError(f"head ({l}, {h}) does not exist: this model has layers 0 … {L - 1} and heads "
                             f"0 … {A - 1} in each")
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
    bert = _encoder(model)

    def zero(chosen: list[int]):
        def fn(z, name):
            z = z.clone()
            z[:, chosen] = 0                                           # (B, heads, T, Dh): silence those heads
            return z
        return fn

    with bert.hooks([(f"encoder.layer.{l}.attention.self.hook_z", zero(hs)) for l, hs in by_layer.items()]):
        yield model


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
    has_head = isinstance(model, (BertForPreTraining, BertForMaskedLM))
    if metric == "auto":
        metric = ("mlm_loss" if targets is not None else "prediction") if has_head and "[MASK]" in text else "output"
    if metric == "output" and targets is not None:
        raise ValueError("targets are scored at [MASK]s by a masked-LM head: this text or model has none "
                         "(use bertlab.load('bertlab-tiny') and a text with [MASK]), or drop targets")
    if metric != "output":
        head = _mlm_head(model)
    if metric == "mlm_loss" and targets is None:
        raise ValueError("metric 'mlm_loss' needs targets, the true word for each [MASK]")

    bert = _encoder(model)
    enc = tokenizer(text, max_length=_max_length(model, tokenizer))
    positions = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
    if metric != "output" and not positions:
        raise ValueError(f"metric {metric!r} reads the [MASK]s, but {text!r} has none (after truncation): "
                         "put [MASK] where a word goes, or use metric='output'")
    if metric == "mlm_loss":
        if len(targets) != len(positions):
            raise ValueError(f"{text!r} has {len(positions)} [MASK](s) but {len(targets)} target(s) were "
                             "given: pass one true word per [MASK], in order")
        target_ids = torch.tensor([_target_id(tokenizer, w, k) for k, w in enumerate(targets)])

    def run() -> torch.Tensor:
        return bert(**enc).last_hidden_state[0].float()                # (T, H)

    def measure(h: torch.Tensor, clean: torch.Tensor) -> float:
        if metric == "output":
            return float((1.0 - F.cosine_similarity(h, clean, dim=-1)).mean())
        logp = head(h[positions]).float().log_softmax(-1).cpu()        # (masks, V)
        if metric == "mlm_loss":
            return float(F.nll_loss(logp, target_ids))
        return float(logp.gather(1, top_ids[:, None]).exp().mean())   # P(unablated guess), averaged over masks

    cfg = bert.config
    scores = torch.zeros(cfg.num_hidden_layers, cfg.num_attention_heads)
    with _inference(model):
        clean = run()
        if metric == "prediction":
            top_ids = head(clean[positions]).float().argmax(-1).cpu()  # (masks,)
        baseline = measure(clean, clean) if metric != "output" else 0.0
        for l in range(cfg.num_hidden_layers):
            for h in range(cfg.num_attention_heads):
                with ablate(model, [(l, h)]):
                    value = measure(run(), clean)
                scores[l, h] = value - baseline if metric in ("mlm_loss", "output") else baseline - value
    return HeadImportance(scores, baseline, metric, enc.tokens)


# ---- inspection probes: one module each (imported last: they use the plumbing above) ---------------
from .contextuality import Contextuality, contextuality  # noqa: E402
from .head_types import HeadTypes, head_types  # noqa: E402
from .layers import LayerProbe, load_probing_set, probe_layers  # noqa: E402
from .nearest import NearestContexts, nearest_contexts  # noqa: E402
from .neurons import AttentionNeurons, attention_neurons  # noqa: E402
from .saliency import Saliency, saliency  # noqa: E402
