"""`BertConfig(is_decoder=True)`: causal (left-to-right) attention, as HuggingFace's flag of the same name.

Claims: position i attends only to positions 0 … i, on both attention paths and together with padding; a later
token never changes an earlier position's output (and without the flag it does); the model equals
transformers' `BertModel(is_decoder=True)` on copied random weights; the flag survives config.json.
"""

from __future__ import annotations

import json

import pytest
import torch

from bertlab import Bert, BertConfig
from bertlab.model.attention import additive_mask
from testkit import ODD, make_batch, max_err, randomize_

ATOL = 1e-5


@pytest.fixture
def decoder() -> Bert:
    return randomize_(Bert(BertConfig(**ODD, is_decoder=True)))


# ---- the mask ------------------------------------------------------------------------------------

def test_causal_mask_hides_the_future_and_the_padding_at_once():
    x = torch.zeros(2, 4, 8)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    bias = additive_mask(mask, x, causal=True)                          # (B, 1, T, T)
    allowed = (bias == 0)[:, 0]
    assert allowed[0].tolist() == torch.ones(4, 4).tril().bool().tolist()
    assert allowed[1].tolist() == [[True, False, False, False], [True, True, False, False],
                                   [True, True, False, False], [True, True, False, False]]
    # a hidden key gets the dtype's minimum once: padded and in the future never adds up to -inf
    assert torch.isfinite(bias).all() and bias.min().item() == torch.finfo(x.dtype).min


def test_without_padding_the_causal_mask_is_one_triangle_for_the_batch():
    x = torch.zeros(3, 5, 8)
    assert additive_mask(None, x, causal=False) is None
    assert additive_mask(torch.ones(3, 5), x, causal=False) is None
    bias = additive_mask(torch.ones(3, 5), x, causal=True)
    assert bias.shape == (1, 1, 5, 5)
    assert torch.equal(bias[0, 0] == 0, torch.ones(5, 5).tril().bool())


# ---- the model -----------------------------------------------------------------------------------

def test_attention_weights_are_lower_triangular_and_ignore_padding(decoder):
    batch = make_batch()
    with torch.no_grad():
        out = decoder(**batch, output_attentions=True)
    T = batch["input_ids"].shape[1]
    future = torch.ones(T, T).triu(1).bool()                             # key j > query i
    pad = (batch["attention_mask"] == 0)[:, None, None, :]               # (B, 1, 1, T)
    for pattern in out.attentions:                                       # (B, heads, T, T)
        pattern = pattern.cpu()                                          # the model may run on a GPU
        assert pattern.masked_select(future.expand_as(pattern)).abs().max().item() == 0.0
        assert pattern.masked_select(pad.expand_as(pattern)).abs().max().item() == 0.0
        assert max_err(pattern.sum(-1), torch.ones(pattern.shape[:-1])) <= 1e-6
        assert pattern[..., 0, 0].eq(1.0).all()                          # the first token can only see itself


@pytest.mark.parametrize("explicit", [False, True], ids=["fast", "explicit"])
@pytest.mark.parametrize("is_decoder", [True, False], ids=["decoder", "encoder"])
def test_a_later_token_never_changes_an_earlier_position(explicit, is_decoder):
    """Change the token at t: with is_decoder every position < t is bit for bit the same, on both attention
    paths; without it (BERT's bidirectional attention) the earlier positions change too."""
    model = randomize_(Bert(BertConfig(**ODD, is_decoder=is_decoder)))
    batch = make_batch()
    for t in (1, 5, 10):
        changed = {k: v.clone() for k, v in batch.items()}
        changed["input_ids"][0, t] = 1 + changed["input_ids"][0, t] % 98  # another id, still in the vocabulary
        with torch.no_grad():
            a = model(**batch, output_attentions=explicit, output_hidden_states=True)
            b = model(**changed, output_attentions=explicit, output_hidden_states=True)
        for layer, (x, y) in enumerate(zip(a.hidden_states, b.hidden_states)):
            if is_decoder or layer == 0:  # the embeddings of earlier tokens never depend on token t
                assert torch.equal(x[0, :t], y[0, :t]), f"t={t}, hidden state {layer}"
            else:
                assert max_err(x[0, :t], y[0, :t]) > 1e-4, f"t={t}, hidden state {layer}"
            assert max_err(x[0, t:], y[0, t:]) > 1e-4                 # position t itself (and after) did change
            assert torch.equal(x[1:], y[1:])                             # other rows untouched


