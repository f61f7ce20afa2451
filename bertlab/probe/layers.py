"""Which layer knows what? A linear probe per layer, trained on frozen word vectors.

    examples, labels = load_probing_set("pos")           # ("I watch the watch .", 3) → "NOUN", …
    r = probe_layers(model, tokenizer, examples, labels)
    print(r)                                              # held-out accuracy per layer, and the baseline
    r.accuracy[r.best_layer]

The method is the edge-probing/"which layer" study of Tenney, Das & Pavlick 2019 ("BERT Rediscovers the
Classical NLP Pipeline", ACL) in its simplest form: freeze the model, read a word's vector at every layer
(the embedding output and each encoder layer), and train a separate linear classifier on each layer's
vectors. Where accuracy jumps, the information became linearly readable. Tenney et al. found
part-of-speech early (low layers) and semantic distinctions higher up; bertlab's small set repeats that
on a laptop. The classifier is multinomial logistic regression (Alain & Bengio 2016, "Understanding
intermediate layers using linear classifier probes"), kept linear on purpose: a deep probe can learn the
task itself, and then the accuracy says more about the probe than the layer (Hewitt & Liang 2019,
"Designing and Interpreting Probes with Control Tasks", who suggest comparing against a control task; the
majority-class baseline here is the cruder floor).

Examples are (sentence, word) pairs. The word is either an int, the index of a whitespace-separated token
of the sentence (write the sentence with punctuation split off, "I watch the watch .", as the shipped
part-of-speech set does), or a str, the first whole-word match of that word in the sentence (as
`word_vectors` matches it). A word's vector is the mean of its WordPieces, so "unhappiness" → un ##happi
##ness is one vector. Every sentence runs through the model once, for all layers.

The split is by sentence, so the probe is never tested on a sentence it saw in training (the other words
of a POS sentence would otherwise leak context): each distinct sentence is hashed with the seed and the
lowest `test_size` share of hashes is the test set. Same data, same seed → same split on any machine.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .running import base_model, inference, max_length
from .word_vectors import find_word

#: the hand-labelled probing sets shipped with bertlab (see its README.md)
PROBING_DIR = Path(__file__).resolve().parent.parent / "assets" / "probing"

#: the 17 Universal Dependencies v2 part-of-speech tags (the shipped set uses 15: no SYM, no X)
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
        "SCONJ", "SYM", "VERB", "X")

BATCH_SIZE = 32     # sentences per forward pass


# ---- the shipped data ---------------------------------------------------------------------------

def read_pos_file(path) -> list[list[tuple[str, str]]]:
    """Sentences of (token, tag) from a CoNLL-like file: token<TAB>tag per line, a blank line between
    sentences, lines starting with '#' are comments."""
    sentences, current = [], []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or " " in parts[0] or not parts[1].strip():
            raise ValueError(f"{path}:{n}: {line!r} is not 'token<TAB>tag' (one token, no spaces, one tag)")
        current.append((parts[0], parts[1].strip()))
    if current:
        sentences.append(current)
    return sentences


def read_senses_file(path) -> list[tuple[str, str, str]]:
    """(word, sense, sentence) rows from a tab-separated file with the header 'word  sense  sentence'."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != ["word", "sense", "sentence"]:
        raise ValueError(f"{path} must start with the header 'word<TAB>sense<TAB>sentence'")
    rows = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(f"{path}:{n}: {line!r} is not 'word<TAB>sense<TAB>sentence'")
        rows.append((parts[0], parts[1], parts[2]))
    return rows


@dataclass
class ProbingSet:
    """A probing set: `examples[i]` (a sentence and which token or word to read) is labelled `labels[i]`.

    It unpacks as the pair it is: `examples, labels = load_probing_set("pos")`.
    """
    examples: list[tuple[str, int | str]]
    labels: list[str]

    def __iter__(self) -> Iterator:
        return iter((self.examples, self.labels))

    def __len__(self) -> int:
        return len(self.examples)


