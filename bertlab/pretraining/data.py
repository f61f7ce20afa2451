"""From text files to a stream of NSP examples: sentences, documents, chunks, batches.

The corpus format is Google's (``sample_text.txt`` in google-research/bert): plain UTF-8 text, a blank
line between documents. Within a document a line may hold one sentence or a whole paragraph: every line
goes through :func:`split_sentences`, so both styles work.

:class:`PretrainingData` streams: it never holds more than a chunk of documents (two, briefly), so a
corpus larger than memory trains the same as a small one. Each chunk becomes NSP pairs with
:func:`~bertlab.pretraining.pairs.make_pairs` and a generator seeded from ``(seed, epoch, chunk)``, so
the stream is a pure function of the corpus and the seed, and can be resumed exactly from a saved
position. Google instead builds every pair of the corpus up front (``dupe_factor`` = 10 times over, with
different masks) and shuffles them all; a chunk-level shuffle is the streaming version of that.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Union

import torch

from .pairs import MIN_MAX_LEN, PairExample, make_pairs

logger = logging.getLogger(__name__)

__all__ = ["split_sentences", "read_documents", "iter_texts", "PretrainingData", "collate"]

PathOrPaths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]

# ---------------------------------------------------------------------------------------- sentences

# Terminal punctuation (a run, so "?!" and "..." count once), then any closing quotes or brackets.
_TERMINAL = re.compile(r"""(?P<punct>[.!?…]+|[。！？]+)(?P<close>["'”’»」』)\]}]*)""")
# Words that end in "." without ending a sentence. Titles and Latin abbreviations; dotted acronyms
# (U.S., e.g., a.m.) and single-letter initials are recognised by shape instead.
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "cf", "al", "fig",
                            "approx", "mt", "gen", "col", "lt", "sgt", "capt", "rev"})
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")  # "U.S", "e.g": the word before the final "."
_OPENERS = "\"'“‘«「『([{"
_NEXT_CHAR = re.compile(r"\s*(\S?)")  # from a position: skip whitespace, capture the next character ("" at the end)


def _is_hangul(char: str) -> bool:
    return "\uac00" <= char <= "\ud7a3" or "\u1100" <= char <= "\u11ff" or "\u3130" <= char <= "\u318f"


def _ends_sentence(text: str, m: re.Match) -> bool:
    """Whether the terminal punctuation matched by ``m`` ends a sentence."""
    punct = m.group("punct")
    if punct[0] in "。！？":
        return True  # CJK full-width stops end a sentence even with no space after them
    before = text[m.start() - 1] if m.start() > 0 else ""
    after = text[m.end()] if m.end() < len(text) else ""
    if after and not after.isspace():
        # "3.14", "e.g." and "U.S." have no space after their inner dots. Korean web text often drops the
        # space after a sentence ("안녕하세요.반갑습니다"), so after Hangul a following letter is enough.
        return _is_hangul(before) and after.isalpha()
    if not after:
        return True
    if "!" in punct or "?" in punct:
        return True
    # "." or an ellipsis: a lowercase word next means the sentence goes on ("approx. five", "wait... what").
    # Matched in place from m.end(): slicing off the rest of the text here made a long line quadratic.
    following = _NEXT_CHAR.match(text, m.end()).group(1)
    if following.islower():
        return False
    if punct == ".":
        start = m.start()
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        word = text[start:m.start()].lstrip(_OPENERS)  # the word this dot ends
        if word.lower() in _ABBREVIATIONS or _ACRONYM.fullmatch(word) or (len(word) == 1 and word.isupper()):
            return False  # "Mr. Smith", "the U.S. Army", "J. Smith"
    return True


