"""What a tokenizer hands the model: an `Encoding` for one text (or pair), a `Batch` for several.

Both behave like a mapping of exactly the model's inputs, so `model(**tok(text))` and `model(**tok.batch(texts))`
work; the tokens, word ids and segment ids ride along for the notebooks, which show what each id stands for.
`Tokenizer` (tokenizer.py) makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

#: The tensors a BERT model takes; ``model(**encoding)`` passes exactly these.
MODEL_INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")


def _model_input_error(key: object) -> KeyError:
    return KeyError(f"{key!r} is not a model input: use one of {', '.join(MODEL_INPUT_NAMES)}")


@dataclass
class Encoding:
    """One encoded text (or text pair), unpadded.

    The lists run in parallel: position ``i`` is token ``tokens[i]`` with id
    ``input_ids[i]``. ``word_ids`` says which word of its segment a token came
    from (None for [CLS]/[SEP]); ``sequence_ids`` says which segment (0 for A,
    1 for B, None for specials). Word ids restart at 0 in segment B, as in
    transformers.

    An Encoding behaves like a mapping of model inputs, so ``model(**enc)``
    works: ``enc["input_ids"]`` is a (1, T) long tensor.
    """

    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]
    tokens: list[str]
    word_ids: list[int | None]
    sequence_ids: list[int | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.input_ids)

    def keys(self) -> tuple[str, ...]:
        """The model inputs, so that ``**encoding`` unpacks into a model call."""
        return MODEL_INPUT_NAMES

    def __getitem__(self, key: str) -> torch.Tensor:
        if key not in MODEL_INPUT_NAMES:
            raise _model_input_error(key)
        # A model wants a batch dimension, so a single text is a batch of one: (1, T).
        return torch.tensor([getattr(self, key)], dtype=torch.long)

    def to_tensors(self, device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
        """The model inputs as (1, T) long tensors, on ``device`` if given."""
        return {key: self[key].to(device) if device is not None else self[key] for key in MODEL_INPUT_NAMES}


@dataclass
class Batch:
    """Several encodings padded to one length T and stacked into (B, T) tensors.

    Padding goes on the right: ``[PAD]`` ids, attention mask 0 (so attention
    ignores them) and token type 0. ``tokens`` and ``word_ids`` are padded the
    same way (with "[PAD]" and None); ``encodings`` keeps the unpadded originals.
    ``model(**batch)`` passes the three tensors.
    """

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    tokens: list[list[str]]
    word_ids: list[list[int | None]]
    encodings: list[Encoding]

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def keys(self) -> tuple[str, ...]:
        """The model inputs, so that ``**batch`` unpacks into a model call."""
        return MODEL_INPUT_NAMES

    def __getitem__(self, key: str) -> torch.Tensor:
        if key not in MODEL_INPUT_NAMES:
            raise _model_input_error(key)
        return getattr(self, key)

    def to(self, device: torch.device | str) -> Batch:
        """A copy whose tensors live on ``device`` (the Python lists are shared)."""
        return Batch(
            input_ids=self.input_ids.to(device),
            token_type_ids=self.token_type_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            tokens=self.tokens,
            word_ids=self.word_ids,
            encodings=self.encodings,
        )
