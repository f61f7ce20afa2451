"""Head types (Clark et al. 2019, "What Does BERT Look At?"): forced patterns get the label they must, the
measures are fractions and entropies, and what MiniLM's heads actually do on held-out sentences."""

import pytest
import torch

from bertlab.probe.head_types import LABELS, MEASURES, head_types
from testkit import bundled, one_thread  # noqa: F401  (fixture)

HELDOUT = "bertlab/assets/corpus/heldout/"


@pytest.fixture(scope="module")
def tiny():
    return bundled("bertlab-tiny")


def sentences(n=20, files=("en_daily",)):
    """The first n held-out sentences, as many from each file."""
    return [line for f in files for line in [x.strip() for x in open(HELDOUT + f + ".txt") if x.strip()]
            [:n // len(files)]]


def shifted(T, offset):
    """(T, T): every query i on key i + offset (clipped to the sequence)."""
    A = torch.zeros(T, T)
    A[torch.arange(T), (torch.arange(T) + offset).clamp(0, T - 1)] = 1
    return A


# each forced pattern, given T: the whole row on one key, or spread evenly. Texts end in "." then [SEP].
PATTERNS = {
    "previous": lambda T: shifted(T, -1),
    "next": lambda T: shifted(T, +1),
    "self": lambda T: shifted(T, 0),
    "[CLS]": lambda T: torch.zeros(T, T).index_fill_(1, torch.tensor([0]), 1.0),
    "[SEP]": lambda T: torch.zeros(T, T).index_fill_(1, torch.tensor([T - 1]), 1.0),
    "punctuation": lambda T: torch.zeros(T, T).index_fill_(1, torch.tensor([T - 2]), 1.0),
    "broad": lambda T: torch.full((T, T), 1.0 / T),
    "mixed": lambda T: torch.roll(torch.eye(T), 3, dims=1),    # two keys ahead of "next": no pattern of ours
}


@pytest.mark.parametrize("label", list(PATTERNS))
def test_a_head_forced_into_a_pattern_gets_its_label(tiny, label):
    model, tok = tiny
    texts = sentences(6)
    assert all(tok(t).tokens[-2] == "." and len(tok(t).tokens) >= 10 for t in texts)

    def force(pattern, name):                                 # (B, heads, T, T): head 1 follows the pattern
        pattern = pattern.clone()
        pattern[:, 1] = PATTERNS[label](pattern.shape[-1]).to(pattern)
        return pattern

    with model.bert.hooks([("encoder.layer.1.attention.self.hook_pattern", force)]):
        ht = head_types(model, tok, texts)
    assert ht.labels[1][1] == label
    if label in MEASURES:
        assert ht.share[label][1, 1] > 0.9
    if label == "broad":
        assert ht.entropy[1, 1] == pytest.approx(float(ht.uniform_entropy[1, 1]), rel=1e-5)
    if label == "mixed":
        assert ht.entropy[1, 1] < 1e-6 and max(float(ht.share[m][1, 1]) for m in MEASURES) < 0.5


def test_shares_are_fractions_and_entropy_is_bounded_by_uniform(tiny):
    model, tok = tiny
    ht = head_types(model, tok, sentences(5) + [("The river rose.", "It had rained all week.")])
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    for m in MEASURES:
        assert ht.share[m].shape == (L, H) and (ht.share[m] >= 0).all() and (ht.share[m] <= 1 + 1e-5).all()
    assert (ht.entropy >= 0).all() and (ht.entropy <= ht.uniform_entropy + 1e-4).all()
    assert ht.n_texts == 6 and ht.n_tokens == sum(len(tok(t).tokens) for t in sentences(5)) + len(
        tok("The river rose.", "It had rained all week.").tokens)
    assert all(label in LABELS for row in ht.labels for label in row)
    assert sum(ht.counts().values()) == L * H
    per_layer = ht.counts_per_layer()
    assert [sum(c.values()) for c in per_layer] == [H] * L and list(per_layer[0]) == list(LABELS)
    assert all(per_layer[l][k] == ht.counts(l)[k] for l in range(L) for k in LABELS)


@pytest.mark.parametrize("texts, match", [
    ("One sentence.", "got a str"),
    ([], "empty"),
    (["Fine.", ""], r"texts\[1\]"),
    ([("A.", "B.", "C.")], "a pair must be"),
])
def test_bad_texts_say_what_to_do(tiny, texts, match):
    model, tok = tiny
    with pytest.raises(ValueError, match=match):
        head_types(model, tok, texts)


def test_minilm_heads_are_broad_at_the_bottom_and_rest_on_cls_not_sep_in_the_middle(minilm):
    # Clark et al. found BERT-base's early heads broad or on the previous / next token (true here too), and its
    # middle heads resting on [SEP] (not here: MiniLM, distilled and tuned as a sentence encoder, rests its
    # middle heads on [CLS], and no head gives [SEP] even a third of its attention).
    model, tok = minilm
    ht = head_types(model, tok, sentences(20, ("en_daily", "en_town")))
    assert ht.counts(0)["broad"] >= 8
    assert ht.share["previous"][0].max() > 0.8 and ht.share["next"][:2].max() > 0.5
    assert sum(ht.counts(layer)["[CLS]"] for layer in (1, 2, 3, 4)) >= 24
    assert (ht.share["[CLS]"][1:5].mean(-1) > 0.45).all()
    assert ht.share["[SEP]"].max() < 0.3 and ht.counts()["[SEP]"] == 0