def split_sentences(text: str) -> list[str]:
    """Split English, Korean or CJK text into sentences with a few rules; returns stripped, non-empty ones.

    A sentence ends at ``.``, ``!``, ``?`` or an ellipsis (plus closing quotes or brackets) followed by a
    space, or at a full-width ``。！？``. A dot does not end one in a decimal (3.14), after a title or
    common abbreviation (Mr., Dr., St., etc.), in a dotted acronym (U.S., e.g., i.e.), after an initial
    (J. Smith), or when the next word is lowercase. Rules, not a model: they will miss some cases, which
    only makes a few NSP segments a little longer or shorter.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    sentences, start = [], 0
    for m in _TERMINAL.finditer(text):
        if _ends_sentence(text, m):
            sentences.append(text[start:m.end()])
            start = m.end()
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


# ---------------------------------------------------------------------------------------- files

def _corpus_files(paths: PathOrPaths) -> list[Path]:
    """The text files named by ``paths``: files as given, folders as their ``*.txt`` files (recursively, sorted)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Iterable):
        raise ValueError(f"paths must be a path or a list of paths, got {type(paths).__name__}")
    files: list[Path] = []
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f"corpus path {path} does not exist: pass a text file or a folder of .txt files")
        if path.is_dir():
            found = sorted(f for f in path.rglob("*.txt") if f.is_file())
            if not found:
                raise ValueError(
                    f"folder {path} has no .txt files: put the corpus in *.txt files (a blank line between documents)"
                )
            files.extend(found)
        else:
            files.append(path)  # any name, and also a named pipe
    if not files:
        raise ValueError("no corpus paths given: pass a text file, a folder of .txt files, or a list of them")
    return files


def _lines(path: Path) -> Iterator[str]:
    """The lines of one file, read lazily; a UTF-8 byte-order mark is dropped."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            yield from f
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err.reason}): convert it to UTF-8") from err


#: a line longer than this is read in pieces of this many characters, so a corpus with a 30 MB line (a
#: whole book with no line breaks) streams in constant memory per sentence instead of one huge string
PIECE = 1 << 20


def _pieces(path: Path, size: int = PIECE) -> Iterator[tuple[str, bool]]:
    """(text, ends_line) for one file: whole lines, and long lines in pieces of at most `size` characters."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            while piece := f.readline(size):
                yield piece, piece.endswith("\n")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err.reason}): convert it to UTF-8") from err


def _documents(files: list[Path], piece: int = PIECE) -> Iterator[list[str]]:
    for path in files:
        document: list[str] = []
        carry = ""  # the raw text of a long line's last, maybe unfinished, sentence: it continues in the next piece
        for text, ends_line in _pieces(path, piece):
            text, carry = carry + text, ""
            if not ends_line:
                sentences = split_sentences(text)
                if sentences:
                    carry = text[text.rfind(sentences[-1]):]   # raw, with its spaces: the next piece may go on
                    document.extend(sentences[:-1])
                continue
            if text.strip():
                document.extend(split_sentences(text))
            elif document:
                yield document
                document = []
        if carry.strip():
            document.extend(split_sentences(carry))
        if document:  # a file's end ends its last document: documents never span files
            yield document


def read_documents(paths: PathOrPaths) -> Iterator[list[str]]:
    """Stream documents (lists of sentences) from text files and folders, one line at a time.

    A blank line separates documents; each non-blank line is split into sentences. Folders contribute
    their ``*.txt`` files, recursively, in sorted order. Missing paths and empty folders are reported
    now, not when the stream reaches them.
    """
    return _documents(_corpus_files(paths))


def iter_texts(paths: PathOrPaths) -> Iterator[str]:
    """Every non-blank line of the corpus, stripped: food for ``Tokenizer.train(iter_texts(paths))``."""
    files = _corpus_files(paths)
    return (line.strip() for path in files for line in _lines(path) if line.strip())


# ---------------------------------------------------------------------------------------- the stream

def _can_pair(documents: list[list[str]]) -> bool:
    """Whether make_pairs can work on these documents: NotNext needs two, IsNext a multi-sentence one."""
    return len(documents) >= 2 and any(len(d) >= 2 for d in documents)


