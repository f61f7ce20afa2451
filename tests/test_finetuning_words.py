"""Tagging reads the caller's words as given: each word is split on its own (the tokenizer's pre-tokenized path,
`is_split_into_words=True`), never re-joined and re-split, so every tag stays on its word whatever characters
the word holds ("don't", "New-York", a space inside a word, a CJK name); a word that becomes no token is
refused with a message, never silently skipped so that the next word takes its tag."""

from __future__ import annotations

import pytest

import bertlab
from bertlab.finetuning import encode
from bertlab.model.heads import IGNORE


def first_piece_tags(tokenizer, words, tags):
    """What the labels must be: each word's tag on its first piece (found by encoding the words one by one)."""
    expected = [IGNORE]                                         # [CLS]
    for w, t in zip(words, tags):
        n = len(tokenizer.tokenize(w))
        expected += [t] + [IGNORE] * (n - 1)
    return expected + [IGNORE]                                  # [SEP]


@pytest.mark.parametrize("words", [
    ["the", "cat", "sat"],                                      # plain words: as before
    ["don't", "sat"],                                           # punctuation inside a word: don ' t, one word
    ["new-york", "is", "muddy"],                                # a hyphen
    ["the", "new york", "river"],                               # a space inside a word
    ["it", "...", "!?", "cat"],                                 # words that are all punctuation
    ["the", "東京", "cat"],                                     # CJK, split into characters by the cleanup
])
def test_each_tag_lands_on_the_first_piece_of_its_own_word(odd_tokenizer, words):
    tags = list(range(1, len(words) + 1))                       # a different tag per word: a shift would show
    batch = encode("tag", [{"words": words, "tags": tags}], odd_tokenizer)
    assert batch["labels"][0].tolist() == first_piece_tags(odd_tokenizer, words, tags)
    assert sorted(t for t in batch["labels"][0].tolist() if t != IGNORE) == tags


def test_the_words_are_encoded_pre_split_not_joined_and_re_split(odd_tokenizer):
    words = ["don't", "new york"]
    enc = odd_tokenizer(words, is_split_into_words=True)
    joined = odd_tokenizer(" ".join(words))
    assert enc.input_ids == joined.input_ids                    # the same tokens ...
    assert max(w for w in joined.word_ids if w is not None) == 4   # ... which re-splitting counts as 5 words
    assert max(w for w in enc.word_ids if w is not None) == 1   # ... but they are the caller's 2


@pytest.mark.parametrize("word", ["", " ", "\u200b", "\u200b\u200b", "\x00"])
def test_a_word_that_becomes_no_token_is_refused_naming_it(bert_and_tokenizer, word):
    bert, tokenizer = bert_and_tokenizer
    train = [{"words": ["the", "cat"], "tags": [0, 1]}, {"words": ["the", word, "dog"], "tags": [0, 1, 2]}]
    with pytest.raises(ValueError, match=r"train record 1: word 1 \(.*\) becomes no token.*remove the word"):
        bertlab.finetune(bert, tokenizer, train, task="tag", steps=1, lr=1e-3, batch_size=2)


def test_string_tags_without_o_keep_every_tag_an_entity(bert_and_tokenizer):
    bert, tokenizer = bert_and_tokenizer
    train = [{"words": ["the", "cat", "sat"], "tags": ["ART", "PER", "VERB"]},
             {"words": ["the", "dog"], "tags": ["ART", "PER"]}]
    result = bertlab.finetune(bert, tokenizer, train, task="tag", steps=1, lr=1e-3, batch_size=2)
    assert result.labels == ["O", "ART", "PER", "VERB"]        # "O" is added as id 0: no given tag is "no entity"
    assert result.model.num_labels == 4
    with_o = [{"words": ["the", "cat"], "tags": ["O", "PER"]}, {"words": ["a", "dog"], "tags": ["ART", "PER"]}]
    assert bertlab.finetune(bert, tokenizer, with_o, task="tag", steps=1, lr=1e-3,
                            batch_size=2).labels == ["O", "ART", "PER"]


def test_the_tokenizer_refuses_text_that_is_not_a_list_of_words(odd_tokenizer):
    with pytest.raises(ValueError, match="list of words"):
        odd_tokenizer("the cat", is_split_into_words=True)
    with pytest.raises(ValueError, match=r"text\[1\] must be a str"):
        odd_tokenizer(["the", 3], is_split_into_words=True)
    batch = odd_tokenizer.batch([["the", "cat"], ["dog"]], is_split_into_words=True)
    assert batch.word_ids[1][:3] == [None, 0, None]


@pytest.fixture
def bert_and_tokenizer(odd_config, odd_tokenizer):
    bertlab.set_seed(0)
    return bertlab.Bert(odd_config).eval(), odd_tokenizer
