"""Masked-LM corruption does what the paper says: 15 % chosen, then 80 % [MASK] / 10 % random / 10 % kept.

Rates are measured on about 200k candidate tokens with a fixed seed. With n = 200k the standard error of
a 15 % rate is 0.08 pt, and of an 80 % share of the ~30k chosen tokens 0.23 pt, so the tolerances below
(0.5 pt and 1 pt) are more than four standard errors wide yet far tighter than any real bug.
"""

from __future__ import annotations

import functools

import pytest
import torch

from bertlab import Tokenizer
from bertlab.model.heads import IGNORE
from bertlab.pretraining import mask_tokens


@pytest.fixture(scope="module")
def tok(minilm_dir) -> Tokenizer:
    return Tokenizer.from_file(minilm_dir)


def never_chosen(tok) -> torch.Tensor:
    return torch.tensor([tok.cls_id, tok.sep_id, tok.pad_id, tok.mask_id])


@functools.lru_cache(maxsize=None)
def vocab_ids(tok) -> tuple[torch.Tensor, torch.Tensor]:
    """(word-start ids, '##' continuation ids), both without special tokens."""
    starts, continuations = [], []
    for token, i in tok.get_vocab().items():
        if i in tok.special_ids:
            continue
        (continuations if token.startswith("##") else starts).append(i)
    return torch.tensor(sorted(starts)), torch.tensor(sorted(continuations))


@functools.lru_cache(maxsize=None)
def make_ids(tok, rows: int = 1000, T: int = 256, seed: int = 0) -> torch.Tensor:
    """Random ids shaped like real batches: [CLS] A [SEP] B [SEP], right padding, a few [UNK] and [MASK]."""
    g = torch.Generator().manual_seed(seed)
    starts, _ = vocab_ids(tok)
    ids = starts[torch.randint(len(starts), (rows, T), generator=g)]
    lengths = torch.randint(T // 2, T + 1, (rows,), generator=g)
    for r, n in enumerate(lengths.tolist()):
        ids[r, 0] = tok.cls_id
        ids[r, n // 2] = tok.sep_id
        ids[r, n - 1] = tok.sep_id
        ids[r, n:] = tok.pad_id
    sprinkle = torch.rand(rows, T, generator=g)
    real = ~torch.isin(ids, never_chosen(tok))
    ids[real & (sprinkle < 0.01)] = tok.unk_id
    ids[real & (sprinkle > 0.995)] = tok.mask_id
    return ids


@functools.lru_cache(maxsize=None)
def make_words(tok, rows: int = 800, words: int = 120, seed: int = 0) -> torch.Tensor:
    """Rows of [CLS] w w ... [SEP] where each word is a start piece and 0-2 '##' pieces."""
    g = torch.Generator().manual_seed(seed)
    starts, continuations = vocab_ids(tok)
    out = []
    for _ in range(rows):
        lengths = 1 + torch.randint(0, 3, (words,), generator=g)  # pieces per word
        row = continuations[torch.randint(len(continuations), (int(lengths.sum()),), generator=g)]
        row[lengths.cumsum(0) - lengths] = starts[torch.randint(len(starts), (words,), generator=g)]
        out.append([tok.cls_id] + row.tolist() + [tok.sep_id])
    T = max(map(len, out))
    return torch.tensor([r + [tok.pad_id] * (T - len(r)) for r in out])


def words_of(tok, row: list[int]) -> list[list[int]]:
    """The positions of each word in a row: a non-special token and the '##' pieces right after it."""
    words: list[list[int]] = []
    specials = set(never_chosen(tok).tolist())
    continuation = set(vocab_ids(tok)[1].tolist())
    for t, i in enumerate(row):
        if i in specials:
            continue
        if i in continuation and words and words[-1][-1] == t - 1:
            words[-1].append(t)
        else:
            words.append([t])
    return words


def budget(n: int, p: float = 0.15, max_predictions: int = 20) -> int:
    """Google's num_to_predict, on a row's n candidate tokens."""
    return min(max_predictions, max(1, round(n * p))) if n else 0


# ---- dynamic mode: the paper's rates ------------------------------------------------------------------------

def test_dynamic_mode_chooses_15_percent_of_candidate_tokens(tok):
    ids = make_ids(tok)
    _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(1))
    candidates = ~torch.isin(ids, never_chosen(tok))
    assert candidates.sum() > 100_000
    rate = ((labels != IGNORE).sum() / candidates.sum()).item()
    assert rate == pytest.approx(0.15, abs=0.005)


def test_chosen_tokens_become_80_mask_10_random_10_unchanged(tok):
    ids = make_ids(tok)
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(2))
    chosen = labels != IGNORE
    before, after = ids[chosen], inputs[chosen]
    n = chosen.sum().item()
    masked = (after == tok.mask_id).sum().item() / n
    random = ((after != tok.mask_id) & (after != before)).sum().item() / n
    kept = (after == before).sum().item() / n
    # A random draw equals the original one time in len(pool): those count as "kept".
    pool = tok.vocab_size - len(tok.special_ids)
    assert masked == pytest.approx(0.8, abs=0.01)
    assert random == pytest.approx(0.1 * (1 - 1 / pool), abs=0.01)
    assert kept == pytest.approx(0.1 + 0.1 / pool, abs=0.01)