class PretrainingData:
    """An endless, resumable stream of NSP examples (:class:`PairExample`) from a text corpus.

    Documents are read in chunks of ``docs_per_chunk``; each chunk becomes pairs (``make_pairs``) that are
    shuffled and yielded; after the last chunk the next epoch starts, with new random choices. NotNext
    segments come from another document *of the same chunk*, which with ~1000 documents is as good as the
    whole corpus.

    A chunk that could not make pairs grows until it can: a chunk keeps taking documents until it has a
    multi-sentence one, and a last chunk too small to stand alone (one document, or only one-sentence
    documents) is merged into the chunk before it. Chunk boundaries are therefore a fixed function of the
    corpus and ``docs_per_chunk``.

    ``position`` (epoch, chunk, offset) names the next example; ``state_dict()`` saves it and
    ``load_state_dict()`` restores it, after which the stream yields exactly what the uninterrupted stream
    would have. Resuming re-reads the corpus up to the saved chunk (text only, no tokenizing) and remakes
    that chunk's pairs. Use one iterator at a time: they share ``position``.
    """

    def __init__(
        self,
        paths: PathOrPaths,
        tokenizer,
        max_len: int = 128,
        seed: int = 0,
        docs_per_chunk: int = 1000,
        short_seq_prob: float = 0.1,
        balance: bool = False,
    ) -> None:
        if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < MIN_MAX_LEN:
            raise ValueError(
                f"max_len must be an int of at least {MIN_MAX_LEN} ([CLS] A [SEP] B [SEP] with one token in each "
                f"of A and B), got {max_len!r}"
            )
        if isinstance(docs_per_chunk, bool) or not isinstance(docs_per_chunk, int) or docs_per_chunk < 2:
            raise ValueError(
                f"docs_per_chunk must be an int of at least 2 (NotNext needs two documents), got {docs_per_chunk!r}"
            )
        if not isinstance(short_seq_prob, (int, float)) or not 0 <= short_seq_prob <= 1:
            raise ValueError(f"short_seq_prob must be a probability in [0, 1], got {short_seq_prob!r}")
        self.files = _corpus_files(paths)
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.seed = int(seed)
        self.docs_per_chunk = docs_per_chunk
        self.short_seq_prob = float(short_seq_prob)
        self.balance = bool(balance)  # make_pairs(balance=True): exactly 50 / 50 IsNext / NotNext per chunk
        self.position: dict[str, int] = {"epoch": 0, "chunk": 0, "offset": 0}

    def __repr__(self) -> str:
        return (f"PretrainingData({len(self.files)} files, max_len={self.max_len}, seed={self.seed}, "
                f"docs_per_chunk={self.docs_per_chunk}, position={self.position})")

    @property
    def _name(self) -> str:
        return str(self.files[0]) if len(self.files) == 1 else f"{self.files[0]} (+{len(self.files) - 1} files)"

    # ------------------------------------------------------------------ chunks

    def _chunks(self) -> Iterator[list[list[str]]]:
        """The corpus as chunks of documents, each one that make_pairs can use."""
        previous = None  # the last full chunk, held back one step so a too-small last chunk can join it
        current: list[list[str]] = []
        for document in read_documents(self.files):
            current.append(document)
            if len(current) >= self.docs_per_chunk and _can_pair(current):
                if previous is not None:
                    yield previous
                previous, current = current, []
        if current:
            if previous is not None and not _can_pair(current):
                previous = previous + current
            else:
                if previous is not None:
                    yield previous
                previous = current
        if previous is None:
            raise ValueError(f"corpus {self._name} has no text: pass UTF-8 text files, a blank line between documents")
        if len(previous) < 2:
            raise ValueError(
                f"corpus {self._name} has only one document: NotNext pairs take their second segment from a "
                "different document, so separate documents with a blank line"
            )
        if not _can_pair(previous):
            raise ValueError(
                f"no document in corpus {self._name} has two or more sentences: next-sentence prediction needs "
                "documents of several consecutive sentences (a blank line only between documents)"
            )
        yield previous

    def _generator(self, epoch: int, chunk: int) -> torch.Generator:
        """A generator seeded by hashing (seed, epoch, chunk): distinct triples never share a seed by accident,
        which a formula like ``seed * p + epoch * q + chunk`` cannot promise."""
        digest = hashlib.blake2b(f"bertlab/{self.seed}/{epoch}/{chunk}".encode(), digest_size=8).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest, "little") & ((1 << 63) - 1))

    def _examples(self, documents: list[list[str]], epoch: int, chunk: int) -> list[PairExample]:
        """The chunk's pairs in their shuffled order for this epoch."""
        generator = self._generator(epoch, chunk)
        examples = make_pairs(documents, self.tokenizer, self.max_len, generator=generator,
                              short_seq_prob=self.short_seq_prob, balance=self.balance)
        order = torch.randperm(len(examples), generator=generator).tolist()
        return [examples[i] for i in order]

    # ------------------------------------------------------------------ public

    def check(self) -> dict[str, int]:
        """Stream the whole corpus once and make epoch 0's pairs, so a bad corpus fails before training.

        Raises the errors training would hit (no text, one document, no multi-sentence document, a
        ``max_len`` too small) and returns counts: documents, sentences, chunks, examples (in epoch 0).
        Costs one pass of tokenization.
        """
        stats = {"documents": 0, "sentences": 0, "chunks": 0, "examples": 0}
        for index, documents in enumerate(self._chunks()):
            stats["chunks"] += 1
            stats["documents"] += len(documents)
            stats["sentences"] += sum(map(len, documents))
            stats["examples"] += len(self._examples(documents, 0, index))
        logger.info("corpus %s: %d documents, %d sentences, %d chunks, %d NSP examples per epoch",
                    self._name, stats["documents"], stats["sentences"], stats["chunks"], stats["examples"])
        return stats

    def __iter__(self) -> Iterator[PairExample]:
        while True:
            epoch, start_chunk, offset = (int(self.position[k]) for k in ("epoch", "chunk", "offset"))
            n_chunks = 0
            for index, documents in enumerate(self._chunks()):
                n_chunks = index + 1
                if index < start_chunk:
                    continue  # resuming: this chunk was used up before the state was saved
                examples = self._examples(documents, epoch, index)
                if offset > len(examples):
                    raise ValueError(
                        f"the saved position {self.position} is past the end of chunk {index} ({len(examples)} "
                        "examples): the corpus, tokenizer or settings changed since the state was saved"
                    )
                for k in range(offset, len(examples)):
                    self.position = {"epoch": epoch, "chunk": index, "offset": k + 1}  # the next one to give
                    yield examples[k]
                offset = 0
            if start_chunk >= n_chunks:
                raise ValueError(
                    f"the saved position {self.position} names chunk {start_chunk}, but the corpus has {n_chunks} "
                    "chunks: the corpus changed since the state was saved"
                )
            self.position = {"epoch": epoch + 1, "chunk": 0, "offset": 0}

    def batches(self, batch_size: int) -> Iterator[list[PairExample]]:
        """Endless lists of ``batch_size`` examples, continuing from ``position``."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        stream = iter(self)
        while True:
            yield list(itertools.islice(stream, batch_size))

    def state_dict(self) -> dict[str, Any]:
        """Where the stream is, and the settings that shape it (checked on load)."""
        return {"position": dict(self.position), "seed": self.seed, "max_len": self.max_len,
                "docs_per_chunk": self.docs_per_chunk, "short_seq_prob": self.short_seq_prob,
                "balance": self.balance, "files": [str(f) for f in self.files]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a saved ``state_dict()``; settings that would change the stream must match."""
        if not isinstance(state, dict) or not isinstance(state.get("position"), dict):
            raise ValueError("state must be a dict from PretrainingData.state_dict()")
        position = state["position"]
        if set(position) != {"epoch", "chunk", "offset"} or any(
                isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in position.values()):
            raise ValueError(f"state position must have non-negative ints epoch, chunk, offset, got {position}")
        for key in ("seed", "max_len", "docs_per_chunk", "short_seq_prob", "balance"):
            if key in state and state[key] != getattr(self, key):
                raise ValueError(
                    f"the state was saved with {key}={state[key]!r} but this stream has {key}={getattr(self, key)!r}: "
                    "build PretrainingData with the saved settings to resume"
                )
        if "files" in state and state["files"] != [str(f) for f in self.files]:
            logger.warning("resuming on different corpus files than were saved; the stream will not match")
        self.position = dict(position)


def collate(examples: Sequence[PairExample], pad_id: int) -> dict[str, torch.Tensor]:
    """Stack examples into tensors, right-padded to the longest: input_ids, token_type_ids and
    attention_mask (B, T), and next_sentence_label (B,). Padding has id ``pad_id``, type 0 and mask 0."""
    if len(examples) == 0:
        raise ValueError("collate needs at least one example")
    T = max(len(e.input_ids) for e in examples)

    def pad(values: list[int], fill: int) -> list[int]:
        return values + [fill] * (T - len(values))

    return {
        "input_ids": torch.tensor([pad(e.input_ids, pad_id) for e in examples], dtype=torch.long),  # (B, T)
        "token_type_ids": torch.tensor([pad(e.token_type_ids, 0) for e in examples], dtype=torch.long),  # (B, T)
        "attention_mask": torch.tensor([pad([1] * len(e.input_ids), 0) for e in examples], dtype=torch.long),
        "next_sentence_label": torch.tensor([e.next_sentence_label for e in examples], dtype=torch.long),  # (B,)
    }
