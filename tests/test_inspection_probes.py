"""Saliency, head types and contextuality: the claims of the papers they come from, on real models."""

import re

import pytest
import torch

import bertlab
from bertlab.probe.contextuality import contextuality
from bertlab.probe.head_types import MEASURES, head_types
from bertlab.probe.saliency import saliency
from testkit import one_thread  # noqa: F401  (fixture)

DOOR = "She opened the [MASK] and walked in."
HELDOUT = "bertlab/assets/corpus/heldout/"


@pytest.fixture(scope="module")
def mini():
    return bertlab.load("bertlab-mini")


@pytest.fixture(scope="module")
def minilm():
    return bertlab.load("minilm")


def sentences(n=20):
    return [line.strip() for line in open(HELDOUT + "en_daily.txt") if line.strip()][:n]


# ---- saliency --------------------------------------------------------------------------------------

def test_integrated_gradients_add_up_to_the_change_in_log_probability(mini):
    model, tok = mini
    coarse, fine = (saliency(model, tok, DOOR, target="door", steps=s) for s in (16, 200))
    assert fine.target == "door" and fine.f_input > fine.f_baseline
    gap = fine.f_input - fine.f_baseline
    assert abs(float(fine.scores.sum()) - gap) == pytest.approx(fine.delta)
    assert fine.delta < 1e-3 * gap < coarse.delta          # completeness, better with more steps
    assert torch.allclose(coarse.scores, fine.scores, atol=0.05)


def test_the_pad_baseline_credits_words_only(mini):
    model, tok = mini
    s = saliency(model, tok, DOOR, steps=16)
    assert s.target == "door"                                # the default target is the top guess
    special = [i for i, t in enumerate(s.tokens) if t in ("[CLS]", "[SEP]", "[MASK]")]
    assert s.scores[special].abs().max() == 0
    assert s.tokens[int(s.scores.argmax())] in ("opened", "the", "walked")


def test_gradient_times_input_is_blind_to_a_tokens_scale_because_layernorm_follows_the_sum(mini):
    model, tok = mini
    blind = saliency(model, tok, DOOR, method="grad_x_input", baseline="zero")
    assert blind.scores.abs().max() < 1e-3                   # ∂f/∂e · e = 0 for a scale-invariant f
    seen = saliency(model, tok, DOOR, method="grad_x_input")  # measured from the [PAD] baseline instead
    assert seen.scores.abs().max() > 20 * blind.scores.abs().max() + 0.02
    grad = saliency(model, tok, DOOR, method="gradient")
    assert (grad.scores >= 0).all() and grad.delta == 0.0


def test_saliency_of_a_classifier_explains_its_label_logit(mini):
    model, tok = mini
    torch.manual_seed(0)
    clf = bertlab.BertForSequenceClassification(model.bert, num_labels=3)
    s = saliency(clf, tok, "The river bank was muddy.", target=2, steps=100)
    assert s.target == "2" and s.delta < 1e-2 * max(1e-3, abs(s.f_input - s.f_baseline)) + 1e-4


@pytest.mark.parametrize("text, kwargs, match", [
    ("No mask here.", {}, "exactly one \\[MASK\\]"),
    ("[MASK] and [MASK].", {}, "exactly one \\[MASK\\]"),
    (DOOR, {"target": "doorknobbery"}, "WordPieces"),
    (DOOR, {"method": "lime"}, "method must be one of"),
    (DOOR, {"steps": 0}, "steps must be a positive int"),
    (DOOR, {"baseline": "noise"}, "baseline must be"),
])
def test_bad_saliency_requests_say_what_to_do(mini, text, kwargs, match):
    model, tok = mini
    with pytest.raises(ValueError, match=match):
        saliency(model, tok, text, **kwargs)


def test_saliency_needs_a_head_it_can_explain(minilm):
    model, tok = minilm
    with pytest.raises(ValueError, match="masked-LM head"):
        saliency(model, tok, DOOR)


# ---- head types ------------------------------------------------------------------------------------

def test_a_head_forced_to_look_back_is_labelled_previous(mini):
    model, tok = mini

    def look_back(pattern, name):                             # (B, heads, T, T): every query on its left neighbour
        T = pattern.shape[-1]
        forced = torch.zeros_like(pattern)
        forced[..., 0, 0] = 1
        forced[..., torch.arange(1, T), torch.arange(T - 1)] = 1
        pattern = pattern.clone()
        pattern[:, 4] = forced[:, 4]
        return pattern

    with model.bert.hooks([("encoder.layer.2.attention.self.hook_pattern", look_back)]):
        ht = head_types(model, tok, sentences(5))
    assert ht.labels[2][4] == "previous" and ht.share["previous"][2, 4] > 0.9
    assert ht.labels[2][3] != "previous" or ht.share["previous"][2, 3] < 0.99


def test_shares_are_fractions_and_entropy_is_bounded_by_uniform(minilm):
    model, tok = minilm
    ht = head_types(model, tok, sentences())
    for m in MEASURES:
        assert ht.share[m].shape == (6, 12) and (ht.share[m] >= 0).all() and (ht.share[m] <= 1 + 1e-5).all()
    assert (ht.entropy <= ht.uniform_entropy + 1e-4).all()
    assert sum(ht.counts().values()) == 72


def test_minilm_heads_are_broad_at_the_bottom_and_rest_on_cls_in_the_middle(minilm):
    # Clark et al. found BERT-base's middle heads resting on [SEP]; MiniLM, distilled from a larger model and
    # tuned as a sentence encoder, rests its middle heads on [CLS] instead (measured on held-out sentences).
    model, tok = minilm
    ht = head_types(model, tok, sentences())
    assert ht.counts(0)["broad"] >= 8
    for layer in (1, 2, 3, 4):
        assert ht.counts(layer)["[CLS]"] >= 6
    assert ht.share["[SEP]"].max() < 0.3


# ---- contextuality ---------------------------------------------------------------------------------

def polysemous():
    files = ("en_daily", "en_outdoors", "en_town", "en_world")
    words = re.compile(r"\b(bank|spring|light|match|bat|key|ring|watch|park|rock)\b", re.I)
    return [line.strip() for f in files for line in open(HELDOUT + f + ".txt") if words.search(line)]


def test_upper_layers_are_more_contextual_than_the_embeddings(minilm):
    model, tok = minilm
    c = contextuality(model, tok, polysemous())
    assert c.layers == list(range(7)) and len(c.words) > 20
    assert c.self_similarity[-1] < c.self_similarity[0] - 0.2          # Ethayarajh: falls in upper layers
    assert all(0 <= b < s for b, s in zip(c.baseline_cosine, c.self_similarity))
    assert c.adjusted("self_similarity")[-1] < c.adjusted("self_similarity")[0]
    assert all(b < m for b, m in zip(c.baseline_mev, c.mev))


def test_a_word_in_identical_contexts_is_perfectly_self_similar(mini):
    model, tok = mini
    c = contextuality(model, tok, ["The dog barked at night.", "The dog barked at night."], layer=-1)
    assert c.layers == [6] and c.self_similarity[0] == pytest.approx(1.0, abs=1e-5)
    assert c.mev[0] == pytest.approx(1.0, abs=1e-5)


def test_contextuality_needs_a_repeated_word(mini):
    model, tok = mini
    with pytest.raises(ValueError, match="no word occurs in two"):
        contextuality(model, tok, ["Cats sleep.", "Dogs bark."])
    with pytest.raises(ValueError, match="layer"):
        contextuality(model, tok, ["A dog.", "A cat."], layer=9)