# The paper's Appendix C.2 (Table 8), columns MASK / SAME / RND, as replace=(mask, random, keep).
PAPER_STRATEGIES = {"80/10/10": (0.8, 0.1, 0.1), "100/0/0": (1.0, 0.0, 0.0), "80/0/20": (0.8, 0.2, 0.0),
                    "80/20/0": (0.8, 0.0, 0.2), "0/20/80": (0.0, 0.8, 0.2), "0/0/100": (0.0, 1.0, 0.0)}


@pytest.mark.parametrize("name", PAPER_STRATEGIES)
def test_every_strategy_of_the_papers_appendix_c2_gives_its_split(tok, name):
    mask, rnd, keep = PAPER_STRATEGIES[name]
    ids = make_ids(tok)
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(2), replace=(mask, rnd, keep))
    chosen = labels != IGNORE
    before, after = ids[chosen], inputs[chosen]
    n = chosen.sum().item()
    pool = tok.vocab_size - len(tok.special_ids)
    assert (after == tok.mask_id).sum().item() / n == pytest.approx(mask, abs=0.01)
    assert ((after != tok.mask_id) & (after != before)).sum().item() / n == pytest.approx(rnd * (1 - 1 / pool), abs=0.01)
    assert (after == before).sum().item() / n == pytest.approx(keep + rnd / pool, abs=0.01)
    assert ((inputs != ids) <= chosen).all()


def test_the_split_changes_only_what_is_written_not_which_tokens_are_chosen(tok):
    # The same generator state hides the same positions under every strategy: an ablation of the split
    # compares corruptions of the very same targets.
    ids = make_ids(tok, rows=100)
    _, default = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(3))
    for split in PAPER_STRATEGIES.values():
        _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(3), replace=split)
        assert torch.equal(labels, default)


def test_the_default_split_is_the_papers_80_10_10(tok):
    ids = make_ids(tok, rows=50)
    a = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(5))
    b = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(5), replace=(0.8, 0.1, 0.1))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("replace", [(0.8, 0.1), (0.8, 0.1, 0.2), (1.2, -0.1, -0.1), (0.5, 0.5, float("nan")),
                                     "80/10/10", (True, False, False)])
def test_a_bad_split_raises_value_error_that_names_the_papers(tok, replace):
    with pytest.raises(ValueError, match=r"replace must be .*\(0\.8, 0\.1, 0\.1\)"):
        mask_tokens(make_ids(tok, rows=2), tok, replace=replace)


def test_special_tokens_are_never_chosen_and_never_inserted(tok):
    ids = make_ids(tok)
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(3))
    special = torch.isin(ids, never_chosen(tok))
    assert (labels[special] == IGNORE).all()
    assert torch.equal(inputs[special], ids[special])
    random = (inputs != ids) & (inputs != tok.mask_id)
    assert random.sum() > 1000
    assert not torch.isin(inputs[random], torch.tensor(sorted(tok.special_ids))).any()
    # [UNK] is an ordinary token to predict, as in Google's code.
    assert (labels == tok.unk_id).sum() > 0


def test_random_replacements_are_uniform_over_the_non_special_vocabulary(odd_tokenizer):
    # A 99-token vocabulary, so that drawing from all of it (Google's way) would insert a special token
    # about one time in 20, and every ordinary id shows up many times.
    tok = odd_tokenizer
    g = torch.Generator().manual_seed(14)
    ids = torch.randint(5, tok.vocab_size, (500, 200), generator=g)
    inputs, labels = mask_tokens(ids, tok, generator=g)
    random = (labels != IGNORE) & (inputs != ids) & (inputs != tok.mask_id)
    counts = torch.bincount(inputs[random], minlength=tok.vocab_size)
    assert counts[sorted(tok.special_ids)].sum() == 0
    ordinary = counts[[i for i in range(tok.vocab_size) if i not in tok.special_ids]]
    assert ordinary.min() > 0.5 * ordinary.float().mean()


def test_labels_hold_the_original_id_exactly_where_chosen(tok):
    ids = make_ids(tok)
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(4))
    chosen = labels != IGNORE
    assert torch.equal(labels[chosen], ids[chosen])
    assert ((inputs != ids) <= chosen).all()  # every changed token is a chosen one
    assert inputs.dtype == labels.dtype == torch.long and inputs.shape == labels.shape == ids.shape


def test_input_is_not_modified(tok):
    ids = make_ids(tok, rows=50)
    copy = ids.clone()
    inputs, _ = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(5))
    assert torch.equal(ids, copy)
    assert not torch.equal(inputs, ids)