def test_fast_and_explicit_paths_agree_with_padding(decoder):
    batch = make_batch()
    with torch.no_grad():
        fast = decoder(**batch, output_hidden_states=True)
        explicit = decoder(**batch, output_hidden_states=True, output_attentions=True)
    for a, b in zip(fast.hidden_states, explicit.hidden_states):
        assert max_err(a, b) <= ATOL


def test_padding_changes_nothing_for_the_real_tokens(decoder):
    batch = make_batch()
    n = int(batch["attention_mask"][2].sum())
    alone = {k: v[2:3, :n] for k, v in batch.items()}
    for explicit in (False, True):
        with torch.no_grad():
            padded = decoder(**batch, output_attentions=explicit).last_hidden_state[2, :n]
            single = decoder(**alone, output_attentions=explicit).last_hidden_state[0]
        assert max_err(padded, single) <= ATOL


def test_scores_hook_sees_the_causal_mask(decoder):
    batch = make_batch()
    _, cache = decoder.run_with_cache(**batch, names="encoder.layer.0.attention.self.hook_scores")
    scores = cache["encoder.layer.0.attention.self.hook_scores"][0]     # (heads, T, T); row 0 has no padding
    future = torch.ones(scores.shape[-2:]).triu(1).bool()
    assert (scores[:, future] == torch.finfo(scores.dtype).min).all()
    assert (scores[:, ~future] > -1e3).all()


# ---- parity with transformers --------------------------------------------------------------------

@pytest.mark.parametrize("hf_attn", ["eager", "sdpa"])
@pytest.mark.parametrize("explicit", [True, False], ids=["explicit", "fast"])
def test_decoder_matches_transformers_is_decoder(decoder, hf_twin, hf_attn, explicit):
    hf = hf_twin(decoder, attn=hf_attn)
    assert hf.config.is_decoder  # the flag travels in config.to_dict(), under HuggingFace's name
    for batch in (make_batch(), make_batch(lengths=(6, 11, 2), seed=7)):
        with torch.no_grad():
            ours = decoder(**batch, output_hidden_states=True, output_attentions=explicit)
            theirs = hf(**batch, output_hidden_states=True, output_attentions=hf_attn == "eager", use_cache=False)
        assert len(ours.hidden_states) == len(theirs.hidden_states) == ODD["num_hidden_layers"] + 1
        for i, (a, b) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
            assert max_err(a, b) <= ATOL, f"hidden state {i}"
        assert max_err(ours.pooler_output, theirs.pooler_output) <= ATOL
        if explicit and hf_attn == "eager":
            for i, (a, b) in enumerate(zip(ours.attentions, theirs.attentions)):
                assert max_err(a, b) <= ATOL, f"attentions {i}"


def test_an_encoder_differs_from_transformers_decoder(decoder, hf_twin):
    """The parity above is not vacuous: the same weights without is_decoder give other outputs."""
    hf = hf_twin(decoder, attn="eager")
    encoder = Bert(BertConfig(**ODD)).eval()
    encoder.load_state_dict(decoder.state_dict())
    batch = make_batch()
    with torch.no_grad():
        assert max_err(encoder(**batch).last_hidden_state, hf(**batch, use_cache=False).last_hidden_state) > 1e-3


# ---- the config ----------------------------------------------------------------------------------

def test_is_decoder_defaults_to_false_and_is_a_preset_override():
    assert BertConfig().is_decoder is False and BertConfig.preset("tiny").is_decoder is False
    cfg = BertConfig.preset("tiny", is_decoder=True)
    assert cfg.is_decoder is True and cfg.hidden_size == 128


def test_is_decoder_round_trips_through_config_json(tmp_path, transformers):
    cfg = BertConfig(**ODD, is_decoder=True)
    cfg.save(tmp_path / "config.json")
    assert json.loads((tmp_path / "config.json").read_text())["is_decoder"] is True
    assert BertConfig.from_file(tmp_path / "config.json") == cfg
    assert transformers.BertConfig.from_pretrained(tmp_path).is_decoder is True   # and transformers reads it so
    assert BertConfig.from_dict(transformers.BertConfig(**ODD, is_decoder=True).to_dict()).is_decoder is True


@pytest.mark.parametrize("bad", ["true", 1, 0.0])
def test_is_decoder_must_be_a_bool(bad):
    with pytest.raises(ValueError, match=r"is_decoder must be true or false"):
        BertConfig(is_decoder=bad)
