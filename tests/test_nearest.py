"""nearest_contexts: exBERT's corpus search finds the word used in the same sense, fast once indexed."""

from __future__ import annotations

import re

import pytest
import torch

import bertlab
from bertlab.probe import nearest as nearest_module
from bertlab.probe.layers import PROBING_DIR, read_senses_file
from bertlab.probe.nearest import clear_index_cache, highlight, nearest_contexts
from testkit import bundled

# Queries written for this test, none of them in senses.tsv: (word, sense, sentence).
QUERIES = [
    ("bank", "river", "He sat on the bank of the river."),
    ("bank", "river", "Reeds grew thick along the bank of the canal."),
    ("bank", "money", "She deposited money at the bank."),
    ("bank", "money", "The bank approved his loan on Friday."),
    ("bat", "animal", "A bat flapped past the lantern in the cave."),
    ("bat", "animal", "The bat eats hundreds of insects each night."),
    ("bat", "sports", "She gripped the bat and waited for the throw."),
    ("bat", "sports", "He hit a home run with his new bat."),
    ("crane", "bird", "A crane flew low over the rice fields."),
    ("crane", "bird", "The crane stalked frogs at the edge of the pond."),
    ("crane", "machine", "The crane raised the steel frame to the tenth floor."),
    ("crane", "machine", "A crane unloaded boxes from the cargo ship."),
    ("spring", "season", "The flowers come back every spring."),
    ("spring", "season", "We visit our grandparents in the spring."),
    ("spring", "coil", "The spring in the old clock finally snapped."),
    ("spring", "coil", "Push the lid down until the spring clicks."),
    ("bark", "dog", "The bark of the neighbour's dog kept us awake."),
    ("bark", "dog", "The puppy let out a tiny bark."),
    ("bark", "tree", "The bark of the pine was sticky with sap."),
    ("bark", "tree", "Insects tunnel under the bark of old trees."),
    ("match", "fire", "He lit the lamp with a match."),
    ("match", "fire", "The match burned down to her fingers."),
    ("match", "game", "We lost the match in the final minute."),
    ("match", "game", "The match will be shown live on television."),
    ("mouse", "animal", "The mouse hid in a hole in the wall."),
    ("mouse", "animal", "A hungry mouse chewed through the bag of rice."),
    ("mouse", "computer", "Right-click the mouse to see more options."),
    ("mouse", "computer", "The mouse cable is too short to reach the desk."),
    ("seal", "animal", "A seal swam beside the fishing boat."),
    ("seal", "animal", "The seal lay on the ice next to its pup."),
    ("seal", "closure", "The seal on the lid keeps the soup fresh."),
    ("seal", "closure", "Tape is used to seal the cardboard box."),
    ("trunk", "tree", "Ants marched up the trunk of the maple."),
    ("trunk", "tree", "The trunk of the fallen tree blocked the path."),
    ("trunk", "elephant", "The elephant curled its trunk around the branch."),
    ("trunk", "elephant", "The elephant sucked water up into its trunk."),
    ("ring", "jewellery", "She slipped the ring onto her finger."),
    ("ring", "jewellery", "The wedding ring was made of white gold."),
    ("ring", "sound", "The ring of the telephone woke me up."),
    ("ring", "sound", "I heard the ring of a bicycle bell behind me."),
]


@pytest.fixture(scope="module")
def senses():
    """The hand-labelled sense sentences as a corpus, and each sentence's sense."""
    rows = read_senses_file(PROBING_DIR / "senses.tsv")
    return [s for _, _, s in rows], {s: sense for _, sense, s in rows}


@pytest.fixture(scope="module")
def tiny():
    """A private bertlab-tiny, free to modify (the session's MiniLM must stay untouched)."""
    return bundled("bertlab-tiny")


def precision_at_5(model, tok, corpus, sense_of, layer) -> float:
    hits = [sense_of[h.sentence] == sense for word, sense, q in QUERIES
            for h in nearest_contexts(model, tok, q, word, corpus=corpus, layer=layer, k=5).hits]
    assert len(hits) == 5 * len(QUERIES)
    return sum(hits) / len(hits)


