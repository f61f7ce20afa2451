"""Nearest contexts: which corpus sentences use a word the way this sentence does?

    r = nearest_contexts(model, tokenizer, "He sat on the bank of the river.", "bank", k=5)
    print(r)                      # 0.912  The geese sat on the grassy [[bank]] of the river. …
    r.hits[0].sentence, r.hits[0].char_span, r.hits[0].cosine

This is exBERT's corpus search (Hoover, Strobelt & Gehrmann 2020, "exBERT: A Visual Analysis Tool to
Explore Learned Representations in Transformer Models", ACL demos): take the contextual vector of a word
at one layer, and find the occurrences of the same word in a reference corpus whose vectors point the same
way (cosine). If the model separates senses, a river bank finds river banks and a money bank finds money
banks; at layer 0 (the embedding output, no context yet) every "bank" is the same vector, so the ranking
there is noise, which is the lesson.

The index. exBERT indexes every token of its corpus ahead of time with FAISS. Here the corpus is read once
per (model, tokenizer, corpus) into sentences, and each *word* is indexed the first time it is asked for:
the sentences that contain it go through the model once, and the vectors of every occurrence at every layer
(n, L + 1, H) are kept, unit length. Indexing every word of the demo corpus (16 k sentences) would take
minutes on a laptop CPU; one word's sentences take a second or two, and after that any query for that word,
at any layer, is one forward pass of the query sentence plus an (n, H) @ (H,) product.

The cache lives on the model (a `weakref.WeakKeyDictionary`, so it dies with the model) and is dropped when
the weights change: it remembers each parameter's storage and version counter (PyTorch bumps `_version` on
every in-place write: optimizer steps, `load_state_dict`, `copy_`), so training the model or loading new
weights re-indexes on the next query. A change the counter cannot see (editing `.data` through a view taken
before the query) is not detected: call `clear_index_cache(model)` after such surgery.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from ..pretraining.data import read_documents, split_sentences
from ._checks import layer_index
from .running import base_model, inference, max_length
from .word_vectors import find_word, word_vectors

#: the demo corpus's English prose (train and held-out documents together): bertlab/assets/corpus/source/en_*.txt
DEMO_CORPUS = Path(__file__).resolve().parent.parent / "assets" / "corpus" / "source"

BATCH_SIZE = 32     # sentences per forward pass while indexing a word (sorted by length, so little padding)


# ---- the result ---------------------------------------------------------------------------------

def highlight(sentence: str, char_span: tuple[int, int], left: str = "[[", right: str = "]]") -> str:
    """The sentence with the characters of `char_span` wrapped: "the [[bank]] of the river"."""
    a, b = char_span
    return f"{sentence[:a]}{left}{sentence[a:b]}{right}{sentence[b:]}"


@dataclass
class ContextHit:
    """One occurrence of the word in the corpus, and how close its vector is to the query's.

    `token_span` is [start, end) in `tokens` (the sentence's WordPieces, [CLS] at 0), `char_span` the
    same occurrence as [start, end) characters of `sentence`; `highlighted` marks it with [[ ]].
    """
    sentence: str
    cosine: float
    char_span: tuple[int, int]
    token_span: tuple[int, int]
    tokens: list[str]
    highlighted: str


@dataclass
class NearestContexts:
    """The `k` corpus occurrences of `word` nearest (cosine) to its occurrence in `text`, at one layer.

    `layer` is the index into hidden_states (0 = embedding output, `num_layers` = last layer).
    `searched` counts the occurrences compared (the query sentence itself, if it is in the corpus, is
    left out); `corpus` says which corpus; `cached` is False when this call had to index the word first
    and `index_seconds` how long that took.
    """
    text: str
    word: str
    layer: int
    num_layers: int
    query_char_span: tuple[int, int]
    query_highlighted: str
    hits: list[ContextHit]
    searched: int
    corpus: str
    cached: bool
    index_seconds: float = 0.0

    def __str__(self) -> str:
        head = (f"{self.query_highlighted}  (layer {self.layer} of {self.num_layers}; {self.searched} "
                f"occurrences of {self.word!r} in {self.corpus})")
        return "\n".join([head] + [f"{h.cosine:6.3f}  {h.highlighted}" for h in self.hits])


# ---- the corpus and its per-word index ----------------------------------------------------------

@dataclass
class _Occurrences:
    sentence_ids: list[int]            # into _CorpusIndex.sentences, one per occurrence
    token_spans: list[tuple[int, int]]
    char_spans: list[tuple[int, int]]
    vectors: torch.Tensor              # (n, L + 1, H), unit length


@dataclass
class _CorpusIndex:
    description: str
    sentences: list[str]
    normalized: list[str]              # as the tokenizer's normalizer sees them (lowercased …): a cheap prefilter
    tokens: dict[int, list[str]] = field(default_factory=dict)
    words: dict[tuple[int, ...], _Occurrences] = field(default_factory=dict)


# model encoder → tokenizer → (corpus key, weights fingerprint) → index
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def clear_index_cache(model=None) -> None:
    """Forget the indexed corpora of `model` (or of every model): the next query re-indexes."""
    if model is None:
        _CACHE.clear()
    else:
        _CACHE.pop(base_model(model), None)


def _fingerprint(bert) -> tuple:
    """Changes whenever a parameter is replaced or written in place (see the module docstring)."""
    return tuple((p.data_ptr(), p._version, p.dtype, str(p.device)) for p in bert.parameters())


def _corpus_source(corpus) -> tuple[str, object, str]:
    """("files", [Path], description) or ("texts", [str], description) for the corpus argument."""
    if corpus is None:
        files = sorted(DEMO_CORPUS.glob("en_*.txt"))
        if not files:
            raise FileNotFoundError(f"the demo corpus is missing from {DEMO_CORPUS}: reinstall bertlab, or pass "
                                    "corpus= a list of sentences or a path to your own text files")
        return "files", files, "the demo corpus"
    if isinstance(corpus, (str, os.PathLike)):
        if not Path(corpus).exists():
            raise ValueError(f"corpus {str(corpus)[:80]!r} is not an existing file or folder: pass a path to text "
                             "files, or a list of sentences (a single sentence goes in a list: [sentence])")
        return "files", [Path(corpus)], str(corpus)
    if not isinstance(corpus, Sequence) or len(corpus) == 0:
        raise ValueError(f"corpus must be None (the demo corpus), a path, a list of paths or a non-empty list of "
                         f"sentences, got {corpus!r:.80}")
    if all(isinstance(c, os.PathLike) or (isinstance(c, str) and Path(c).exists() and c.strip()) for c in corpus):
        return "files", [Path(c) for c in corpus], ", ".join(map(str, corpus))
    for i, c in enumerate(corpus):
        if not isinstance(c, str) or not c.strip():
            raise ValueError(f"corpus[{i}] is {c!r}: a corpus list holds sentences (non-empty str) or paths, "
                             "not a mix")
    return "texts", list(corpus), f"your corpus of {len(corpus)} text(s)"


def _corpus_key(kind: str, items) -> tuple:
    if kind == "files":
        return ("files",) + tuple((str(p.resolve()), p.stat().st_mtime_ns, p.stat().st_size) for p in items)
    digest = hashlib.sha1("\x00".join(items).encode("utf-8")).hexdigest()
    return ("texts", digest)


def _read_corpus(kind: str, items, tokenizer, description: str) -> _CorpusIndex:
    if kind == "files":
        sentences = [s for doc in read_documents(items) for s in doc]
    else:
        sentences = [s for text in items for s in split_sentences(text)]
    sentences = list(dict.fromkeys(sentences))                          # a repeated sentence is one context
    normalizer = tokenizer.backend.normalizer
    normalized = [normalizer.normalize_str(s) for s in sentences] if normalizer else sentences
    return _CorpusIndex(f"{description} ({len(sentences):,} sentences)", sentences, normalized)


def _corpus_index(model, tokenizer, corpus) -> _CorpusIndex:
    bert = base_model(model)
    kind, items, description = _corpus_source(corpus)
    key = (_corpus_key(kind, items), _fingerprint(bert))
    by_tokenizer = _CACHE.setdefault(bert, weakref.WeakKeyDictionary())
    by_corpus = by_tokenizer.setdefault(tokenizer, {})
    if key not in by_corpus:
        for stale in [k for k in by_corpus if k[1] != key[1]]:          # the weights changed: old vectors are wrong
            del by_corpus[stale]
        by_corpus[key] = _read_corpus(kind, items, tokenizer, description)
    return by_corpus[key]


def _index_word(model, tokenizer, index: _CorpusIndex, word: str, piece_ids: list[int]) -> _Occurrences:
    """Run every corpus sentence that may contain `word` through the model once; keep each occurrence's vectors."""
    normalizer = tokenizer.backend.normalizer
    needle = normalizer.normalize_str(word) if normalizer else word
    # a cheap superset of the sentences that hold the word (find_word decides): BERT's pre-tokenizer splits
    # words at spaces and punctuation, so an ASCII word must stand between non-alphanumerics ("ring" is not
    # read in "spring" or "during"); other scripts fall back to a plain substring test
    if needle.isascii():
        pattern = re.compile(("(?<![^\\W_])" if needle[:1].isalnum() else "") + re.escape(needle)
                             + ("(?![^\\W_])" if needle[-1:].isalnum() else ""))
        candidates = [i for i, s in enumerate(index.normalized) if pattern.search(s)]
    else:
        candidates = [i for i, s in enumerate(index.normalized) if needle in s]
    candidates.sort(key=lambda i: len(index.sentences[i]))
    bert = base_model(model)
    max_len = max_length(model, tokenizer)
    ids, token_spans, char_spans, vectors = [], [], [], []
    with inference(model):
        for b in range(0, len(candidates), BATCH_SIZE):
            chunk = candidates[b:b + BATCH_SIZE]
            batch = tokenizer.batch([index.sentences[i] for i in chunk], max_length=max_len)
            found = [(j, s) for j, enc in enumerate(batch.encodings)
                     for s in find_word(enc.input_ids, enc.word_ids, piece_ids)]
            if not found:
                continue
            states = torch.stack(bert(**batch, output_hidden_states=True).hidden_states, dim=1)  # (B, L+1, T, H)
            states = states.float().cpu()
            for j, s in found:
                e = s + len(piece_ids)
                i = chunk[j]
                offsets = tokenizer.backend.encode(index.sentences[i]).offsets  # same pieces, with characters
                ids.append(i)
                token_spans.append((s, e))
                char_spans.append((offsets[s][0], offsets[e - 1][1]))
                vectors.append(states[j, :, s:e].mean(dim=1))              # (L + 1, H): pieces averaged
                index.tokens.setdefault(i, batch.encodings[j].tokens)
    stacked = F.normalize(torch.stack(vectors), dim=-1) if vectors else torch.empty(0)
    return _Occurrences(ids, token_spans, char_spans, stacked)


# ---- the search ---------------------------------------------------------------------------------

def nearest_contexts(model, tokenizer, text: str, word: str, corpus=None, layer=-1, k: int = 10,
                     occurrence: int = 0) -> NearestContexts:
    """The `k` corpus sentences whose `word` is closest (cosine, at `layer`) to `word` as used in `text`.

    `corpus`: None for the demo corpus's English sentences; a list of sentences (each entry is split into
    sentences, so paragraphs work too); or a path, or a list of paths, to text files or folders of .txt
    files (documents separated by blank lines). Repeated sentences count once, and a corpus sentence equal
    to `text` is left out (it would always come first). `layer` indexes hidden_states (0 = embeddings,
    -1 = last); `occurrence` picks which match of `word` in `text` is the query (0 = first). Every
    occurrence of the word in a corpus sentence is a candidate, matched as whole words the way
    `word_vectors` matches them ("bank" finds "Bank", not "banks"). The first query of a word indexes it
    (see the module docstring); later ones, at any layer, reuse that index.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int of at least 1 (how many sentences to return), got {k!r}")
    bert = base_model(model)
    n_layers = bert.config.num_hidden_layers
    chosen = layer_index(layer, n_layers)
    if chosen is None:
        raise ValueError("nearest_contexts searches one layer at a time: pass layer=0 … "
                         f"{n_layers} (or -1 for the last), not 'all'")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text is {text!r}: pass the sentence whose {word!r} you want to look up")
    # the query: word_vectors checks the word (in the vocabulary? in the text?) and says what to do if not
    query = word_vectors(model, tokenizer, [text], word, layer="all", occurrence=occurrence)[0]   # (L + 1, H)
    query = F.normalize(query[chosen], dim=-1)                                               # (H,)
    pieces = tokenizer.tokenize(word)
    piece_ids = [tokenizer.token_to_id(p) for p in pieces]
    enc = tokenizer(text, max_length=max_length(model, tokenizer))
    s = find_word(enc.input_ids, enc.word_ids, piece_ids)[occurrence]
    offsets = tokenizer.backend.encode(text).offsets
    query_span = (offsets[s][0], offsets[s + len(piece_ids) - 1][1])

    index = _corpus_index(model, tokenizer, corpus)
    key = tuple(piece_ids)
    cached = key in index.words
    index_seconds = 0.0
    if not cached:
        t0 = time.perf_counter()
        index.words[key] = _index_word(model, tokenizer, index, word, piece_ids)
        index_seconds = time.perf_counter() - t0
    occ = index.words[key]
    if not occ.sentence_ids:
        raise ValueError(f"{word!r} does not occur as a whole word in {index.description}: try another word "
                         f"(the demo corpus's README lists the polysemous ones: bank, bat, crane, spring, light, "
                         f"…), another form of it (\"banks\" is a different word from \"bank\"), or pass your "
                         f"own sentences with corpus=[...]")

    keep = torch.tensor([index.sentences[i] != text.strip() for i in occ.sentence_ids])
    if not bool(keep.any()):
        raise ValueError(f"the only corpus sentence with {word!r} is the query itself ({text!r}): "
                         "pass a corpus with other sentences that use the word")
    cosines = occ.vectors[:, chosen] @ query                      # (n,): both unit length
    cosines = cosines.masked_fill(~keep, float("-inf"))
    top = cosines.topk(min(k, int(keep.sum()))).indices.tolist()
    hits = []
    for j in top:
        i = occ.sentence_ids[j]
        sentence = index.sentences[i]
        hits.append(ContextHit(sentence, float(cosines[j]), occ.char_spans[j], occ.token_spans[j],
                               index.tokens[i], highlight(sentence, occ.char_spans[j])))
    return NearestContexts(text, word, chosen, n_layers, query_span, highlight(text, query_span), hits,
                           int(keep.sum()), index.description, cached, index_seconds)
