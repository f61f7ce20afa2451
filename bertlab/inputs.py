"""What a bertlab model accepts as input, and errors that teach when it is given something else.

Each check turns a mistake that would surface as an index error deep inside torch (an id past the vocabulary,
a mask of the wrong length, a float where ids belong) into a ValueError that says what was wrong and what to
pass instead. They live here rather than in `model/` so that the model reads as the paper's maths, top to
bottom, and so that the probes can check their inputs the same way.
"""

from __future__ import annotations

import logging
import weakref

import torch

from .config import BertConfig


def check_inputs(config: BertConfig, device: torch.device, input_ids, token_type_ids=None, attention_mask=None):
    """The three inputs as int64 (the mask may stay bool) tensors on `device`, or a ValueError that says what to do."""
    input_ids = as_ids("input_ids", input_ids, device)
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}"
                         + (": add a batch dimension with input_ids[None]" if input_ids.dim() == 1 else ""))
    B, T = input_ids.shape
    if B == 0:
        # An error rather than an empty output: an empty batch is nearly always a filter upstream that
        # dropped every example, and tok.batch([]) and collate([]) refuse one too.
        raise ValueError(f"input_ids is an empty batch (shape {tuple(input_ids.shape)}): pass at least one "
                         "sequence; did a filter upstream drop every example?")
    if T == 0:
        raise ValueError("input_ids is empty (seq_len 0): every BERT input has at least [CLS] and [SEP]")
    if T > config.max_position_embeddings:
        raise ValueError(f"sequence of {T} tokens is longer than max_position_embeddings "
                         f"{config.max_position_embeddings}: tokenize with max_length="
                         f"{config.max_position_embeddings} (truncation) or pass a shorter text")
    lo, hi = torch.aminmax(input_ids)
    if lo < 0 or hi >= config.vocab_size:
        bad = int(lo) if lo < 0 else int(hi)
        raise ValueError(f"token id {bad} is outside the vocabulary (0 … {config.vocab_size - 1}): "
                         "was the text encoded with a different tokenizer than this model's?")
    if token_type_ids is not None:
        token_type_ids = as_ids("token_type_ids", token_type_ids, device)
        if token_type_ids.shape != input_ids.shape:
            raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)} but input_ids has "
                             f"{tuple(input_ids.shape)}: they must match, one segment id per token")
        lo, hi = torch.aminmax(token_type_ids)
        if lo < 0 or hi >= config.type_vocab_size:
            raise ValueError(f"token_type_ids must be in 0 … {config.type_vocab_size - 1} "
                             f"(0 = sentence A, 1 = sentence B), got {int(lo) if lo < 0 else int(hi)}")
    if attention_mask is not None:
        attention_mask = as_ids("attention_mask", attention_mask, device, allow_bool=True)
        if attention_mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)} but input_ids has "
                             f"{tuple(input_ids.shape)}: pass one 1/0 per token (1 = real, 0 = padding)")
        if attention_mask.dtype != torch.bool:
            bad = (attention_mask != 0) & (attention_mask != 1)
            if bool(bad.any()):
                raise ValueError(f"attention_mask must hold only 1 (real token) and 0 (padding), got "
                                 f"{int(attention_mask[bad][0])}: pass the tokenizer's attention_mask; the "
                                 "model builds the additive 0 / -inf mask from it itself")
    return input_ids, token_type_ids, attention_mask


def flatten_choices(input_ids, token_type_ids=None, attention_mask=None):
    """A multiple-choice batch (B, C, T) → each input flattened to (B·C, T), and C; the encoder reads one
    (context, ending) pair per row. Token-level checks follow in the encoder, on the flattened rows."""
    input_ids = as_ids("input_ids", input_ids, None)
    if input_ids.dim() != 3:
        raise ValueError(f"a multiple-choice input_ids has shape (batch, choices, seq_len), got "
                         f"{tuple(input_ids.shape)}: stack each question's C encoded (context, ending) pairs")
    flat = []
    for name, x in (("token_type_ids", token_type_ids), ("attention_mask", attention_mask)):
        if x is not None:
            x = as_ids(name, x, None, allow_bool=name == "attention_mask")
            if x.shape != input_ids.shape:
                raise ValueError(f"{name} has shape {tuple(x.shape)} but input_ids has {tuple(input_ids.shape)}: "
                                 "they must match, (batch, choices, seq_len)")
            x = x.flatten(0, 1)                                                   # (B·C, T)
        flat.append(x)
    return input_ids.flatten(0, 1), *flat, input_ids.shape[1]


