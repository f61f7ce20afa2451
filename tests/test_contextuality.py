"""Contextuality (Ethayarajh 2019, "How Contextual are Contextualized Word Representations?"): properties that
hold for any model (identical contexts, the embedding layer, ranges, seeded baselines) and what MiniLM shows."""

import glob
import re

import pytest

from bertlab.probe.contextuality import contextuality
from testkit import bundled, one_thread  # noqa: F401  (fixture)

HELDOUT = "bertlab/assets/corpus/heldout/"
# sentences in the odd tokenizer's vocabulary (conftest.ODD_VOCAB): "the", "cat", "dog", "bank", ... are words
ODD = ["the cat sat on the mat.", "the dog sat in the river.", "she sat on the bank and the cat ran.",
       "he was muddy and the dog was muddy."]


@pytest.fixture(scope="module")
def minilm():
    return bundled("minilm")


def polysemous():
    """The held-out English sentences with a word of several senses (bank, spring, light, ...): 99 of them."""
    files = sorted(glob.glob(HELDOUT + "en_*.txt"))
    words = re.compile(r"\b(bank|spring|light|match|bat|key|ring|watch|park|rock)\b", re.I)
    return [line.strip() for f in files for line in open(f) if words.search(line)]


def test_a_word_in_identical_contexts_is_perfectly_self_similar(odd_model, odd_tokenizer):
    c = contextuality(odd_model, odd_tokenizer, ["the dog sat on the mat.", "the dog sat on the mat."])
    assert c.layers == [0, 1, 2] and "dog" in c.words and c.occurrences["dog"] == 2
    assert c.word_self_similarity["dog"] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert c.word_self_similarity["mat"] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert c.mev[-1] < 1 + 1e-5 and min(c.mev) > 0.5   # two occurrences: at least half along the first direction


def test_the_embedding_layer_has_no_context_yet(odd_model, odd_tokenizer):
    # hidden state 0 is token + segment + position (normalised): the same word at the same position in two
    # sentences is one vector there, and only the layers above can tell the sentences apart
    c = contextuality(odd_model, odd_tokenizer, ["the cat sat.", "the cat ran on the mat."])
    assert c.word_self_similarity["cat"][0] == pytest.approx(1.0, abs=1e-6)
    assert c.word_self_similarity["cat"][2] < 0.999
    assert c.word_self_similarity["the"][0] < 0.999       # "the" also occurs at position 5: another vector


def test_a_random_model_gives_values_in_range_and_a_seeded_baseline(odd_model, odd_tokenizer):
    c = contextuality(odd_model, odd_tokenizer, ODD)
    L = odd_model.config.num_hidden_layers + 1
    for name in ("self_similarity", "intra_similarity", "baseline_cosine"):
        values = getattr(c, name)
        assert len(values) == L and all(-1 - 1e-6 <= v <= 1 + 1e-6 for v in values)
    # uncentred MEV of n vectors is at least 1/n (the first direction takes its share of any set) and at most 1
    floor = sum(1 / c.occurrences[w] for w in c.words) / len(c.words)
    assert all(floor - 1e-6 <= m <= 1 + 1e-6 for m in c.mev) and all(0 < b <= 1 + 1e-6 for b in c.baseline_mev)
    assert c.self_similarity == pytest.approx([sum(c.word_self_similarity[w][l] for w in c.words) / len(c.words)
                                               for l in range(L)], abs=1e-6)
    assert c.adjusted("mev") == pytest.approx([m - b for m, b in zip(c.mev, c.baseline_mev)])
    assert sorted(c.words) == c.words and set(c.words) >= {"the", "cat", "dog", "sat", "on"}
    assert "muddy" not in c.words and c.occurrences["the"] == 7       # twice in one sentence is one sentence
    again, other = (contextuality(odd_model, odd_tokenizer, ODD, seed=s) for s in (0, 1))
    assert again.baseline_cosine == c.baseline_cosine and again.baseline_mev == c.baseline_mev
    assert other.baseline_cosine != c.baseline_cosine and other.self_similarity == c.self_similarity


def test_one_layer_is_that_layer_of_all(odd_model, odd_tokenizer):
    every = contextuality(odd_model, odd_tokenizer, ODD)
    for layer, index in ((1, 1), (-1, 2), (0, 0)):
        one = contextuality(odd_model, odd_tokenizer, ODD, layer=layer)
        assert one.layers == [index]
        assert one.self_similarity[0] == pytest.approx(every.self_similarity[index], abs=1e-6)
        assert one.intra_similarity[0] == pytest.approx(every.intra_similarity[index], abs=1e-6)


def test_unknown_words_and_punctuation_are_not_words(odd_model, odd_tokenizer):
    assert "[UNK]" in odd_tokenizer.tokenize("жук")
    c = contextuality(odd_model, odd_tokenizer, ["the cat saw a жук.", "the dog saw a жук!"])
    assert "[unk]" not in c.words and "." not in c.words and {"the", "saw"} <= set(c.words)


@pytest.mark.parametrize("sentences, kwargs, match", [
    (["the cat sat.", "a dog ran."], {}, "no word occurs in two"),
    (ODD, {"min_sentences": 9}, "no word occurs in 9 .* lower min_sentences"),
    (ODD, {"min_sentences": 1}, "min_sentences must be an int of at least 2"),
    (ODD, {"layer": 3}, "out of range"),
    (ODD, {"samples": 0}, "samples must be a positive int"),
    ("the cat sat.", {}, "list of str"),
    ([], {}, "empty"),
])
def test_bad_requests_say_what_to_do(odd_model, odd_tokenizer, sentences, kwargs, match):
    with pytest.raises(ValueError, match=match):
        contextuality(odd_model, odd_tokenizer, sentences, **kwargs)


@pytest.mark.slow
def test_minilms_upper_layers_are_more_contextual_than_its_embeddings(minilm):
    # Ethayarajh's first finding holds on MiniLM: self-similarity falls from the embeddings to the last layer,
    # and stays above the random-words baseline (adjusted > 0). His others do not: the baseline cosine stays
    # low (MiniLM is nearly isotropic) and a word's first principal component explains far more than 5 %.
    model, tok = minilm
    c = contextuality(model, tok, polysemous())
    assert c.layers == list(range(7)) and len(c.words) > 100
    assert c.self_similarity[-1] < c.self_similarity[0] - 0.2
    assert c.adjusted("self_similarity")[-1] < c.adjusted("self_similarity")[0] - 0.2
    assert all(0 <= b < s for b, s in zip(c.baseline_cosine, c.self_similarity))
    assert max(c.baseline_cosine) < 0.3
    assert min(c.adjusted("mev")) > 0.2
