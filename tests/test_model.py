"""Bert: shapes on the odd config, component-by-component parity with transformers, both attention paths,
every bad input, devices and bf16.

Parity tests copy seeded random weights into transformers' model (see conftest.hf_twin) and compare in eval
mode. Tolerances are for float32 on the CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bertlab import Bert, BertConfig, BertForPreTraining
from bertlab.model.attention import additive_mask
from bertlab.utils import default_device
from testkit import ODD, make_batch, max_err, randomize_

ATOL = 1e-5


# ---- shapes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("layers", [2, 5])
def test_output_shapes_on_the_odd_config(layers, batch):
    cfg = BertConfig(**{**ODD, "num_hidden_layers": layers})
    model = randomize_(Bert(cfg))
    out = model(**batch, output_attentions=True, output_hidden_states=True)
    B, T, H = 3, 11, 32
    assert out.last_hidden_state.shape == (B, T, H)
    assert out.pooler_output.shape == (B, H)
    assert len(out.hidden_states) == layers + 1
    assert all(h.shape == (B, T, H) for h in out.hidden_states)
    assert len(out.attentions) == layers
    assert all(a.shape == (B, 4, T, T) for a in out.attentions)
    for part in ("token", "segment", "position", "sum", "normed"):
        assert getattr(out.embeddings, part).shape == (B, T, H), part


def test_outputs_not_asked_for_are_none(odd_model, batch):
    out = odd_model(**batch)
    assert out.hidden_states is None and out.attentions is None


def test_model_without_pooler_returns_no_pooled_output(odd_config, batch):
    model = Bert(odd_config, add_pooling_layer=False).eval()
    assert model(**batch).pooler_output is None
    assert not any(k.startswith("pooler.") for k in model.state_dict())


def test_parameter_names_are_the_checkpoint_names(odd_model):
    names = set(odd_model.state_dict())
    for key in ("embeddings.word_embeddings.weight", "embeddings.LayerNorm.weight",
                "encoder.layer.1.attention.self.query.weight", "encoder.layer.1.attention.output.LayerNorm.bias",
                "encoder.layer.0.intermediate.dense.weight", "encoder.layer.0.output.dense.bias",
                "pooler.dense.weight"):
        assert key in names, key


# ---- embeddings ---------------------------------------------------------------------------------

def test_embeddings_are_token_plus_segment_plus_position_then_layernorm(odd_model, batch):
    out = odd_model(**batch)
    e, emb = out.embeddings, odd_model.embeddings
    T = batch["input_ids"].shape[1]
    assert max_err(e.token, emb.word_embeddings.weight[batch["input_ids"]]) == 0
    assert max_err(e.segment, emb.token_type_embeddings.weight[batch["token_type_ids"]]) == 0
    assert max_err(e.position, emb.position_embeddings.weight[:T].expand_as(e.token)) == 0
    assert max_err(e.sum, e.token + e.segment + e.position) <= 1e-6
    assert max_err(emb.LayerNorm(e.sum), e.normed) <= 1e-6  # eval: dropout is the identity


def test_missing_token_type_ids_mean_segment_a(odd_model, batch):
    without = odd_model(batch["input_ids"], attention_mask=batch["attention_mask"])
    zeros = odd_model(batch["input_ids"], torch.zeros_like(batch["input_ids"]), batch["attention_mask"])
    assert max_err(without.last_hidden_state, zeros.last_hidden_state) <= 1e-6


def test_embeddings_match_transformers(odd_model, batch, hf_twin):
    hf = hf_twin(odd_model)
    with torch.no_grad():
        for tt in (batch["token_type_ids"], None):
            ours = odd_model.embeddings(batch["input_ids"], tt).normed
            theirs = hf.embeddings(input_ids=batch["input_ids"], token_type_ids=tt)
            assert max_err(ours, theirs) <= ATOL


# ---- one component at a time --------------------------------------------------------------------

@pytest.fixture
def resid(batch):
    """A random residual stream (3, 11, 32) and the additive padding mask of `batch`."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 11, 32, generator=g)
    return x, additive_mask(batch["attention_mask"], x)


