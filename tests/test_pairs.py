"""NSP pairs follow Google's create_instances_from_document: real continuations, other-document NotNext,
a 50/50 label balance, 10 % short sequences, and truncation of the longer segment at either end.

Every word of the test corpus is its own vocabulary token "d{doc}s{sentence}w{word}", so each token of a
pair says exactly where in the corpus it came from.
"""

from __future__ import annotations

import re

import pytest
import torch

from bertlab import Tokenizer
from bertlab.pretraining import PairExample, make_pairs
from bertlab.pretraining.pairs import _Rng, _truncate_pair

N_DOCS, N_SENTENCES, MAX_WORDS = 120, 12, 6
WORD = re.compile(r"d(\d+)s(\d+)w(\d+)")


def sentence_length(d: int, s: int) -> int:
    return 1 + (7 * d + 5 * s + d * s) % MAX_WORDS  # 1..6 words, varied but fixed


def sentence(d: int, s: int) -> str:
    return " ".join(f"d{d}s{s}w{w}" for w in range(sentence_length(d, s)))


DOCUMENTS = [[sentence(d, s) for s in range(N_SENTENCES)] for d in range(N_DOCS)]


@pytest.fixture(scope="module")
def tok(tmp_path_factory) -> Tokenizer:
    words = [f"d{d}s{s}w{w}" for d in range(N_DOCS) for s in range(N_SENTENCES) for w in range(MAX_WORDS)]
    path = tmp_path_factory.mktemp("numbered") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]))
    return Tokenizer.from_file(path)


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def segments(tok, ex: PairExample) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """A and B as lists of (doc, sentence, word)."""
    first_sep = ex.input_ids.index(tok.sep_id)
    where = [tuple(map(int, WORD.fullmatch(tok.id_to_token(i)).groups())) for i in ex.input_ids[1:-1]
             if i != tok.sep_id]
    return where[:first_sep - 1], where[first_sep - 1:]


def flat(d: int, s: int, w: int) -> int:
    """A word's position in its document's token stream."""
    return sum(sentence_length(d, k) for k in range(s)) + w


def contiguous(seg) -> bool:
    """One document, consecutive tokens."""
    return len({d for d, _, _ in seg}) == 1 and [flat(*t) for t in seg] == list(
        range(flat(*seg[0]), flat(*seg[0]) + len(seg)))


def starts_sentence(seg) -> bool:
    return seg[0][2] == 0


def ends_sentence(seg) -> bool:
    d, s, w = seg[-1]
    return w == sentence_length(d, s) - 1


@pytest.fixture(scope="module")
def pairs(tok) -> list[PairExample]:
    out = []
    for seed in range(4):
        out += make_pairs(DOCUMENTS, tok, max_len=24, generator=seeded(seed))
    return out


def test_pairs_are_cls_a_sep_b_sep_with_segment_ids(tok, pairs):
    assert len(pairs) > 1500
    for ex in pairs:
        ids, types = ex.input_ids, ex.token_type_ids
        assert len(ids) == len(types) <= 24
        assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id and ids.count(tok.sep_id) == 2
        assert tok.pad_id not in ids and tok.cls_id not in ids[1:]
        a_end = ids.index(tok.sep_id)  # the first [SEP] closes segment A
        assert a_end >= 2 and len(ids) - a_end >= 3  # at least one token in A and in B
        assert types == [0] * (a_end + 1) + [1] * (len(ids) - a_end - 1)
        assert ex.next_sentence_label in (0, 1)


def test_is_next_b_continues_a_in_the_same_document(tok, pairs):
    is_next = [ex for ex in pairs if ex.next_sentence_label == 0]
    untruncated = 0
    for ex in is_next:
        a, b = segments(tok, ex)
        assert contiguous(a) and contiguous(b)
        assert a[0][0] == b[0][0]  # same document
        assert flat(*b[0]) > flat(*a[-1])  # B comes after A (truncation may cut tokens in between)
        if len(ex) < 24:  # nothing was cut: B starts at the very next sentence
            untruncated += 1
            assert starts_sentence(a) and ends_sentence(a) and ends_sentence(b)
            assert b[0][1:] == (a[-1][1] + 1, 0)
    assert untruncated > 100


