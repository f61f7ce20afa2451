"""Running a model for a probe: the encoder inside a head, which heads it has, and a forward pass to read.

Everything a notebook or widget shows is read off a forward pass in eval mode without gradients, so these
are the few things every probe (and every widget built on the probes) needs:

    with inference(model): ...                 # no dropout, no autograd; each module's own mode comes back
    base_model(model)                          # the Bert inside a BertForPreTraining (or the Bert itself)
    has_mlm_head(model), has_nsp_head(model)   # can it fill in [MASK]? judge a sentence pair?
    max_length(model, tokenizer)                    # the longest input (in tokens) both take
    run(model, enc, output_attentions=True)    # the encoder's BertOutput for one encoded text
    attention_weights(model, batch)            # every layer's (B, heads, T, T), any model that returns them
    text_attention(model, tokenizer, text)     # one text's attention weights and its tokens
    embedding_parts(model, enc)                # the input embeddings only: token, segment, position, sum, normed
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch

from ..inputs import check_vocabularies
from ..model.bert import Bert, BertOutput
from ..model.heads import BertForMaskedLM, BertForPreTraining, BertLMPredictionHead

__all__ = ["inference", "base_model", "has_mlm_head", "has_nsp_head", "mlm_head", "max_length", "check_pair", "layer_and_head", "run",
           "attention_weights", "text_attention", "TextAttention", "embedding_parts"]


@contextlib.contextmanager
def inference(model) -> Iterator[None]:
    """No autograd and eval mode (no dropout) for the body; every module gets its own mode back afterwards.

    Why not `model.eval()`: a notebook may be half-way through training (or fine-tuning only a head), and
    a probe must leave the model exactly as it found it, submodule by submodule.
    """
    modes = [(m, m.training) for m in model.modules()]
    training = any(mode for _, mode in modes)          # a model already in eval mode (the usual case) is left be
    if training:
        model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        if training:
            for m, mode in modes:
                m.training = mode


def base_model(model) -> Bert:
    """The `Bert` inside a model: the model itself, or a head's `.bert` (HuggingFace calls it `base_model`)."""
    if isinstance(model, Bert):
        return model
    if isinstance(getattr(model, "bert", None), Bert):
        return model.bert
    raise ValueError(f"expected a bertlab model (Bert or a head such as BertForPreTraining), got "
                     f"{type(model).__name__}: load one with bertlab.load('minilm') or bertlab.load('bertlab-tiny')")


def has_mlm_head(model) -> bool:
    """Whether `model` can fill in [MASK]: it was pre-trained with a masked-LM head and kept it.

    bertlab-tiny and bertlab-mini did; MiniLM did not (it was distilled into a sentence encoder), nor does
    a bare `Bert` or a fine-tuned classifier.
    """
    return isinstance(model, (BertForPreTraining, BertForMaskedLM))


def has_nsp_head(model) -> bool:
    """Whether `model` can judge a sentence pair: it kept the next-sentence-prediction head of pre-training."""
    return isinstance(model, BertForPreTraining)


def mlm_head(model) -> BertLMPredictionHead:
    """The masked-LM head (`cls.predictions`: hidden state → vocabulary logits), or a ValueError that says why not."""
    if has_mlm_head(model):
        return model.cls.predictions
    raise ValueError(f"{type(model).__name__} has no masked-LM head, so it cannot fill in [MASK] "
                     "(MiniLM was distilled into a sentence encoder and lost its head): "
                     "load a pre-trained model with one, e.g. bertlab.load('bertlab-tiny')")


def max_length(model, tokenizer) -> int:
    """The longest input, [CLS] and [SEP] included, that both the model (its positions) and the tokenizer take.

    Every probe that encodes text asks this first, so it is also where a tokenizer that is not the model's own
    is caught (inputs.check_vocabularies: more tokens than embeddings is an error, fewer a warning)."""
    check_pair(model, tokenizer)
    return min(base_model(model).config.max_position_embeddings, tokenizer.model_max_length)