def test_queries_are_not_in_the_labelled_corpus(senses):
    corpus, _ = senses
    assert not {q for _, _, q in QUERIES} & set(corpus)


@pytest.mark.slow
def test_a_river_bank_finds_river_banks_and_a_money_bank_finds_money_banks(minilm, senses):
    model, tok = minilm
    corpus, sense_of = senses
    for text, sense in [("He sat on the bank of the river.", "river"), ("She deposited money at the bank.", "money")]:
        r = nearest_contexts(model, tok, text, "bank", corpus=corpus, k=5)
        assert [sense_of[h.sentence] for h in r.hits] == [sense] * 5, str(r)


@pytest.mark.slow
def test_precision_at_5_over_ten_polysemous_words_beats_the_context_free_layer(minilm, senses):
    # measured on MiniLM: 0.900 at the last layer, 0.540 at layer 0 (every "bank" the same word embedding,
    # so only position embeddings order the hits: chance is 0.5)
    model, tok = minilm
    corpus, sense_of = senses
    last = precision_at_5(model, tok, corpus, sense_of, layer=-1)
    first = precision_at_5(model, tok, corpus, sense_of, layer=0)
    assert last >= 0.85, last
    assert first <= 0.65, first


@pytest.mark.slow
def test_bertlab_mini_separates_senses_too(senses):
    # measured on bertlab-mini: 0.920 at the last layer, 0.540 at layer 0
    model, tok = bundled("bertlab-mini")
    corpus, sense_of = senses
    assert precision_at_5(model, tok, corpus, sense_of, layer=-1) >= 0.85


@pytest.mark.slow
def test_on_the_demo_corpus_the_top_hits_share_the_query_sense(minilm):
    # the demo corpus is not sense-labelled: a hit counts when it says what its sense is about.
    # measured on MiniLM: all five hits of each query do.
    model, tok = minilm
    cues = {"He sat on the bank of the river.": r"river|water|stream|grass|lake|shore",
            "She deposited money at the bank.": r"money|interest|account|loan|cash|pay|saving"}
    for text, cue in cues.items():
        r = nearest_contexts(model, tok, text, "bank", k=5)
        assert r.corpus.startswith("the demo corpus") and r.searched >= 100
        assert all(re.search(cue, h.sentence, re.I) for h in r.hits), str(r)


def test_hits_are_sorted_highlighted_and_point_at_the_word(minilm, senses):
    model, tok = minilm
    corpus, _ = senses
    r = nearest_contexts(model, tok, "The Bank of the river was muddy.", "bank", corpus=corpus, layer=3, k=7)
    assert len(r.hits) == 7 and r.layer == 3 and r.num_layers == 6
    assert r.query_highlighted == "The [[Bank]] of the river was muddy."
    cosines = [h.cosine for h in r.hits]
    assert cosines == sorted(cosines, reverse=True) and all(-1.0 <= c <= 1.0 + 1e-6 for c in cosines)
    for h in r.hits:
        a, b = h.char_span
        assert h.sentence[a:b].lower() == "bank"
        assert h.highlighted == highlight(h.sentence, h.char_span)
        assert h.highlighted == h.sentence[:a] + "[[" + h.sentence[a:b] + "]]" + h.sentence[b:]
        s, e = h.token_span
        assert h.tokens[s:e] == ["bank"] and h.tokens[0] == "[CLS]"
    assert str(r).splitlines()[1].startswith(f"{cosines[0]:6.3f}  ")


@pytest.mark.slow
def test_a_hit_cosine_is_the_cosine_of_word_vectors(minilm, senses):
    model, tok = minilm
    corpus, _ = senses
    text = "Otters play near the bank."
    r = nearest_contexts(model, tok, text, "bank", corpus=corpus, layer=4, k=1)
    v = bertlab.word_vectors(model, tok, [text, r.hits[0].sentence], "bank", layer=4)
    assert r.hits[0].cosine == pytest.approx(float(torch.cosine_similarity(v[0], v[1], dim=0)), abs=1e-4)