def test_not_next_b_comes_from_a_different_document(tok, pairs):
    not_next = [ex for ex in pairs if ex.next_sentence_label == 1]
    assert len(not_next) > 500
    for ex in not_next:
        a, b = segments(tok, ex)
        assert contiguous(a) and contiguous(b)
        assert a[0][0] != b[0][0]


def test_labels_are_balanced_50_50(tok):
    # Long documents (300 sentences), so that the one-sentence chunks at document ends, which can only be
    # NotNext, are rare (see the next test).
    docs = [[sentence(d, s % N_SENTENCES) for s in range(300)] for d in range(40)]
    pairs = make_pairs(docs, tok, max_len=32, generator=seeded(6))
    assert len(pairs) > 1500
    not_next = sum(ex.next_sentence_label for ex in pairs) / len(pairs)
    assert not_next == pytest.approx(0.5, abs=0.05)


@pytest.mark.parametrize("seed", range(5))
def test_balance_gives_exactly_50_50_even_on_short_documents(tok, seed):
    # Short documents make many one-sentence chunks, which can only be NotNext: Google's recipe comes out
    # skewed (more NotNext), so a model always saying NotNext would beat 50 %. balance=True drops surplus
    # pairs at random until the two labels are equally many.
    docs = [[sentence(d, s) for s in range(3)] for d in range(N_DOCS)]
    plain = make_pairs(docs, tok, max_len=24, generator=seeded(seed))
    balanced = make_pairs(docs, tok, max_len=24, generator=seeded(seed), balance=True)
    assert sum(ex.next_sentence_label for ex in plain) > len(plain) / 2          # the skew being fixed
    assert len(balanced) % 2 == 0 and sum(ex.next_sentence_label for ex in balanced) == len(balanced) // 2
    assert len(balanced) >= 2 * sum(1 - ex.next_sentence_label for ex in plain) - 0   # every IsNext kept
    key = lambda ex: (tuple(ex.input_ids), ex.next_sentence_label)  # noqa: E731
    assert {key(ex) for ex in balanced} <= {key(ex) for ex in plain}          # kept pairs are Google's, unchanged


def test_balance_refuses_when_one_label_cannot_occur(tok):
    docs = [[sentence(d, 0), sentence(d, 1)] for d in range(4)]
    with pytest.raises(ValueError, match="balance=True found no pair"):
        make_pairs(docs, tok, max_len=24, generator=seeded(0), nsp_prob=1.0, balance=True)


def test_a_one_sentence_chunk_can_only_be_not_next(tok):
    # max_len 6 leaves 3 tokens for A and B, so every 3-word sentence fills a chunk on its own and has no
    # continuation to offer: Google's code then always draws B from another document.
    docs = [[f"d{d}s0w0 d{d}s0w1 d{d}s0w2", f"d{d}s1w0 d{d}s1w1 d{d}s1w2"] for d in range(10)]
    pairs = make_pairs(docs, tok, max_len=6, generator=seeded(0), short_seq_prob=0.0)
    assert len(pairs) == 20 and all(ex.next_sentence_label == 1 for ex in pairs)


@pytest.mark.slow
def test_about_10_percent_of_pairs_are_short(tok):
    # With one-token sentences a chunk stops exactly at its target length, so a pair shorter than max_len
    # had a short target (or ran into a document's end, which is rare in documents this long).
    docs = [[f"d{d}s{s % N_SENTENCES}w0" for s in range(2000)] for d in range(20)]

    def short_share(p: float) -> tuple[float, list[int]]:
        pairs = make_pairs(docs, tok, max_len=32, generator=seeded(5), short_seq_prob=p)
        lengths = [len(ex) for ex in pairs]
        return sum(n < 32 for n in lengths) / len(lengths), lengths

    share, lengths = short_share(0.1)
    assert len(lengths) > 1500
    assert 0.07 < share < 0.15
    assert min(lengths) <= 8 and len(set(lengths)) > 15  # short targets spread over [2, max_len - 3]
    assert short_share(0.0)[0] < 0.03


