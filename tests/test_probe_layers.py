"""probe_layers: a linear probe per layer finds part of speech early and word sense late (Tenney et al. 2019)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest
import torch

import bertlab
from bertlab.probe.layers import (
    PROBING_DIR,
    UPOS,
    layer_vectors,
    load_probing_set,
    probe_layers,
    read_pos_file,
    read_senses_file,
)
from testkit import bundled

# ---- the shipped probing sets -------------------------------------------------------------------

def test_the_pos_set_is_well_formed_and_uses_universal_tags():
    sentences = read_pos_file(PROBING_DIR / "pos.tsv")
    assert len(sentences) >= 250
    texts = [" ".join(t for t, _ in s) for s in sentences]
    assert len(set(texts)) == len(texts), "a sentence appears twice"
    tags = Counter()
    by_word = defaultdict(set)
    for s in sentences:
        assert s and all(token.strip() for token, _ in s)
        for token, tag in s:
            assert tag in UPOS, (token, tag)
            assert (tag == "PUNCT") == bool(re.fullmatch(r"[.,!?;:]", token)), (token, tag)  # punctuation split off
            tags[tag] += 1
            by_word[token.lower()].add(tag)
    assert set(tags) == set(UPOS) - {"SYM", "X"}
    # the point of the set: the same spelling in different roles
    for word, roles in [("watch", {"NOUN", "VERB"}), ("light", {"NOUN", "ADJ", "VERB"}),
                        ("that", {"DET", "PRON", "SCONJ"}), ("to", {"ADP", "PART"}), ("well", {"ADV", "ADJ", "INTJ"})]:
        assert roles <= by_word[word], (word, by_word[word])


def test_the_senses_set_has_eight_or_more_words_with_two_senses_and_twenty_sentences_each():
    rows = read_senses_file(PROBING_DIR / "senses.tsv")
    senses, count = defaultdict(Counter), Counter()
    for word, sense, sentence in rows:
        assert sentence.strip() and re.search(rf"\b{re.escape(word)}\b", sentence, re.I), (word, sentence)
        senses[word][sense] += 1
        count[word] += 1
    assert len({s for _, _, s in rows}) == len(rows), "a sentence appears twice"
    rich = [w for w in senses if len(senses[w]) >= 2 and count[w] >= 20]
    assert len(rich) >= 8, dict(senses)
    assert all(min(c.values()) >= 10 for c in senses.values())        # no sense is a token minority


def test_load_probing_set_gives_examples_ready_for_probe_layers():
    examples, labels = load_probing_set("pos")
    assert len(examples) == len(labels) > 1500
    sentence, i = examples[0]
    assert isinstance(i, int) and sentence.split()[i] and labels[0] in UPOS
    examples, labels = load_probing_set("senses")
    assert len(examples) == len(labels) >= 160
    assert all(isinstance(w, str) and w in s.lower() for s, w in examples)
    assert labels[0] == "bank/river"
    with pytest.raises(ValueError, match="'pos'.*'senses'"):
        load_probing_set("ner")


# ---- word vectors -------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_word_by_index_and_by_spelling_is_word_vectors_own(minilm):
    model, tok = minilm
    sentence = "The unhappiness of the river bank , said Tom ."
    by_index = layer_vectors(model, tok, [(sentence, 1), (sentence, 5), ("A different text .", 1)])
    by_word = layer_vectors(model, tok, [(sentence, "unhappiness"), (sentence, "bank")])
    reference = bertlab.word_vectors(model, tok, [sentence], "unhappiness", layer="all")[0]   # several pieces
    assert by_index.shape == (3, 7, 384)
    torch.testing.assert_close(by_index[:2], by_word, atol=1e-5, rtol=0)
    torch.testing.assert_close(by_index[0], reference, atol=1e-5, rtol=0)


# ---- the probe on MiniLM: where the knowledge lives -----------------------------------------------

@pytest.fixture(scope="module")
def minilm_probes(minilm):
    model, tok = minilm
    return {task: probe_layers(model, tok, *load_probing_set(task), task=task) for task in ("pos", "senses")}


@pytest.mark.slow
def test_part_of_speech_is_readable_early_and_fades_at_the_top(minilm_probes):
    # measured on MiniLM: embeddings 0.872, layers 1-6 0.936 0.970 0.957 0.966 0.952 0.902; majority 0.205
    r = minilm_probes["pos"]
    assert len(r.accuracy) == len(r.layer_names) == 7 and r.layer_names[0] == "embeddings"
    assert max(r.accuracy) >= 0.93 and min(r.accuracy) >= r.majority_baseline + 0.5
    assert r.majority_label == "NOUN" and 0.15 < r.majority_baseline < 0.3
    assert 1 <= r.best_layer <= 4
    assert r.accuracy[-1] <= max(r.accuracy) - 0.03                    # the last layer has moved on
    assert r.accuracy[r.best_layer] > r.accuracy[0] + 0.05             # context helps: "I watch the watch"


def test_word_sense_needs_context_and_is_best_read_high(minilm_probes):
    # measured on MiniLM: embeddings 0.517 (word identity only: one sense per word), layer 6 0.917 (best)
    r = minilm_probes["senses"]
    assert r.accuracy[0] <= 0.65
    assert r.accuracy[-1] >= r.accuracy[0] + 0.25
    assert r.accuracy[-1] >= max(r.accuracy) - 0.05


def test_the_split_is_by_sentence_and_the_counts_add_up(minilm_probes):
    examples, _ = load_probing_set("pos")
    r = minilm_probes["pos"]
    sentences = {s for s, _ in examples}
    assert r.n_train + r.n_test == len(examples)
    assert r.n_train_sentences + r.n_test_sentences == len(sentences)
    assert set(r.test_sentences) <= sentences and len(r.test_sentences) == round(0.25 * len(sentences))
    assert r.n_test == sum(s in set(r.test_sentences) for s, _ in examples)
    assert "← best" in str(r) and str(r).count("\n") == 7


@pytest.mark.slow
def test_the_same_call_gives_the_same_numbers_and_another_seed_another_split():
    model, tok = bundled("bertlab-tiny")
    examples, labels = load_probing_set("senses")
    a = probe_layers(model, tok, examples, labels, steps=50)
    b = probe_layers(model, tok, examples, labels, steps=50)
    c = probe_layers(model, tok, examples, labels, steps=50, seed=1)
    assert a.accuracy == b.accuracy and a.test_sentences == b.test_sentences
    assert c.test_sentences != a.test_sentences


# ---- bad input ----------------------------------------------------------------------------------

GOOD = [(f"The dog number {i} ran .", 1) for i in range(6)]


@pytest.mark.parametrize("examples, labels, kwargs, message", [
    (GOOD, ["NOUN"] * 5, {}, r"6 examples but 5 labels"),
    (GOOD, ["NOUN"] * 6, {}, r"every label is 'NOUN'"),
    (GOOD, ["NOUN", "VERB"] * 3, {}, r"too few examples"),
    (GOOD * 2, ["NOUN", "VERB"] * 6, dict(test_size=1.5), r"test_size"),
    ("The dog ran .", ["NOUN"], {}, r"list of \(sentence, word\) pairs"),
    ([("The dog ran .",)] + GOOD[1:], ["NOUN", "VERB"] * 3, {}, r"examples\[0\]"),
    (GOOD, ["NOUN", "VERB", "NOUN", "VERB", "NOUN", 7], {}, r"labels\[5\]"),
])
def test_bad_input_says_what_to_do(minilm, examples, labels, kwargs, message):
    model, tok = minilm
    with pytest.raises(ValueError, match=message):
        probe_layers(model, tok, examples, labels, **kwargs)


@pytest.mark.parametrize("example, message", [
    (("The dog ran .", 9), r"word index 9 is out of range"),
    (("The dog ran .", "cat"), r"'cat' is not a whole word"),
    (("The dog ran .", 2.0), r"use an int"),
])
def test_a_word_that_is_not_there_is_named(minilm, example, message):
    model, tok = minilm
    with pytest.raises(ValueError, match=message):
        layer_vectors(model, tok, [("A cat sat .", 1), example])