def load_probing_set(name: str) -> ProbingSet:
    """A probing set shipped in bertlab/assets/probing/ (examples and labels), ready for `probe_layers`.

    "pos": one example per token of 260 hand-tagged sentences, (sentence with spaces between tokens,
    token index) → its Universal POS tag, e.g. ("I watch the watch on his wrist .", 3) → "NOUN".
    "senses": 240 sentences with one of ten polysemous words, (sentence, word) → "word/sense", e.g.
    ("We had a picnic on the grassy bank of the stream.", "bank") → "bank/river"; two senses per word,
    twelve sentences each.
    """
    if name == "pos":
        examples, labels = [], []
        for sentence in read_pos_file(PROBING_DIR / "pos.tsv"):
            text = " ".join(token for token, _ in sentence)
            for i, (_, tag) in enumerate(sentence):
                examples.append((text, i))
                labels.append(tag)
        return ProbingSet(examples, labels)
    if name == "senses":
        rows = read_senses_file(PROBING_DIR / "senses.tsv")
        return ProbingSet([(sentence, word) for word, _, sentence in rows],
                          [f"{word}/{sense}" for word, sense, _ in rows])
    raise ValueError(f"no probing set named {name!r}: choose 'pos' (part of speech) or 'senses' (word senses)")


# ---- word vectors at every layer ----------------------------------------------------------------

def _token_span(tokenizer, sentence: str, target, enc, k: int) -> tuple[int, int]:
    """[start, end) WordPiece positions of example k's word in `enc` (the sentence's encoding)."""
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        raise ValueError(f"examples[{k}] names its word as {target!r}: use an int (index of a whitespace-"
                         "separated token) or a str (the word itself)")
    if isinstance(target, str):
        pieces = tokenizer.tokenize(target) if target.strip() else []
        ids = [tokenizer.token_to_id(p) for p in pieces]
        starts = find_word(enc.input_ids, enc.word_ids, ids) if ids else []
        if not starts:
            raise ValueError(f"examples[{k}]: {target!r} is not a whole word of {sentence!r} (tokens "
                             f"{enc.tokens}): check the spelling, or give the word's index instead")
        return starts[0], starts[0] + len(ids)
    words = list(re.finditer(r"\S+", sentence))
    if not -len(words) <= target < len(words):
        raise ValueError(f"examples[{k}]: word index {target} is out of range for {sentence!r}, which has "
                         f"{len(words)} whitespace-separated tokens (0 … {len(words) - 1})")
    a, b = words[target].span()
    offsets = tokenizer.backend.encode(sentence).offsets
    inside = [t for t, (s, e) in enumerate(offsets[:len(enc.input_ids)])
              if enc.word_ids[t] is not None and e > s and a <= s and e <= b]
    if not inside:
        raise ValueError(f"examples[{k}]: token {target} ({words[target].group()!r}) of {sentence!r} has no "
                         "WordPieces in the model's input (cut off by truncation?): shorten the sentence")
    return inside[0], inside[-1] + 1


def layer_vectors(model, tokenizer, examples: Sequence) -> torch.Tensor:
    """Each example's word vector at every layer: (n_examples, L + 1, H), WordPieces averaged.

    Each distinct sentence runs through the model once, in batches sorted by length.
    """
    bert = base_model(model)
    max_len = max_length(model, tokenizer)
    by_sentence: dict[str, list[int]] = {}
    for k, ex in enumerate(examples):
        by_sentence.setdefault(ex[0], []).append(k)
    order = sorted(by_sentence, key=len)
    out = torch.empty(len(examples), bert.config.num_hidden_layers + 1, bert.config.hidden_size)
    with inference(model):
        for b in range(0, len(order), BATCH_SIZE):
            chunk = order[b:b + BATCH_SIZE]
            batch = tokenizer.batch(chunk, max_length=max_len)
            spans = [[(k, _token_span(tokenizer, s, examples[k][1], enc, k)) for k in by_sentence[s]]
                     for s, enc in zip(chunk, batch.encodings)]
            states = torch.stack(bert(**batch, output_hidden_states=True).hidden_states, dim=1)  # (B, L+1, T, H)
            states = states.float().cpu()
            for j, pairs in enumerate(spans):
                for k, (s, e) in pairs:
                    out[k] = states[j, :, s:e].mean(dim=1)                                      # (L + 1, H)
    return out


