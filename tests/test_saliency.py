"""Saliency: integrated gradients' completeness (Sundararajan et al. 2017), what the [PAD] baseline credits,
why grad × input is blind in BERT (LayerNorm), and requests that cannot be answered."""

import math

import pytest
import torch

import bertlab
from bertlab.probe import fill_mask
from bertlab.probe.saliency import saliency
from testkit import bundled, one_thread  # noqa: F401  (fixture)

DOOR = "She opened the [MASK] and walked in."


@pytest.fixture(scope="module")
def mini():
    return bundled("bertlab-mini")


@pytest.fixture(scope="module")
def tiny():
    return bundled("bertlab-tiny")


@pytest.mark.slow
def test_integrated_gradients_add_up_to_the_change_in_log_probability(mini):
    # completeness: Σ scores = f(x) − f(baseline), up to a quadrature error that shrinks with more steps
    model, tok = mini
    coarse, fine = (saliency(model, tok, DOOR, target="door", steps=s) for s in (16, 200))
    gap = fine.f_input - fine.f_baseline
    assert fine.target == "door" and gap > 1                  # the words make "door" much more likely
    assert coarse.f_input == pytest.approx(fine.f_input, abs=1e-4)
    assert abs(float(fine.scores.sum()) - gap) == pytest.approx(fine.delta, abs=1e-6)
    assert fine.delta < 1e-3 * gap and fine.delta < coarse.delta    # completeness, better with more steps
    assert torch.allclose(coarse.scores, fine.scores, atol=0.05)
    top = fill_mask(model, tok, DOOR, top_k=1).guesses[0][0]                  # f is log P(target at the mask)
    assert top.token == "door" and fine.f_input == pytest.approx(math.log(top.probability), abs=1e-4)


def test_the_default_target_is_the_top_guess_and_the_pad_baseline_credits_words_only(tiny):
    model, tok = tiny
    s = saliency(model, tok, DOOR, steps=8)
    assert s.target == fill_mask(model, tok, DOOR, top_k=1).guesses[0][0].token
    assert s.tokens == tok(DOOR).tokens and s.scores.shape == (len(s.tokens),)
    assert s.mask_position == s.tokens.index("[MASK]") and s.method == "integrated_gradients"
    special = [i for i, t in enumerate(s.tokens) if t in ("[CLS]", "[SEP]", "[MASK]")]
    words = [i for i in range(len(s.tokens)) if i not in special]
    assert s.scores[special].abs().max() == 0                # x − b is zero there: nothing to credit
    assert s.scores[words].abs().min() > 0


def test_gradient_is_the_l2_norm_of_the_gradient_at_the_embedding_sum(tiny):
    # an independent route: the whole BertForPreTraining forward, the sum replaced by a leaf through a hook
    model, tok = tiny
    enc = tok(DOOR)
    pos, tid = enc.tokens.index("[MASK]"), tok.token_to_id("door")
    _, cache = model.bert.run_with_cache(**enc, names="embeddings.hook_sum")
    e = cache["embeddings.hook_sum"].clone().requires_grad_(True)
    with model.hooks([("bert.embeddings.hook_sum", lambda a, _: e)]):
        logp = model(**enc).prediction_logits[0, pos].log_softmax(-1)[tid]
    (grad,) = torch.autograd.grad(logp, e)
    g = saliency(model, tok, DOOR, target="door", method="gradient")
    assert torch.allclose(g.scores, grad[0].norm(dim=-1), atol=1e-5)
    assert g.delta == 0.0 and g.f_input == pytest.approx(float(logp.detach()), abs=1e-5)


def test_gradient_times_input_is_blind_to_a_tokens_scale_because_layernorm_follows_the_sum(mini):
    model, tok = mini
    blind = saliency(model, tok, DOOR, method="grad_x_input", baseline="zero")     # the textbook ∂f/∂e · e
    assert blind.scores.abs().max() < 1e-3                   # = 0 for a scale-invariant f (Euler)
    seen = saliency(model, tok, DOOR, method="grad_x_input")                        # ∂f/∂e · (e − e_[PAD])
    assert seen.scores.abs().max() > 20 * blind.scores.abs().max() + 0.02