def test_a_single_sequence_keeps_its_shape(tok):
    ids = make_ids(tok, rows=1)[0]
    inputs, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(6), mode="bert")
    assert inputs.shape == labels.shape == ids.shape == (256,)
    assert (labels != IGNORE).sum() == budget(int((~torch.isin(ids, never_chosen(tok))).sum()))


def test_same_seed_same_masks_different_seed_different_masks(tok):
    ids = make_ids(tok, rows=64)
    for kwargs in ({}, {"mode": "bert"}, {"whole_word": True}):
        a = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(7), **kwargs)
        b = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(7), **kwargs)
        c = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(8), **kwargs)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert not torch.equal(a[1], c[1])


def test_global_rng_is_used_without_a_generator(tok):
    ids = make_ids(tok, rows=16)
    torch.manual_seed(9)
    a = mask_tokens(ids, tok)
    torch.manual_seed(9)
    b = mask_tokens(ids, tok)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


# ---- bert mode: Google's fixed count ---------------------------------------------------------------------

@pytest.mark.parametrize("max_predictions", [20, 80])
def test_bert_mode_chooses_exactly_min_max_predictions_max_1_round_p_n(tok, max_predictions):
    # Rows with 0, 1, 3 (round(0.45) = 0, so the floor gives 1), 10 (round(1.5) = 2), 50, 133 and 250
    # candidates (38: above the cap of 20).
    T = 256
    ids = torch.full((7, T), tok.pad_id)
    ids[:, 0] = tok.cls_id
    for r, n in enumerate([0, 1, 3, 10, 50, 133, 250]):
        ids[r, 1:n + 1] = torch.arange(2000, 2000 + n)
        ids[r, n + 1] = tok.sep_id
    for seed in range(20):
        _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(seed), mode="bert",
                                max_predictions=max_predictions)
        counts = (labels != IGNORE).sum(dim=1).tolist()
        assert counts == [budget(n, max_predictions=max_predictions) for n in [0, 1, 3, 10, 50, 133, 250]]


def test_bert_mode_chooses_uniformly_among_candidates(tok):
    # One row of 100 candidates, 15 chosen per draw: each position should be chosen 15 % of the time.
    ids = torch.tensor([[tok.cls_id] + list(range(2000, 2100)) + [tok.sep_id]] * 400)
    _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(10), mode="bert")
    per_position = (labels[:, 1:-1] != IGNORE).float().mean(dim=0)  # (100,)
    assert per_position.min() > 0.08 and per_position.max() < 0.23
    assert (labels[:, [0, -1]] == IGNORE).all()


# ---- whole-word masking ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["dynamic", "bert"])
def test_whole_word_masking_chooses_all_pieces_of_a_word_or_none(tok, mode):
    ids = make_words(tok, rows=300)
    _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(11), mode=mode, whole_word=True)
    chosen = (labels != IGNORE).tolist()
    multi_piece_chosen = 0
    for r, row in enumerate(ids.tolist()):
        for word in words_of(tok, row):
            flags = {chosen[r][t] for t in word}
            assert len(flags) == 1, (r, word, flags)
            multi_piece_chosen += len(word) > 1 and chosen[r][word[0]]
    assert multi_piece_chosen > 100  # the property was tested on real multi-piece words


def test_whole_word_dynamic_mode_chooses_15_percent_of_words(tok):
    ids = make_words(tok)
    _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(12), whole_word=True)
    chosen = (labels != IGNORE).tolist()
    n_words = n_chosen = 0
    for r, row in enumerate(ids.tolist()):
        for word in words_of(tok, row):
            n_words += 1
            n_chosen += chosen[r][word[0]]
    assert n_words > 90_000
    assert n_chosen / n_words == pytest.approx(0.15, abs=0.005)


def test_whole_word_bert_mode_fills_the_budget_without_overshooting(tok):
    # Google skips a word that would overshoot num_to_predict, so a row ends within one word of its budget.
    ids = make_words(tok, rows=300, words=40)
    _, labels = mask_tokens(ids, tok, generator=torch.Generator().manual_seed(13), mode="bert", whole_word=True)
    for r, row in enumerate(ids.tolist()):
        words = words_of(tok, row)
        want = budget(sum(map(len, words)))
        got = int((labels[r] != IGNORE).sum())
        longest = max(map(len, words))
        assert want - longest < got <= want


# ---- arguments -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"probability": 0.0}, {"probability": 1.0}, {"probability": 1.5}, {"probability": -0.1},
    {"mode": "roberta"}, {"max_predictions": 0},
])
def test_bad_arguments_raise_value_error(tok, kwargs):
    with pytest.raises(ValueError):
        mask_tokens(make_ids(tok, rows=2), tok, **kwargs)


@pytest.mark.parametrize("ids", [torch.rand(2, 8), torch.ones(2, 8, dtype=torch.bool),
                                 torch.ones(2, 3, 4, dtype=torch.long), [[101, 2000, 102]]])
def test_bad_input_ids_raise_value_error(tok, ids):
    with pytest.raises(ValueError, match="input_ids"):
        mask_tokens(ids, tok)