def test_self_attention_and_output_match_transformers(odd_model, resid, hf_twin):
    x, mask = resid
    hf = hf_twin(odd_model)
    ours, hf_layer = odd_model.encoder.layer[1].attention, hf.encoder.layer[1].attention
    with torch.no_grad():
        out, pattern = ours(x, mask, output_attentions=True)
        fast, none = ours(x, mask, output_attentions=False)
        hf_out, hf_pattern = hf_layer(x, attention_mask=mask)
    assert none is None
    assert max_err(out, hf_out) <= ATOL
    assert max_err(fast, hf_out) <= ATOL
    assert max_err(pattern, hf_pattern) <= ATOL


def test_one_encoder_layer_matches_transformers(odd_model, resid, hf_twin):
    x, mask = resid
    hf = hf_twin(odd_model)
    with torch.no_grad():
        ours, _ = odd_model.encoder.layer[0](x, mask)
        theirs = hf.encoder.layer[0](x, mask)
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert max_err(ours, theirs) <= ATOL


def test_pooler_matches_transformers(odd_model, resid, hf_twin):
    x, _ = resid
    hf = hf_twin(odd_model)
    with torch.no_grad():
        assert max_err(odd_model.pooler(x), hf.pooler(x)) <= ATOL


@pytest.mark.parametrize("hf_attn", ["eager", "sdpa"])
@pytest.mark.parametrize("explicit", [True, False], ids=["explicit", "fast"])
def test_full_encoder_matches_transformers_at_every_layer(odd_model, batch, hf_twin, hf_attn, explicit):
    hf = hf_twin(odd_model, attn=hf_attn)
    with torch.no_grad():
        ours = odd_model(**batch, output_hidden_states=True, output_attentions=explicit)
        theirs = hf(**batch, output_hidden_states=True)
    assert len(ours.hidden_states) == len(theirs.hidden_states) == ODD["num_hidden_layers"] + 1
    for i, (a, b) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
        assert max_err(a, b) <= ATOL, f"hidden state {i}"
    assert max_err(ours.last_hidden_state, theirs.last_hidden_state) <= ATOL
    assert max_err(ours.pooler_output, theirs.pooler_output) <= ATOL


def test_attention_weights_match_transformers_eager(odd_model, batch, hf_twin):
    hf = hf_twin(odd_model, attn="eager")
    with torch.no_grad():
        ours = odd_model(**batch, output_attentions=True)
        theirs = hf(**batch, output_attentions=True)
    assert len(ours.attentions) == len(theirs.attentions) == ODD["num_hidden_layers"]
    for i, (a, b) in enumerate(zip(ours.attentions, theirs.attentions)):
        assert max_err(a, b) <= ATOL, f"layer {i}"


@pytest.mark.parametrize("act", ["gelu_new", "gelu_pytorch_tanh", "relu"])
def test_other_activations_match_transformers(act, batch, hf_twin):
    model = randomize_(Bert(BertConfig(**ODD, hidden_act=act)))
    hf = hf_twin(model)
    with torch.no_grad():
        ours, theirs = model(**batch).last_hidden_state, hf(**batch).last_hidden_state
    assert max_err(ours, theirs) <= ATOL


def test_tanh_gelu_is_not_exact_gelu(batch):
    """The activation switch really changes the model (else the test above proves nothing about it)."""
    exact = randomize_(Bert(BertConfig(**ODD)))
    tanh = randomize_(Bert(BertConfig(**ODD, hidden_act="gelu_new")))
    with torch.no_grad():
        assert max_err(exact(**batch).last_hidden_state, tanh(**batch).last_hidden_state) > 1e-5


# ---- the two attention paths --------------------------------------------------------------------

def test_fast_and_explicit_attention_agree_with_padding(odd_model, batch):
    with torch.no_grad():
        fast = odd_model(**batch, output_hidden_states=True)
        explicit = odd_model(**batch, output_hidden_states=True, output_attentions=True)
    for a, b in zip(fast.hidden_states, explicit.hidden_states):
        assert max_err(a, b) <= ATOL
    assert max_err(fast.pooler_output, explicit.pooler_output) <= ATOL


def test_padding_changes_nothing_for_the_real_tokens(odd_model, batch):
    """A padded row gives its real tokens the same states as the same text alone: the mask works."""
    n = int(batch["attention_mask"][2].sum())
    alone = {k: v[2:3, :n] for k, v in batch.items()}
    for explicit in (False, True):
        with torch.no_grad():
            padded = odd_model(**batch, output_attentions=explicit).last_hidden_state[2, :n]
            single = odd_model(**alone, output_attentions=explicit).last_hidden_state[0]
        assert max_err(padded, single) <= ATOL