# ---- the probe ----------------------------------------------------------------------------------

def _split(sentences: Sequence[str], test_size: float, seed: int) -> set[str]:
    """The test sentences: the `test_size` share of distinct sentences with the lowest seeded hash."""
    distinct = sorted(set(sentences), key=lambda s: hashlib.sha1(f"{seed}\x00{s}".encode()).hexdigest())
    n_test = min(max(1, round(test_size * len(distinct))), len(distinct) - 1)
    return set(distinct[:n_test])


def train_linear_probe(x: torch.Tensor, y: torch.Tensor, n_classes: int, l2: float = 1e-3,
                       steps: int = 200) -> torch.nn.Linear:
    """Multinomial logistic regression on (n, H) features: minimise cross-entropy + l2·‖W‖², full batch.

    L-BFGS with a strong-Wolfe line search from zero weights, so the answer does not depend on a random
    start; the L2 weight keeps it finite when the classes are separable (common in 384 dimensions).
    Standardise x first (probe_layers does, with the training set's mean and spread).
    """
    probe = torch.nn.Linear(x.shape[1], n_classes)
    torch.nn.init.zeros_(probe.weight)
    torch.nn.init.zeros_(probe.bias)
    opt = torch.optim.LBFGS(probe.parameters(), lr=1.0, max_iter=steps, history_size=20,
                            tolerance_grad=1e-6, tolerance_change=1e-9, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(probe(x), y) + l2 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return probe


@dataclass
class LayerProbe:
    """Held-out accuracy of a linear probe trained on each layer's word vectors.

    `accuracy[l]` is for hidden_states[l]: l = 0 the embedding output (no context), l = 1 … L the encoder
    layers; `layer_names` says so in words. `majority_baseline` is the test accuracy of always answering
    the training set's most frequent label (`majority_label`); with balanced classes that label may be rare
    in the test split, so the baseline can fall below 1 / len(classes). `n_train`/`n_test` count examples,
    `n_train_sentences`/`n_test_sentences` the distinct sentences they come from (a sentence is wholly in
    one split), `test_sentences` the held-out ones. `seconds_vectors` is the time for the forward passes,
    `seconds_probes` for training the L + 1 probes.
    """
    task: str
    layer_names: list[str]
    accuracy: list[float]
    train_accuracy: list[float]
    majority_baseline: float
    majority_label: str
    classes: list[str]
    n_train: int
    n_test: int
    n_train_sentences: int
    n_test_sentences: int
    test_sentences: list[str]
    seconds_vectors: float
    seconds_probes: float

    @property
    def best_layer(self) -> int:
        """The layer with the highest held-out accuracy (the lowest such layer on a tie)."""
        return max(range(len(self.accuracy)), key=lambda l: (self.accuracy[l], -l))

    def __str__(self) -> str:
        lines = [f"{self.task or 'probe'}: {len(self.classes)} classes, {self.n_train} train / {self.n_test} test "
                 f"examples ({self.n_train_sentences} / {self.n_test_sentences} sentences); majority "
                 f"{self.majority_label!r} scores {self.majority_baseline:.3f}"]
        for l, (name, acc, tr) in enumerate(zip(self.layer_names, self.accuracy, self.train_accuracy)):
            mark = "  ← best" if l == self.best_layer else ""
            lines.append(f"  {name:>10}  test {acc:.3f}  train {tr:.3f}{mark}")
        return "\n".join(lines)


def probe_layers(model, tokenizer, examples: Sequence, labels: Sequence[str], test_size: float = 0.25,
                 l2: float = 1e-3, steps: int = 200, seed: int = 0, task: str = "") -> LayerProbe:
    """Train one linear probe per layer (embeddings + every encoder layer) and report held-out accuracy.

    `examples`: (sentence, word) pairs, the word an int (index of a whitespace-separated token) or a str
    (its first whole-word match); `labels`: one str per example. The split is by sentence (`test_size`
    of the distinct sentences, chosen by a seeded hash; see the module docstring). Features are
    standardised with the training split's statistics; each probe is `train_linear_probe(…, l2, steps)`.
    A test label never seen in training counts as a miss. `task` only names the result.
    """
    if isinstance(examples, (str, bytes)) or not isinstance(examples, Sequence):
        raise ValueError(f"examples must be a list of (sentence, word) pairs, got {type(examples).__name__}")
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise ValueError(f"labels must be a list of str, one per example, got {type(labels).__name__}")
    if len(examples) != len(labels):
        raise ValueError(f"got {len(examples)} examples but {len(labels)} labels: pass one label per example")
    for k, ex in enumerate(examples):
        if not isinstance(ex, (tuple, list)) or len(ex) != 2 or not isinstance(ex[0], str) or not ex[0].strip():
            raise ValueError(f"examples[{k}] is {ex!r}: each example is a (sentence, word) pair, the word an "
                             "int (token index) or a str, e.g. ('I watch the watch .', 3) or "
                             "('the bank of the river', 'bank')")
    for k, y in enumerate(labels):
        if not isinstance(y, str) or not y:
            raise ValueError(f"labels[{k}] is {y!r}: labels must be non-empty str such as 'NOUN' or 'bank/river'")
    if len(set(labels)) < 2:
        raise ValueError(f"every label is {labels[0]!r}: a probe needs at least two classes to tell apart")
    if not isinstance(test_size, (int, float)) or isinstance(test_size, bool) or not 0 < test_size < 1:
        raise ValueError(f"test_size must be a fraction between 0 and 1 (the share of sentences held out), "
                         f"got {test_size!r}")
    sentences = [ex[0] for ex in examples]
    if len(set(sentences)) < 4 or len(examples) < 10:
        raise ValueError(f"too few examples to train and test a probe: {len(examples)} examples from "
                         f"{len(set(sentences))} distinct sentences; give at least 10 examples from 4 sentences "
                         "(a few hundred make the numbers worth reading)")

    bert = base_model(model)
    t0 = time.perf_counter()
    vectors = layer_vectors(model, tokenizer, examples)                 # (N, L + 1, H)
    t1 = time.perf_counter()

    test_sentences = _split(sentences, test_size, seed)
    is_test = torch.tensor([s in test_sentences for s in sentences])
    train_labels = [y for y, t in zip(labels, is_test.tolist()) if not t]
    classes = sorted(set(train_labels))
    if len(classes) < 2:
        raise ValueError(f"the training split has one class only ({classes[0]!r}): add examples of other "
                         "labels, or change seed or test_size")
    index = {c: i for i, c in enumerate(classes)}
    y = torch.tensor([index.get(l, -1) for l in labels])               # -1: a label the probe never saw
    y_train, y_test = y[~is_test], y[is_test]
    counts = Counter(train_labels)
    majority = max(classes, key=lambda c: (counts[c], -classes.index(c)))
    baseline = float((y_test == index[majority]).float().mean())

    accuracy, train_accuracy = [], []
    torch.manual_seed(seed)
    for l in range(vectors.shape[1]):
        x = vectors[:, l]                                               # (N, H)
        mean, std = x[~is_test].mean(0), x[~is_test].std(0).clamp_min(1e-6)
        x = (x - mean) / std
        probe = train_linear_probe(x[~is_test], y_train, len(classes), l2=l2, steps=steps)
        with torch.no_grad():
            accuracy.append(float((probe(x[is_test]).argmax(-1) == y_test).float().mean()))
            train_accuracy.append(float((probe(x[~is_test]).argmax(-1) == y_train).float().mean()))
    t2 = time.perf_counter()

    n_layers = bert.config.num_hidden_layers
    return LayerProbe(task, ["embeddings"] + [f"layer {l}" for l in range(1, n_layers + 1)], accuracy,
                      train_accuracy, baseline, majority, classes, int((~is_test).sum()), int(is_test.sum()),
                      len(set(sentences)) - len(test_sentences), len(test_sentences), sorted(test_sentences),
                      t1 - t0, t2 - t1)
