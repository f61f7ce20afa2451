"""The neuron view's data: a head's weights are softmax(q·k / √Dh), and q × k per dimension sums to q·k."""

import pytest
import torch

from bertlab.probe.neurons import attention_neurons
from testkit import bundled

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def minilm():
    return bundled("minilm")


def test_the_weights_are_the_models_attention_and_come_from_q_dot_k(minilm):
    model, tok = minilm
    n = attention_neurons(model, tok, TEXT, layer=2, head=3)
    T, Dh = len(n.tokens), model.config.hidden_size // model.config.num_attention_heads
    assert n.queries.shape == n.keys.shape == (T, Dh) and n.weights.shape == (T, T)
    with torch.no_grad():
        want = model(**tok(TEXT).to_tensors(), output_attentions=True).attentions[2][0, 3]
    assert torch.allclose(n.weights, want, atol=1e-6)
    assert torch.allclose(n.dots, n.queries @ n.keys.T)
    assert torch.allclose(n.scores, n.dots * Dh ** -0.5, atol=1e-5)        # no padding: the scaled dot product
    assert torch.allclose(n.weights, n.scores.softmax(-1), atol=1e-6)
    assert torch.allclose(n.products(3).sum(-1), n.dots[3], atol=1e-4)      # q × k, summed over dimensions


def test_a_pair_and_negative_indices(minilm):
    model, tok = minilm
    n = attention_neurons(model, tok, "The cat sat.", layer=-1, head=-1, text_pair="It was tired.")
    assert (n.layer, n.head) == (5, 11)
    assert n.tokens.count("[SEP]") == 2


@pytest.mark.parametrize("kwargs, match", [
    (dict(layer=6, head=0), "layer must be an int in 0 … 5"),
    (dict(layer=0, head=12), "head must be an int in 0 … 11"),
    (dict(layer="2", head=0), "layer must be"),
    (dict(layer=0, head=0, text=""), "non-empty"),
    (dict(layer=0, head=0, text_pair=""), "text_pair"),
])
def test_bad_input_says_what_is_allowed(minilm, kwargs, match):
    model, tok = minilm
    kwargs = {"text": TEXT, **kwargs}
    with pytest.raises(ValueError, match=match):
        attention_neurons(model, tok, **kwargs)
