"""WordPiece tokenization for BERT, built on HuggingFace `tokenizers`.

BERT never sees text: it sees integer ids. This module turns text into those ids
exactly the way the original BERT (and transformers' ``BertTokenizerFast``) does,
so a checkpoint trained elsewhere receives the inputs it was trained on.

The pipeline, stage by stage (each stage is a `tokenizers` component):

1. **Normalizer** (``BertNormalizer``): drop control characters, turn every
   whitespace into a space, put spaces around CJK ideographs (Chinese has no
   spaces between words, so each character becomes its own word), and, for an
   uncased model, lowercase and strip accents ("Café" -> "cafe").
2. **Pre-tokenizer** (``BertPreTokenizer``): split on whitespace and punctuation
   into "words".
3. **Model** (``WordPiece``): split each word greedily into the longest pieces
   found in the vocabulary; pieces inside a word carry a ``##`` prefix
   ("unaffable" -> "un", "##aff", "##able"). A word with no split, or longer
   than 100 characters, becomes ``[UNK]``.
4. **Post-processor** (``TemplateProcessing``): add ``[CLS]`` in front and
   ``[SEP]`` after each segment, and mark segment B with token type 1.

Padding and truncation are done here rather than inside `tokenizers`, so the
rules are visible in Python and a loaded ``tokenizer.json`` cannot change them.

What a call returns (`Encoding`, `Batch`) is in encoding.py; how :meth:`Tokenizer.train`
learns a vocabulary, with its guaranteed `BASE_ALPHABET`, is in training.py. All three are
re-exported by the package, `bertlab.tokenizer`.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Union

import tokenizers
import torch
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

from .. import files
from ..config import read_config_json
from .encoding import MODEL_INPUT_NAMES, Batch, Encoding  # noqa: F401  (MODEL_INPUT_NAMES re-exported)
from .inputs import _check_ids, _check_text, _check_words, _replace_surrogates  # noqa: F401
from .training import BASE_ALPHABET, learn_vocabulary

logger = logging.getLogger(__name__)

__all__ = ["SPECIAL_TOKENS", "BASE_ALPHABET", "MODEL_INPUT_NAMES", "Encoding", "Batch", "Tokenizer"]

#: BERT's special tokens. In a vocabulary trained by :meth:`Tokenizer.train` they get ids 0..4 in this order.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: Words longer than this become [UNK]: the value BERT and transformers use.
MAX_INPUT_CHARS_PER_WORD = 100

_TRUNCATION_STRATEGIES = {True: "longest_first", "longest_first": "longest_first",
                          "only_first": "only_first", "only_second": "only_second"}

TextOrFile = Union[str, "os.PathLike[str]"]


def _bert_normalizer(lowercase: bool, strip_accents: bool | None) -> normalizers.BertNormalizer:
    # strip_accents=None means "follow lowercase", as in the original BERT.
    return normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents, lowercase=lowercase
    )


def _bert_post_processor(cls_id: int, sep_id: int) -> processors.TemplateProcessing:
    # ":1" marks segment B (and its closing [SEP]) with token type 1.
    return processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )


def _bert_backend(model: models.Model, lowercase: bool, strip_accents: bool | None) -> tokenizers.Tokenizer:
    """Wire a WordPiece model into the BERT pipeline (everything but the post-processor)."""
    backend = tokenizers.Tokenizer(model)
    backend.normalizer = _bert_normalizer(lowercase, strip_accents)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    return backend


def _normalizer_state(backend: tokenizers.Tokenizer) -> dict[str, Any] | None:
    if backend.normalizer is None:
        return None
    return json.loads(backend.normalizer.__getstate__())


def _lowercases(state: dict[str, Any] | None) -> bool:
    """Whether a (serialized) normalizer lowercases text."""
    if state is None:
        return False
    kind = state.get("type")
    if kind == "BertNormalizer":
        return bool(state.get("lowercase"))
    if kind == "Lowercase":
        return True
    if kind == "Sequence":
        return any(_lowercases(s) for s in state.get("normalizers", []))
    return False


def _read_vocab_txt(path: Path) -> dict[str, int]:
    """Read vocab.txt the way transformers does: line i is the token with id i."""
    try:
        with open(path, encoding="utf-8") as f:
            # rstrip("\n") only: a token may legitimately end in other whitespace.
            return {line.rstrip("\n"): i for i, line in enumerate(f)}
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start}); "
                         "a vocab.txt is UTF-8, so convert it, e.g. iconv -f latin1 -t utf-8") from None


def _iter_training_texts(items: Iterable[Any]) -> Iterator[str]:
    """Yield training texts lazily: a str is text, an os.PathLike is a file read line by line.

    Streaming means a corpus never has to fit in memory: only its word counts do.
    """
    for i, item in enumerate(items):
        if isinstance(item, os.PathLike):
            path = Path(item)
            if not path.is_file():
                raise FileNotFoundError(f"training file {path} does not exist: pass existing text files")
            with open(path, encoding="utf-8") as f:
                yield from f
        elif isinstance(item, str):
            yield _replace_surrogates(item, f"training text {i}")
        else:
            raise ValueError(
                f"training item {i} must be a str (text) or an os.PathLike (file), got {type(item).__name__}"
            )


class Tokenizer:
    """A BERT WordPiece tokenizer that gives the same ids as transformers' ``BertTokenizerFast``.

    Build one with :meth:`from_file` (a ``vocab.txt`` or ``tokenizer.json``) or
    :meth:`train`; call it on text to get an :class:`Encoding`, or use
    :meth:`batch` for padded tensors.
    """

    def __init__(
        self,
        backend: tokenizers.Tokenizer,
        lowercase: bool | None = None,
        model_max_length: int = 512,
    ) -> None:
        """Wrap a ready `tokenizers.Tokenizer`; ``lowercase=None`` reads it from the normalizer."""
        missing = [tok for tok in SPECIAL_TOKENS if backend.token_to_id(tok) is None]
        if missing:
            raise ValueError(
                f"the vocabulary lacks the special tokens {', '.join(missing)}: "
                f"a BERT vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
            )
        # bertlab pads and truncates itself, per call; a file's saved settings must not sneak in.
        backend.no_padding()
        backend.no_truncation()
        # Special tokens are matched in the raw text (so "[MASK]" stays one token)
        # and dropped by decode(skip_special_tokens=True). Adding ones already
        # present only marks them special; ids do not change.
        backend.add_special_tokens(list(SPECIAL_TOKENS))
        if backend.post_processor is None:
            backend.post_processor = _bert_post_processor(
                backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
            )
        self.backend: tokenizers.Tokenizer = backend
        self.lowercase: bool = _lowercases(_normalizer_state(backend)) if lowercase is None else lowercase
        self.model_max_length: int = model_max_length
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            backend.token_to_id(tok) for tok in SPECIAL_TOKENS
        )

    # ------------------------------------------------------------------ building

    @classmethod
    def train(
        cls,
        texts_or_files: TextOrFile | Iterable[TextOrFile],
        vocab_size: int = 30000,
        lowercase: bool = True,
        min_frequency: int = 2,
        strip_accents: bool | None = None,
        limit_alphabet: int = 1000,
        show_progress: bool = False,
    ) -> Tokenizer:
        """Learn a WordPiece vocabulary from texts and/or text files.

        Each item of ``texts_or_files`` is text if it is a ``str`` and a file
        path if it is an ``os.PathLike`` (e.g. ``pathlib.Path``): a plain str is
        never guessed to be a path. A single str or path is accepted too.

        ``limit_alphabet`` caps how many distinct characters seed the vocabulary,
        so a few stray symbols do not crowd out useful pieces; ``min_frequency``
        is how often a pair must occur to be merged into a new piece.

        Training is repeatable: the same corpus (as texts or as files) always
        gives the same vocabulary with the same ids.
        """
        if isinstance(texts_or_files, (str, os.PathLike)):
            texts_or_files = [texts_or_files]
        if not isinstance(texts_or_files, Iterable):
            raise ValueError(
                f"texts_or_files must be a str, a path, or an iterable of them, got {type(texts_or_files).__name__}"
            )
        if vocab_size < len(SPECIAL_TOKENS):
            raise ValueError(
                f"vocab_size must be at least {len(SPECIAL_TOKENS)} (the special tokens), got {vocab_size}"
            )

        # The BERT pipeline around a WordPiece model whose vocabulary is learned first (training.py).
        bert = _bert_backend(models.WordPiece(unk_token="[UNK]"), lowercase, strip_accents)
        vocab = learn_vocabulary(bert, _iter_training_texts(texts_or_files), SPECIAL_TOKENS, vocab_size=vocab_size,
                                 min_frequency=min_frequency, limit_alphabet=limit_alphabet,
                                 show_progress=show_progress)
        # A fresh WordPiece model on the learned vocabulary, so only the five real special tokens are "special".
        bert.model = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD)
        bert.post_processor = _bert_post_processor(vocab["[CLS]"], vocab["[SEP]"])
        return cls(bert, lowercase=lowercase)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], lowercase: bool | None = None,
                  max_position_embeddings: int | None = None) -> Tokenizer:
        """Load a BERT tokenizer from ``vocab.txt``, ``tokenizer.json``, or a directory holding either.

        A directory's ``tokenizer.json`` wins over its ``vocab.txt``, since it
        records the whole pipeline. For a bare ``vocab.txt``, ``lowercase``
        defaults to ``do_lower_case`` from a ``tokenizer_config.json`` beside it,
        else True (most published BERT vocabularies are uncased). Loading for a
        model, pass its ``max_position_embeddings``: ``model_max_length`` is
        capped at it (a file may say 512 beside a model of 128 positions).
        """
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise TypeError(f"Tokenizer.from_file() takes a path as a str or pathlib.Path (a vocab.txt, a "
                            f"tokenizer.json or their folder), got {path!r} ({type(path).__name__})")
        path = Path(path)
        if path.is_dir():
            for name in ("tokenizer.json", "vocab.txt"):
                if (path / name).is_file():
                    path = path / name
                    break
            else:
                raise FileNotFoundError(
                    f"no vocab.txt or tokenizer.json in {path}: pass a BERT tokenizer file or directory"
                )
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist: pass a vocab.txt, a tokenizer.json, or their directory")

        config = _read_tokenizer_config(path.parent)
        max_len = config.get("model_max_length")
        # transformers writes a huge sentinel (1e30) when it does not know the limit.
        model_max_length = int(max_len) if isinstance(max_len, (int, float)) and 0 < max_len < 1e9 else 512

        if path.suffix == ".json":
            try:
                backend = tokenizers.Tokenizer.from_file(str(path))
            except Exception as err:  # the Rust side raises a bare Exception
                raise ValueError(f"{path} is not a valid tokenizer.json: {err}") from err
            state = _normalizer_state(backend)
            if lowercase is not None and lowercase != _lowercases(state):
                if state is None or state.get("type") != "BertNormalizer":
                    raise ValueError(f"cannot change lowercase for {path}: its normalizer is not a BertNormalizer")
                backend.normalizer = _bert_normalizer(lowercase, state.get("strip_accents"))
        else:
            if lowercase is None:
                lowercase = _config_bool(config, "do_lower_case", True, path.parent)
            vocab = _read_vocab_txt(path)
            model = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD)
            backend = _bert_backend(model, lowercase, _config_bool(config, "strip_accents", None, path.parent))
            missing = [tok for tok in ("[CLS]", "[SEP]") if tok not in vocab]
            if not missing:
                backend.post_processor = _bert_post_processor(vocab["[CLS]"], vocab["[SEP]"])
        logger.info("loaded tokenizer from %s", path)
        return cls(backend, lowercase=lowercase,
                   model_max_length=_capped(model_max_length, max_position_embeddings))

    def save(self, directory: str | os.PathLike[str], max_position_embeddings: int | None = None) -> None:
        """Write ``tokenizer.json``, ``vocab.txt`` and ``tokenizer_config.json`` into ``directory``.

        transformers' ``AutoTokenizer.from_pretrained(directory)`` loads the
        result. It rebuilds the normalizer from the config's ``do_lower_case``
        and ``strip_accents``, so both are written. Saving beside a model, pass
        its ``max_position_embeddings``: the recorded ``model_max_length`` is
        capped at it, so ``max_length=tok.model_max_length`` always fits the model.
        """
        model_max_length = _capped(self.model_max_length, max_position_embeddings)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        # each file written under a random name and renamed into place: a link planted at a file's name is
        # replaced, never written through (files.replace_text)
        files.replace_text(directory / "tokenizer.json", self.backend.to_str(pretty=True))

        vocab = self.get_vocab()
        by_id = sorted(vocab, key=vocab.__getitem__)
        if [vocab[t] for t in by_id] != list(range(len(by_id))):
            raise ValueError("token ids are not contiguous from 0: the vocabulary cannot be written as vocab.txt")
        files.replace_text(directory / "vocab.txt", "".join(token + "\n" for token in by_id))

        state = _normalizer_state(self.backend) or {}
        config = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.lowercase,
            "strip_accents": state.get("strip_accents"),
            "tokenize_chinese_chars": state.get("handle_chinese_chars", True),
            "model_max_length": model_max_length,
            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        }
        files.replace_text(directory / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
        logger.debug("saved tokenizer to %s", directory)

    # ------------------------------------------------------------------ encoding

    def __call__(
        self,
        text: str,
        text_pair: str | None = None,
        max_length: int | None = None,
        truncation: bool | str = True,
        is_split_into_words: bool = False,
    ) -> Encoding:
        """Encode ``[CLS] text [SEP]``, or ``[CLS] text [SEP] text_pair [SEP]``.

        With ``max_length`` and truncation on, tokens are cut exactly as
        transformers' ``truncation="longest_first"`` does: one token at a time
        from whichever segment is longer. ``"only_first"``/``"only_second"``
        cut one segment only. Without ``max_length`` nothing is cut (pass
        ``max_length=tok.model_max_length`` to fit a model).

        As in transformers, an empty ``text_pair`` ("") is dropped, giving a
        single-segment encoding.

        ``is_split_into_words=True`` (transformers' name): ``text`` is a list of words already split by the
        caller, as a tagging set gives them. Each word is still cleaned and split into pieces (and at its
        punctuation: "don't" gives don ' t), but never joined with its neighbours, so ``word_ids`` count the
        caller's words: every piece of "New York" or "don't" says the same word. A word that becomes no
        piece at all (empty, white space, or only characters the cleanup drops, such as a zero-width
        space) simply has no ``word_ids`` entry.
        """
        return self._encode(text, text_pair or None, max_length, truncation, is_split_into_words)

    def _encode(self, text, text_pair, max_length: int | None, truncation: bool | str,
                split: bool = False) -> Encoding:
        if split:
            text = _check_words(text, "text")
            if text_pair is not None:
                text_pair = _check_words(text_pair, "text_pair")
        else:
            text = _check_text(text, "text")
            if text_pair is not None:
                text_pair = _check_text(text_pair, "text_pair")
        strategy = _truncation_strategy(truncation)
        if max_length is not None:
            n_special = self.backend.num_special_tokens_to_add(is_pair=text_pair is not None)
            if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < n_special:
                raise ValueError(
                    f"max_length must be an int of at least {n_special} (the [CLS]/[SEP] tokens it needs), "
                    f"got {max_length!r}"
                )
        if max_length is None or strategy is None:
            enc = self.backend.encode(text, text_pair, is_pretokenized=split)
        else:
            # The Rust truncation is the one transformers uses, so the cut is identical.
            self.backend.enable_truncation(max_length, strategy=strategy)
            try:
                enc = self.backend.encode(text, text_pair, is_pretokenized=split)
            except Exception as err:  # only_first/only_second on a segment too short to cut
                raise ValueError(
                    f"cannot truncate to max_length {max_length} with {truncation!r}: {err}; "
                    "pass truncation='longest_first' or a larger max_length"
                ) from err
            finally:
                self.backend.no_truncation()
        if max_length is not None and len(enc.ids) > max_length:
            raise ValueError(
                f"{len(enc.ids)} tokens is longer than max_length {max_length}: "
                "pass truncation=True or a shorter text"
            )
        return Encoding(
            input_ids=list(enc.ids),
            token_type_ids=list(enc.type_ids),
            attention_mask=list(enc.attention_mask),
            tokens=list(enc.tokens),
            word_ids=list(enc.word_ids),
            sequence_ids=list(enc.sequence_ids),
        )

    def batch(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str] | None = None,
        max_length: int | None = None,
        truncation: bool | str = True,
        padding: bool | str = "longest",
        is_split_into_words: bool = False,
    ) -> Batch:
        """Encode several texts (or pairs) and pad them into (B, T) tensors.

        ``padding="longest"`` pads to the longest encoding in the batch (like
        transformers' ``padding=True``); ``"max_length"`` pads to ``max_length``
        so every batch has the same shape. ``is_split_into_words=True``: each
        text is a list of words (see ``__call__``).
        """
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise ValueError(
                f"texts must be a list of str, got {type(texts).__name__}: to encode one text call tokenizer(text)"
            )
        if len(texts) == 0:
            raise ValueError("texts is empty: pass at least one text")
        if text_pairs is not None:
            if isinstance(text_pairs, str) or not isinstance(text_pairs, Sequence):
                raise ValueError(f"text_pairs must be a list of str, got {type(text_pairs).__name__}")
            if len(text_pairs) != len(texts):
                raise ValueError(
                    f"got {len(texts)} texts but {len(text_pairs)} text_pairs: pass one pair per text"
                )
        if padding is True or padding == "longest":
            pad_to_max_length = False
        elif padding == "max_length":
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length: pass max_length=N or padding='longest'")
            pad_to_max_length = True
        else:
            raise ValueError(f"padding must be 'longest' (or True) or 'max_length', got {padding!r}")

        pairs = text_pairs if text_pairs is not None else itertools.repeat(None)
        # Unlike __call__, an empty pair in a batch is kept ("[CLS] a [SEP] [SEP]"), as transformers does.
        encodings = [self._encode(a, b, max_length, truncation, is_split_into_words) for a, b in zip(texts, pairs)]
        length = max_length if pad_to_max_length else max(len(e) for e in encodings)

        def pad(values: list, fill: Any) -> list:
            return values + [fill] * (length - len(values))

        def stack(key: str, fill: int) -> torch.Tensor:
            return torch.tensor([pad(getattr(e, key), fill) for e in encodings], dtype=torch.long)

        return Batch(
            input_ids=stack("input_ids", self.pad_id),
            token_type_ids=stack("token_type_ids", 0),
            attention_mask=stack("attention_mask", 0),
            tokens=[pad(e.tokens, "[PAD]") for e in encodings],
            word_ids=[pad(e.word_ids, None) for e in encodings],
            encodings=encodings,
        )

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece pieces of ``text``, without [CLS]/[SEP]."""
        text = _check_text(text, "text")
        return list(self.backend.encode(text, add_special_tokens=False).tokens)

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        """Turn ids back into text: ``##`` pieces are glued to the piece before them.

        Lowercasing and accent stripping cannot be undone, so the result is the
        normalized text, not the original. One id alone (an int) is decoded too, as in transformers.
        """
        if isinstance(ids, torch.Tensor):
            if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
                raise ValueError(f"decode takes integer token ids, got a tensor of dtype {ids.dtype}: "
                                 "pass ids (e.g. logits.argmax(-1)), not scores or probabilities")
            if ids.dim() > 1:
                raise ValueError(
                    f"decode takes one sequence of ids (a 1-D tensor), got shape {tuple(ids.shape)}: decode each row"
                )
            ids = ids.reshape(-1).tolist()
        elif isinstance(ids, (str, bytes)):
            raise ValueError(f"decode takes token ids, got text {ids!r}: to get ids from text call tokenizer(text)")
        elif not isinstance(ids, Iterable):
            ids = [ids]
        return self.backend.decode(_check_ids(ids, self.vocab_size), skip_special_tokens=skip_special_tokens)

    # ------------------------------------------------------------------ vocabulary

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self.backend.id_to_token(i) if i >= 0 else None

    def get_vocab(self) -> dict[str, int]:
        """Token -> id for the whole vocabulary, special tokens included."""
        return self.backend.get_vocab(with_added_tokens=True)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset((self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id))

    def __repr__(self) -> str:
        return (
            f"Tokenizer(vocab_size={self.vocab_size}, lowercase={self.lowercase}, "
            f"model_max_length={self.model_max_length})"
        )


def _capped(model_max_length: int, max_position_embeddings: int | None) -> int:
    """The tokenizer's limit, no larger than the model's positions when those are given."""
    if max_position_embeddings is None:
        return model_max_length
    if isinstance(max_position_embeddings, bool) or not isinstance(max_position_embeddings, int) \
            or max_position_embeddings < 1:
        raise ValueError(f"max_position_embeddings must be a positive int (the model config's), "
                         f"got {max_position_embeddings!r}")
    return min(model_max_length, max_position_embeddings)


def _truncation_strategy(truncation: bool | str) -> str | None:
    """Map the ``truncation`` argument to a Rust strategy name, or None for no truncation."""
    if truncation is False or truncation == "do_not_truncate":
        return None
    try:
        return _TRUNCATION_STRATEGIES[truncation]
    except (KeyError, TypeError):
        raise ValueError(
            f"truncation must be True, False, 'longest_first', 'only_first' or 'only_second', got {truncation!r}"
        ) from None


def _read_tokenizer_config(directory: Path) -> dict[str, Any]:
    """The settings in a ``tokenizer_config.json`` beside the vocabulary, or {} when there is none; a file that is
    not a JSON object is a ValueError naming it."""
    path = directory / "tokenizer_config.json"
    return read_config_json(path) if path.exists() else {}


def _config_bool(config: dict[str, Any], name: str, default: bool | None, directory: Path) -> bool | None:
    """A yes/no setting of tokenizer_config.json: a JSON true or false (null where `default` is None).

    A quoted "false" is a non-empty string, which Python reads as true: the vocabulary would be lowercased
    against the file's word. So anything but a JSON boolean is an error naming the file and the field.
    """
    value = config.get(name)
    if value is None:                 # absent or null: the default (strip_accents: follow lowercase)
        return default
    if isinstance(value, bool):
        return value
    hint = " (a quoted string; write true or false without quotes)" if isinstance(value, str) else ""
    raise ValueError(f"{directory / 'tokenizer_config.json'}: {name} must be true or false (a JSON boolean, or "
                     f"null for the default), got {value!r}{hint}")