def test_the_zero_baseline_is_degenerate_for_integrated_gradients(tiny):
    # LayerNorm(αx) = LayerNorm(x) for every α > 0: f is flat along the path, every score is 0, and all of
    # f(x) − f(0) is a jump at α = 0 that no number of steps sees; the [PAD] baseline has no such jump
    model, tok = tiny
    pad, zero = (saliency(model, tok, DOOR, target="door", steps=16, baseline=b) for b in ("pad", "zero"))
    assert zero.baseline == "zero" and zero.scores.abs().max() < 1e-3
    assert zero.delta == pytest.approx(abs(zero.f_input - zero.f_baseline), abs=1e-2) and zero.delta > 0.1
    assert pad.delta < 0.1 * zero.delta


def test_saliency_of_a_classifier_explains_its_label_logit(mini):
    model, tok = mini
    torch.manual_seed(0)
    clf = bertlab.BertForSequenceClassification(model.bert, num_labels=3).eval()
    text = "The river bank was muddy."
    with torch.no_grad():
        logits = clf(**tok(text)).logits[0]
    s = saliency(clf, tok, text, target=2, steps=100)
    assert s.target == "2" and s.mask_position is None and s.f_input == pytest.approx(float(logits[2]), abs=1e-4)
    assert s.delta < 1e-2 * max(1e-3, abs(s.f_input - s.f_baseline)) + 1e-4
    assert saliency(clf, tok, text, method="gradient").target == str(int(logits.argmax()))


def test_saliency_leaves_the_model_as_it_found_it(tiny):
    model, tok = bundled("bertlab-tiny")                     # a private copy: this test changes its mode
    model.train()
    with torch.no_grad():                                    # a caller's no_grad does not stop the gradients
        s = saliency(model, tok, DOOR, steps=4)
    assert s.scores.abs().sum() > 0
    assert all(m.training for m in model.modules())          # modes restored
    assert all(p.grad is None and p.requires_grad for p in model.parameters())   # no lasting gradients
    assert all(not m._forward_hooks for m in model.modules())


@pytest.mark.parametrize("text, kwargs, match", [
    ("No mask here.", {}, r"exactly one \[MASK\].*found 0"),
    ("[MASK] and [MASK].", {}, r"exactly one \[MASK\].*found 2"),
    (DOOR, {"target": "doorknobbery"}, "WordPieces"),
    (DOOR, {"target": 3}, "must be a word"),
    (DOOR, {"method": "lime"}, "method must be one of"),
    (DOOR, {"steps": 0}, "steps must be a positive int"),
    (DOOR, {"baseline": "noise"}, "baseline must be"),
    ("", {}, "non-empty str"),
    ("word " * 600 + "[MASK]", {}, "shorten the text"),
])
def test_bad_saliency_requests_say_what_to_do(tiny, text, kwargs, match):
    model, tok = tiny
    with pytest.raises(ValueError, match=match):
        saliency(model, tok, text, **kwargs)


def test_saliency_needs_a_head_it_can_explain(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="masked-LM head"):
        saliency(model.bert, tok, DOOR)                      # a bare encoder, like MiniLM: nothing to explain
    clf = bertlab.BertForSequenceClassification(model.bert, num_labels=2)
    with pytest.raises(ValueError, match="label index 0 … 1"):
        saliency(clf, tok, "A text.", target=5)


@pytest.mark.slow
def test_integrated_gradients_kept_for_one_text_answers_every_target_as_a_fresh_run(mini):
    # the forward pass along the path is kept and only the backward pass runs per target: each answer must be
    # the one a fresh call gives, in any order, and the model must come out as it went in (no hooks, eval)
    from bertlab.probe.saliency import IntegratedGradients
    from testkit import no_hooks_anywhere
    model, tok = mini
    ig = IntegratedGradients(model, tok, DOOR, steps=16)
    for target in ("door", "window", None, "door"):
        kept, fresh = ig(target), saliency(model, tok, DOOR, target=target, steps=16)
        assert kept.target == fresh.target
        assert torch.allclose(kept.scores, fresh.scores, atol=1e-5) and kept.delta == pytest.approx(fresh.delta, abs=1e-5)
    many = IntegratedGradients(model, tok, DOOR, steps=40)               # more than CHUNK: nothing kept, chunked
    assert many._kept is None
    assert torch.allclose(many("door").scores, saliency(model, tok, DOOR, target="door", steps=40).scores, atol=1e-5)
    assert no_hooks_anywhere(model) and not any(p.grad is not None for p in model.parameters())
    with pytest.raises(ValueError, match="WordPieces"):
        ig("doorknobs galore")