def check_pair(model, tokenizer) -> None:
    """A ValueError if `tokenizer` has more tokens than `model` has embeddings; a warning if it has fewer."""
    check_vocabularies(base_model(model).config.vocab_size, tokenizer, model=model)


def layer_and_head(model, layer, head) -> tuple[int, int]:
    """`(layer, head)` checked against the model, negative values counted from the end as Python indexes."""
    cfg = base_model(model).config
    n_layers, n_heads = cfg.num_hidden_layers, cfg.num_attention_heads
    for name, value, n in (("layer", layer, n_layers), ("head", head, n_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or not -n <= value < n:
            raise ValueError(f"{name} must be an int in 0 … {n - 1} (or -{n} … -1 from the end) for this model "
                             f"with {n_layers} layers of {n_heads} heads, got {value!r}")
    return layer % n_layers, head % n_heads


def _on_device(bert: Bert, inputs) -> dict[str, torch.Tensor]:
    return {k: inputs[k].to(bert.device) for k in inputs.keys()}        # Encoding, Batch and dict alike


def run(model, inputs, **flags) -> BertOutput:
    """The encoder's `BertOutput` for `inputs` (an `Encoding`, a `Batch` or a dict of tensors), read in eval
    mode without gradients. `flags` go to `Bert.forward` (`output_attentions=True`, `output_hidden_states=True`).

    A head's own layers do not run: a widget that shows attention or hidden states needs only the encoder.
    """
    bert = base_model(model)
    with inference(model):
        return bert(**_on_device(bert, inputs), **flags)


def attention_weights(model, inputs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Every layer's attention weights for `inputs` (an `Encoding`, a `Batch` or a dict of tensors): L
    tensors of (B, heads, T, T), float32 on the CPU, read in eval mode without gradients.

    `model` is a bertlab model (a head's weights come from its encoder's output, `.bert`), or any torch
    module that returns `.attentions` for `output_attentions=True`, such as a transformers BERT loaded
    with attn_implementation="eager": the attention views draw either.
    """
    try:
        device = next(model.parameters()).device
    except (AttributeError, StopIteration):
        device = torch.device("cpu")
    tensors = {k: inputs[k].to(device) for k in inputs.keys()}
    with inference(model) if isinstance(model, torch.nn.Module) else contextlib.nullcontext():
        out = model(**tensors, output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if attentions is None and hasattr(out, "bert"):        # bertlab's heads keep the encoder's output at .bert
        attentions = getattr(out.bert, "attentions", None)
    if not attentions:
        raise ValueError(f"the model returned no attention weights ({type(out).__name__}.attentions is empty): "
                         "it must return them for output_attentions=True, as bertlab's Bert and heads do; "
                         "a transformers model needs attn_implementation='eager'")
    return tuple(a.detach().float().cpu() for a in attentions)


@dataclass
class TextAttention:
    """One text's attention weights (L tensors of (1, heads, T, T), float32 on the CPU) and its tokens."""
    attentions: tuple[torch.Tensor, ...]
    tokens: list[str]


def text_attention(model, tokenizer, text: str, text_pair: str | None = None) -> TextAttention:
    """Run `model` on one text (or pair) for its attention: what the attention probes read when given text."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass the sentence whose attention to read")
    if text_pair is not None and (not isinstance(text_pair, str) or not text_pair.strip()):
        raise ValueError(f"text_pair is {text_pair!r}: pass the second sentence, or leave it out")
    enc = tokenizer(text, text_pair, max_length=max_length(model, tokenizer))
    return TextAttention(attention_weights(model, enc.to_tensors()), list(enc.tokens))


def embedding_parts(model, inputs) -> "EmbeddingParts":  # noqa: F821  (bertlab.model.embeddings)
    """BERT's input for `inputs` (an `Encoding` or `Batch`), part by part: token, segment and position
    embeddings, their sum, and LayerNorm(sum), each (B, T, H). Only the embedding layer runs."""
    bert = base_model(model)
    tensors = _on_device(bert, inputs)
    with inference(model):
        return bert.embeddings(tensors["input_ids"], tensors["token_type_ids"])