@pytest.mark.slow
def test_the_query_sentence_itself_is_left_out_and_every_occurrence_is_a_candidate(minilm):
    model, tok = minilm
    corpus = ["The bank by the bank was closed.", "We walked along the river bank.", "The bank lent us money."]
    r = nearest_contexts(model, tok, "The bank lent us money.", "bank", corpus=corpus, k=10)
    assert r.searched == 3 and len(r.hits) == 3                      # two in the first sentence, one in the second
    assert "The bank lent us money." not in [h.sentence for h in r.hits]
    assert sorted(h.char_span for h in r.hits if h.sentence.startswith("The bank by")) == [(4, 8), (16, 20)]


@pytest.mark.slow
def test_a_corpus_can_be_text_files(minilm, tmp_path):
    model, tok = minilm
    (tmp_path / "a.txt").write_text("The crane lifted the roof. It was loud.\n\nA crane stood in the marsh.\n")
    r = nearest_contexts(model, tok, "A crane caught a fish.", "crane", corpus=tmp_path / "a.txt", k=5)
    assert {h.sentence for h in r.hits} == {"The crane lifted the roof.", "A crane stood in the marsh."}
    assert r.corpus.endswith("(3 sentences)")


@pytest.mark.slow
def test_the_index_is_built_once_and_reused_at_every_layer(tiny, senses, monkeypatch):
    """Counted, not timed: the corpus goes through the model once, whatever layer later queries ask for."""
    model, tok = tiny
    corpus, _ = senses
    clear_index_cache(model)
    indexed = []
    index_word = nearest_module._index_word
    monkeypatch.setattr(nearest_module, "_index_word", lambda *a: indexed.append(a[3]) or index_word(*a))
    first = nearest_contexts(model, tok, "The seal swam away.", "seal", corpus=corpus)
    assert not first.cached and first.index_seconds > 0 and indexed == ["seal"]
    for layer in (0, 1, 2, -1, -1):
        again = nearest_contexts(model, tok, "Seal the jar tightly.", "seal", corpus=corpus, layer=layer)
        assert again.cached and again.index_seconds == 0.0
    assert indexed == ["seal"]                                          # reused at every layer, never rebuilt
    assert not nearest_contexts(model, tok, "A bat flew out.", "bat", corpus=corpus).cached
    assert indexed == ["seal", "bat"]                                   # a new word is indexed once, on its own


def test_changing_the_weights_rebuilds_the_index(tiny, senses):
    model, tok = tiny
    corpus, _ = senses
    before = nearest_contexts(model, tok, "The seal swam away.", "seal", corpus=corpus, k=3)
    assert nearest_contexts(model, tok, "The seal swam away.", "seal", corpus=corpus, k=3).cached
    layer = model.bert.encoder.layer[1].output.dense
    saved = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.mul_(-1.0)                                       # in place, as an optimizer step would
    try:
        after = nearest_contexts(model, tok, "The seal swam away.", "seal", corpus=corpus, k=3)
        assert not after.cached
        assert [h.cosine for h in after.hits] != pytest.approx([h.cosine for h in before.hits], abs=1e-4)
    finally:
        with torch.no_grad():
            layer.weight.copy_(saved)


@pytest.mark.parametrize("kwargs, message", [
    (dict(text="The river was muddy.", word="bank"), r"'bank'.*not a word of sentence"),
    (dict(text="The xylograph was old.", word="xylograph", corpus=["The bank was old."]),
     r"'xylograph' does not occur"),
    (dict(text="The bank was old.", word="bank", k=0), r"k must be an int"),
    (dict(text="The bank was old.", word="bank", layer="all"), r"one layer at a time"),
    (dict(text="The bank was old.", word="bank", layer=9), r"out of range"),
    (dict(text="The bank was old.", word="bank", corpus="/no/such/corpus.txt"), r"not an existing file"),
    (dict(text="The bank was old.", word="bank", corpus=["fine", 3]), r"corpus\[1\]"),
    (dict(text="The bank was old.", word="bank", corpus=[]), r"corpus must be"),
    (dict(text="The bank was old.", word="bank", corpus=["The bank was old."]), r"only corpus sentence"),
    (dict(text="", word="bank"), r"text is ''"),
])
def test_bad_input_says_what_to_do(minilm, kwargs, message):
    model, tok = minilm
    with pytest.raises(ValueError, match=message):
        nearest_contexts(model, tok, **kwargs)