def test_truncation_cuts_the_longer_segment_at_either_end(tok):
    pairs = []
    for seed in range(3):
        pairs += make_pairs(DOCUMENTS, tok, max_len=8, generator=seeded(seed))
    cuts = {"front": 0, "back": 0}
    for ex in pairs:
        assert len(ex) <= 8
        a, b = segments(tok, ex)
        assert contiguous(a) and contiguous(b)
        cut_a = (not starts_sentence(a), not ends_sentence(a))
        cut_b = (not starts_sentence(b), not ends_sentence(b))  # uncut, A and B begin and end with sentences
        cuts["front"] += cut_a[0] + cut_b[0]
        cuts["back"] += cut_a[1] + cut_b[1]
        # Only the longer segment loses tokens, so a cut segment ends no shorter than the other (B, cut on
        # ties, may end one shorter).
        if any(cut_a) and not any(cut_b):
            assert len(a) >= len(b)
        if any(cut_b) and not any(cut_a):
            assert len(b) >= len(a) - 1
    assert cuts["front"] > 200 and cuts["back"] > 200
    assert 0.4 < cuts["front"] / (cuts["front"] + cuts["back"]) < 0.6


def test_truncate_pair_is_googles_truncate_seq_pair():
    a, b = list(range(10)), [100, 101, 102]
    fronts = backs = 0
    for seed in range(50):
        ta, tb = _truncate_pair(list(a), list(b), 8, _Rng(seeded(seed)))
        assert tb == b and len(ta) == 5  # only the longer segment is cut, down to what fits
        assert ta == list(range(ta[0], ta[0] + 5))  # a contiguous piece of it
        fronts += ta[0] > 0
        backs += ta[-1] < 9
    assert fronts > 10 and backs > 10
    # Equal lengths: B is cut, as in Google's code (its test "len(a) > len(b)" picks B on a tie).
    ta, tb = _truncate_pair([1, 2, 3], [4, 5, 6], 5, _Rng(seeded(0)))
    assert len(ta) == 3 and len(tb) == 2


def test_same_seed_same_pairs_different_seed_different_pairs(tok):
    first = make_pairs(DOCUMENTS[:20], tok, max_len=24, generator=seeded(7))
    again = make_pairs(DOCUMENTS[:20], tok, max_len=24, generator=seeded(7))
    other = make_pairs(DOCUMENTS[:20], tok, max_len=24, generator=seeded(8))
    assert first == again
    assert first != other


def test_empty_sentences_and_documents_are_skipped(tok):
    messy = [[], *[["", *doc[:6], "   ", *doc[6:]] for doc in DOCUMENTS[:10]], [""]]
    assert make_pairs(messy, tok, 24, generator=seeded(9)) == make_pairs(DOCUMENTS[:10], tok, 24, generator=seeded(9))


def test_special_tokens_written_in_the_text_do_not_break_the_layout(tok):
    docs = [[f"d{d}s0w0 [SEP] d{d}s0w1", f"[CLS] d{d}s1w0 [MASK] [PAD]", f"d{d}s2w0 [UNK]"] for d in range(4)]
    for ex in make_pairs(docs, tok, max_len=64, generator=seeded(0)):
        assert ex.input_ids.count(tok.sep_id) == 2 and ex.input_ids.count(tok.cls_id) == 1
        assert tok.mask_id not in ex.input_ids and tok.pad_id not in ex.input_ids
        assert tok.unk_id in ex.input_ids


@pytest.mark.parametrize("documents, max_len, message", [
    ([], 24, "empty"),
    (DOCUMENTS[:3], 4, "at least 5"),
    (DOCUMENTS[:1], 24, "different document"),
    ([DOCUMENTS[0], [], [""]], 24, "different document"),
    ([[s] for s in DOCUMENTS[0]], 24, "2 or more sentences"),
    ("not a list of documents", 24, "list of documents"),
    ([DOCUMENTS[0], "a string, not a list of sentences"], 24, "list of sentence strings"),
])
def test_impossible_inputs_raise_value_errors_that_say_why(tok, documents, max_len, message):
    with pytest.raises(ValueError, match=message):
        make_pairs(documents, tok, max_len)