def check_labels(labels: torch.Tensor, num_labels: int) -> None:
    """Class labels in 0 … num_labels - 1 (pass only the labelled ones: IGNORE is not a class)."""
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_labels):
        raise ValueError(f"labels must be in 0 … {num_labels - 1}, got values from {int(labels.min())} "
                         f"to {int(labels.max())}")


def check_label_shape(labels: torch.Tensor, shape: torch.Size, ignore: int) -> None:
    if labels.shape != shape:
        raise ValueError(f"labels has shape {tuple(labels.shape)} but the input has {tuple(shape)}: "
                         f"one label per token, {ignore} where there is none")


def as_ids(name: str, x, device, allow_bool: bool = False) -> torch.Tensor:
    """`x` as an integer tensor (int64; bool kept where allowed) on `device` (None: where it is)."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError):
            raise ValueError(f"{name} must be a tensor or nested list of integers, got {type(x).__name__}") from None
        if x.numel() == 0:
            x = x.long()  # torch.as_tensor([]) is float32: let the shape checks name the real problem
    if x.is_floating_point() or x.is_complex() or (x.dtype == torch.bool and not allow_bool):
        why = ("1 = real token, 0 = padding: pass attention_mask.long()" if allow_bool
               else "token ids index a table")
        raise ValueError(f"{name} must hold integers, got dtype {x.dtype}: {why}")
    if x.dtype == torch.bool:
        return x.to(device)
    # every integer dtype (uint8, int16, int32, ...) becomes int64: range checks against the vocabulary
    # cannot wrap around, and the embedding lookup accepts it
    return x.to(device=device, dtype=torch.long)


def check_tokens(tokens, T: int, what: str) -> list[str]:
    """`tokens` as a list of str no longer than the T positions of `what`, or a ValueError that says so."""
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of token strings, e.g. enc.tokens")
    tokens = list(tokens)
    if not tokens:
        raise ValueError("tokens is empty: pass the tokens of the text, e.g. enc.tokens")
    if len(tokens) > T:
        raise ValueError(f"{len(tokens)} tokens given for {what} over {T} positions: "
                         "pass the tokens of the same text the model ran on")
    return tokens


# tokenizer -> the models (or, with no model, the vocabulary sizes) it was already warned about. Weak references,
# not ids: an id is reused once its object is freed, so a new model could inherit an old one's silence.
_WARNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def check_vocabularies(vocab_size: int, tokenizer, model_name: str = "the model", model=None) -> None:
    """A tokenizer that cannot be the model's own (more tokens than the model has embeddings) is a ValueError;
    one with fewer tokens is a warning (once per pair) saying what happens to the ids it cannot produce.

    Every place a model meets a tokenizer calls this (the probes through `probe.max_length`, the widgets,
    `pretrain(init=...)`, `save`): a model paired with another model's tokenizer answers fluently and wrongly
    ("[unused591]", p = 0.21), since the ids the two share stand for different words.
    """
    n = getattr(tokenizer, "vocab_size", None)
    if not isinstance(n, int):
        return                       # not a bertlab Tokenizer (a transformers one in a view): nothing to compare
    if n > vocab_size:
        raise ValueError(f"the tokenizer has {n} tokens but {model_name} only {vocab_size} embeddings, so the "
                         f"tokenizer cannot be the model's own (ids {vocab_size} … {n - 1} have no embedding, and "
                         "the ids they share stand for other words): use the tokenizer that came with the model, "
                         "e.g. model, tokenizer = bertlab.load(...)")
    models, sizes = _WARNED.setdefault(tokenizer, (weakref.WeakSet(), set()))
    seen, key = (models, model) if model is not None else (sizes, vocab_size)
    if n < vocab_size and key not in seen:      # once per pair: a widget asks at every keystroke
        seen.add(key)
        logging.getLogger("bertlab").warning(
            "the tokenizer has %d tokens but %s %d embeddings: the model's last %d ids have no token, so the "
            "tokenizer never produces them and masked-word guesses leave them out (harmless for a vocabulary "
            "padded to a round size; otherwise check that this is the model's own tokenizer)",
            n, model_name, vocab_size, vocab_size - n)