def test_attention_rows_sum_to_one_and_ignore_padding(odd_model, batch):
    with torch.no_grad():
        out = odd_model(**batch, output_attentions=True)
    pad = batch["attention_mask"] == 0                                   # (B, T)
    for pattern in out.attentions:
        assert max_err(pattern.sum(-1), torch.ones(pattern.shape[:-1])) <= 1e-6
        on_padding = pattern.masked_select(pad[:, None, None, :].expand_as(pattern))
        assert on_padding.numel() > 0 and on_padding.abs().max().item() == 0.0
        assert pattern.max().item() > 0.5  # peaked, not uniform: the random weights exercise the softmax


def test_hidden_states_start_with_the_embeddings_output(odd_model, batch):
    out = odd_model(**batch, output_hidden_states=True)
    assert len(out.hidden_states) == odd_model.config.num_hidden_layers + 1
    assert torch.equal(out.hidden_states[0], out.embeddings.normed)
    assert torch.equal(out.hidden_states[-1], out.last_hidden_state)


def test_all_ones_mask_is_the_same_as_no_mask(odd_model, batch):
    ids = batch["input_ids"][:1]
    with torch.no_grad():
        a = odd_model(ids).last_hidden_state
        b = odd_model(ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        c = odd_model(ids, attention_mask=torch.ones_like(ids, dtype=torch.bool)).last_hidden_state
    assert max_err(a, b) <= 1e-6 and max_err(a, c) <= 1e-6


def test_dropout_acts_in_training_and_not_in_eval(odd_config, batch):
    model = randomize_(Bert(odd_config))
    with torch.no_grad():
        e1, e2 = model(**batch).last_hidden_state, model(**batch).last_hidden_state
        model.train()
        t1, t2 = model(**batch).last_hidden_state, model(**batch).last_hidden_state
    assert max_err(e1, e2) == 0
    assert max_err(t1, t2) > 1e-3


# ---- bad inputs ---------------------------------------------------------------------------------

def test_too_long_sequence_names_both_lengths(odd_model):
    with pytest.raises(ValueError, match=r"sequence of 65 tokens is longer than max_position_embeddings 64"):
        odd_model(torch.ones(1, 65, dtype=torch.long))


@pytest.mark.parametrize("bad", [99, 1000, -1])
def test_token_id_outside_vocabulary(odd_model, bad):
    ids = torch.tensor([[2, 5, bad, 3]])
    with pytest.raises(ValueError, match=rf"token id {bad} is outside the vocabulary \(0 … 98\)"):
        odd_model(ids)


def test_float_input_ids_are_refused(odd_model):
    with pytest.raises(ValueError, match=r"input_ids must hold integers, got dtype torch.float32"):
        odd_model(torch.tensor([[2.0, 5.0, 3.0]]))


def test_bool_input_ids_are_refused(odd_model):
    with pytest.raises(ValueError, match=r"input_ids must hold integers"):
        odd_model(torch.tensor([[True, False]]))


def test_1d_input_ids_suggest_a_batch_dimension(odd_model):
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\), got \(4,\).*input_ids\[None\]"):
        odd_model(torch.tensor([2, 5, 6, 3]))


def test_3d_input_ids_are_refused(odd_model):
    with pytest.raises(ValueError, match=r"got \(1, 2, 3\)"):
        odd_model(torch.ones(1, 2, 3, dtype=torch.long))


def test_empty_sequence_is_refused(odd_model):
    with pytest.raises(ValueError, match=r"empty"):
        odd_model(torch.zeros(2, 0, dtype=torch.long))


def test_attention_mask_of_wrong_shape_names_both_shapes(odd_model, batch):
    with pytest.raises(ValueError, match=r"attention_mask has shape \(3, 10\) but input_ids has \(3, 11\)"):
        odd_model(batch["input_ids"], attention_mask=batch["attention_mask"][:, :10])


def test_float_attention_mask_is_refused(odd_model, batch):
    with pytest.raises(ValueError, match=r"attention_mask must hold integers"):
        odd_model(batch["input_ids"], attention_mask=batch["attention_mask"].float())


def test_token_type_ids_of_wrong_shape_names_both_shapes(odd_model, batch):
    with pytest.raises(ValueError, match=r"token_type_ids has shape \(1, 11\) but input_ids has \(3, 11\)"):
        odd_model(batch["input_ids"], token_type_ids=batch["token_type_ids"][:1])


