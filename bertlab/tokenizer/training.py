"""Learning a WordPiece vocabulary from a corpus: what `Tokenizer.train` does under the hood.

A WordPiece vocabulary starts as single characters ("c", and "##c" for a character inside a word) and grows by
merging the pairs of pieces that occur most often together, until it holds `vocab_size` tokens. Two things are
added to what HuggingFace `tokenizers` does on its own:

- **A guaranteed alphabet.** Every trained vocabulary holds `BASE_ALPHABET` (printable ASCII, the Latin-1
  letters, everyday typography), alone and as "##x", so ordinary English never meets [UNK] for a character the
  corpus happened to lack ("1969" from a corpus without a 6, "€5").
- **Repeatability.** The same corpus always gives the same vocabulary with the same ids (see `learn_vocabulary`).

Words are counted as BERT will see them: through the tokenizer's own normaliser and pre-tokenizer. Only the
counts are kept, so a corpus never has to fit in memory.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import tokenizers
from tokenizers import models, pre_tokenizers, trainers

logger = logging.getLogger(__name__)

#: Characters every trained vocabulary holds (after normalisation): printable ASCII, the Latin-1 letters,
#: and the typographic marks of everyday English (curly quotes, dashes, ellipsis, currency, degrees).
BASE_ALPHABET = ("".join(map(chr, range(0x21, 0x7F))) + "".join(chr(c) for c in range(0xC0, 0x100) if chr(c).isalpha())
                 + "‘’“”–—…€£¥¢°±×÷§¶©®™•")


def learn_vocabulary(bert: tokenizers.Tokenizer, texts: Iterable[str], special_tokens: Sequence[str],
                     vocab_size: int, min_frequency: int, limit_alphabet: int,
                     show_progress: bool = False) -> dict[str, int]:
    """The token → id map of a WordPiece vocabulary learned from `texts`, special tokens first (ids 0, 1, ...).

    `bert` is the BERT pipeline the vocabulary is for: its normaliser and pre-tokenizer decide what a word is.

    Why not simply `bert.train_from_iterator(texts, trainer)`? The `tokenizers` trainer gives "##x" pieces ids
    in hash-map order and breaks ties between equally frequent merges by id, so the same corpus can give a
    different vocabulary on every run (tokenizers issue #1794). Fixing the alphabet and the "##x" pieces up
    front, in sorted order, makes training repeatable.
    """
    word_counts = count_words(bert, texts)
    if not word_counts:
        raise ValueError("no text to train on: pass non-empty texts or files")
    char_counts: Counter[str] = Counter()
    for word, count in word_counts.items():
        for char in word:
            char_counts[char] += count
    # The base alphabet, as this normaliser leaves it, and the limit_alphabet most frequent characters of the
    # corpus on top (ties go to the smaller code point); every "##x" of the base, and of the kept characters
    # that occur inside a word.
    base = base_alphabet(bert.normalizer)
    frequent = sorted(char_counts, key=lambda c: (-char_counts[c], c))[:limit_alphabet]
    alphabet = sorted(base | set(frequent))
    kept = set(alphabet)
    continuing = sorted({"##" + c for c in base} | {"##" + c for word in word_counts for c in word[1:] if c in kept})
    fixed = len(special_tokens) + len(alphabet) + len(continuing)
    if vocab_size < fixed:
        logger.warning("vocab_size %d leaves no room for merged pieces: the alphabet alone takes %d tokens "
                       "(characters and their ## forms); ask for a larger vocabulary", vocab_size, fixed)
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        show_progress=show_progress,
        # Listed first so they get the first ids: [PAD]=0 ... [MASK]=4, then the "##x" pieces.
        special_tokens=[*special_tokens, *continuing],
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
        continuing_subword_prefix="##",
    )
    # The words are already normalized and split, so the trainer only needs to split on spaces.
    scratch = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    scratch.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    scratch.train_from_iterator(_repeat_words(word_counts), trainer=trainer)
    # The model's own vocabulary holds every token, the special ones and the "##x" pieces included; the caller
    # builds a fresh WordPiece model on it, where the "##x" pieces (special here only to fix their ids) are not.
    vocab = scratch.get_vocab(with_added_tokens=False)
    logger.info("trained a WordPiece vocabulary of %d tokens from %d distinct words", len(vocab), len(word_counts))
    return vocab


def count_words(bert: tokenizers.Tokenizer, texts: Iterable[str], chunk: int = 1000) -> Counter[str]:
    """Count words exactly as BERT sees them: normalized, then split by the pre-tokenizer.

    Texts are joined in chunks to cut per-call overhead; words never cross the
    joining newline, so the counts are the same as text by text.
    """
    counts: Counter[str] = Counter()

    def add(block: list[str]) -> None:
        normalized = bert.normalizer.normalize_str("\n".join(block))
        counts.update(word for word, _ in bert.pre_tokenizer.pre_tokenize_str(normalized))

    block: list[str] = []
    for text in texts:
        block.append(text)
        if len(block) == chunk:
            add(block)
            block = []
    if block:
        add(block)
    return counts


def base_alphabet(normalizer) -> set[str]:
    """BASE_ALPHABET as this normaliser leaves it: lowercased, accents stripped (é → e) if it does that."""
    return {c for char in BASE_ALPHABET for c in normalizer.normalize_str(char) if not c.isspace()}


def _repeat_words(word_counts: Counter[str], most: int = 1000) -> Iterator[str]:
    """Replay word counts to the trainer as space-separated text, in a fixed order and bounded pieces."""
    for word, count in sorted(word_counts.items()):
        while count > 0:
            yield " ".join([word] * min(count, most))
            count -= most