@pytest.mark.parametrize("bad", [2, -1])
def test_token_type_ids_out_of_range(odd_model, batch, bad):
    tt = batch["token_type_ids"].clone()
    tt[0, 3] = bad
    with pytest.raises(ValueError, match=rf"token_type_ids must be in 0 … 1 .*got {bad}"):
        odd_model(batch["input_ids"], token_type_ids=tt)


def test_input_that_is_not_numbers_is_refused(odd_model):
    with pytest.raises(ValueError, match=r"input_ids must be a tensor or nested list of integers, got str"):
        odd_model("the cat sat")


def test_invalid_config_is_refused_before_building():
    with pytest.raises(ValueError, match=r"hidden_size 32 is not divisible by num_attention_heads 5"):
        Bert(BertConfig(**{**ODD, "num_attention_heads": 5}))


# ---- devices and dtypes -------------------------------------------------------------------------

def test_model_lives_where_it_was_built(odd_config):
    model = Bert(odd_config, device="cpu")
    assert model.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_default_device_is_cuda_when_present_else_cpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert default_device().type == expected
    assert default_device("cpu") == torch.device("cpu")


def test_python_lists_are_accepted(odd_model, batch):
    as_lists = {k: v.tolist() for k, v in batch.items()}
    with torch.no_grad():
        a = odd_model(**as_lists).last_hidden_state
        b = odd_model(**batch).last_hidden_state
    assert max_err(a, b) == 0


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def _bf16_autocast_matches_fp32(device: str, batch: dict):
    cfg = BertConfig(**ODD)
    model = randomize_(BertForPreTraining(cfg, device="cpu")).to(device)
    batch = {k: v.to(device) for k, v in batch.items()}
    labels = torch.full_like(batch["input_ids"], -100)
    labels[:, 1:3] = batch["input_ids"][:, 1:3]
    nsp = torch.tensor([0, 1, 0], device=device)
    with torch.no_grad():
        ref = model(**batch, labels=labels, next_sentence_label=nsp)
        with torch.autocast(device, dtype=torch.bfloat16):
            low = model(**batch, labels=labels, next_sentence_label=nsp)
            low_explicit = model.bert(**batch, output_attentions=True)
    assert torch.isfinite(low.loss).item()
    assert abs(low.loss.item() - ref.loss.item()) <= 0.1 * abs(ref.loss.item())
    assert rel_err(low.bert.last_hidden_state, ref.bert.last_hidden_state) <= 0.1
    assert rel_err(low_explicit.last_hidden_state, ref.bert.last_hidden_state) <= 0.1
    assert rel_err(low.prediction_logits, ref.prediction_logits) <= 0.1
    assert rel_err(low.seq_relationship_logits, ref.seq_relationship_logits) <= 0.1


def test_bf16_autocast_on_cpu_is_close_to_float32(batch):
    _bf16_autocast_matches_fp32("cpu", batch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_bf16_autocast_on_cuda_is_close_to_float32(batch):
    _bf16_autocast_matches_fp32("cuda", batch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_matches_cpu_and_accepts_cpu_inputs(odd_config, batch):
    cpu = randomize_(Bert(odd_config, device="cpu"))
    gpu = randomize_(Bert(odd_config, device="cuda"))
    assert gpu.device.type == "cuda"
    with torch.no_grad():
        a = cpu(**batch).last_hidden_state
        b = gpu(**batch).last_hidden_state  # CPU inputs are moved to the model's device
    assert b.device.type == "cuda"
    assert max_err(a, b.cpu()) <= 1e-4


def test_a_batch_is_independent_of_its_neighbours(odd_model):
    """Row 0 gives the same result alone or in a batch with different padding (no cross-row leakage)."""
    b = make_batch(lengths=(11, 3, 9), seed=5)
    with torch.no_grad():
        together = odd_model(**b).last_hidden_state[0]
        alone = odd_model(**{k: v[:1] for k, v in b.items()}).last_hidden_state[0]
    assert max_err(together, alone) <= ATOL


def test_the_model_reads_in_one_sitting():
    """DESIGN's budget: model/ (embeddings → attention → encoder → Bert → heads) stays under 600 lines."""
    import bertlab.model
    folder = Path(bertlab.model.__file__).parent
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py"))
    assert lines < 600, f"bertlab/model/ is {lines} lines: move what is not the model's computation out"
