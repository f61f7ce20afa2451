"""BertConfig: the paper's size family, HuggingFace's field names, and errors that say what is wrong."""

from __future__ import annotations

import inspect
import json
import re

import pytest

import bertlab.config
from bertlab import Bert, BertConfig
from bertlab.config import PRESETS

PAPER_SIZES = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512), "medium": (8, 512), "base": (12, 768),
               "large": (24, 1024)}


@pytest.mark.parametrize("name", list(PAPER_SIZES))
def test_presets_follow_the_paper_recipe(name):
    layers, hidden = PAPER_SIZES[name]
    cfg = BertConfig.preset(name)
    assert (cfg.num_hidden_layers, cfg.hidden_size) == (layers, hidden)
    assert cfg.num_attention_heads == hidden // 64          # heads = H / 64
    assert cfg.head_dim == 64
    assert cfg.intermediate_size == 4 * hidden              # FFN = 4H
    assert cfg.vocab_size == 30522 and cfg.max_position_embeddings == 512 and cfg.hidden_act == "gelu"


def test_every_preset_is_tested():
    assert set(PRESETS) == set(PAPER_SIZES)


@pytest.mark.slow
def test_preset_counts_in_config_comments_are_true():
    """The parameter count written beside each preset (with the pooler) is what the model really has."""
    source = inspect.getsource(bertlab.config)
    comments = dict(re.findall(r'"(\w+)": \(\d+, \d+\),\s*#\s*([\d.]+)M', source))
    assert set(comments) == set(PRESETS), comments
    for name, millions in comments.items():
        n = Bert(BertConfig.preset(name), device="meta").num_parameters()
        assert abs(n / 1e6 - float(millions)) <= 0.05, f"{name}: {n / 1e6:.2f}M, comment says {millions}M"


def test_bert_base_has_the_published_parameter_count():
    n = Bert(BertConfig.preset("base"), device="meta").num_parameters()
    assert n == 109_482_240  # BertModel("bert-base-uncased") in transformers, pooler included


def test_preset_overrides_win():
    cfg = BertConfig.preset("tiny", vocab_size=1000, hidden_dropout_prob=0.0, num_hidden_layers=3)
    assert (cfg.vocab_size, cfg.hidden_dropout_prob, cfg.num_hidden_layers, cfg.hidden_size) == (1000, 0.0, 3, 128)
    assert cfg.num_attention_heads == 2 and cfg.intermediate_size == 512


def test_hidden_not_divisible_by_heads_names_both_numbers():
    with pytest.raises(ValueError, match=r"hidden_size 100 is not divisible by num_attention_heads 12"):
        BertConfig(hidden_size=100, num_attention_heads=12)
    with pytest.raises(ValueError, match=r"\b130\b.*\b4\b"):
        BertConfig.preset("tiny", hidden_size=130, num_attention_heads=4, intermediate_size=520)
    # and suggests the head count BERT's own sizes would use: a divisor near 64 dimensions per head
    with pytest.raises(ValueError, match=r"pick a divisor of 768, e\.g\. 12 "):
        BertConfig(hidden_size=768, num_attention_heads=5)
    with pytest.raises(ValueError, match=r"pick a divisor of 100, e\.g\. 2 "):
        BertConfig(hidden_size=100, num_attention_heads=12)


@pytest.mark.parametrize("field", ["hidden_dropout_prob", "attention_probs_dropout_prob"])
@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_bad_dropout_is_refused(field, p):
    with pytest.raises(ValueError, match=field):
        BertConfig(**{field: p})


def test_unknown_preset_lists_the_choices():
    with pytest.raises(ValueError, match=r"unknown preset 'huge'.*tiny.*large"):
        BertConfig.preset("huge")


def test_unknown_hidden_act_is_refused():
    with pytest.raises(ValueError, match=r"hidden_act 'swish'"):
        BertConfig(hidden_act="swish")


@pytest.mark.parametrize("field,value", [("num_hidden_layers", 0), ("vocab_size", -5), ("hidden_size", 32.0),
                                         ("num_attention_heads", True), ("max_position_embeddings", "512")])
def test_sizes_must_be_positive_integers(field, value):
    with pytest.raises(ValueError, match=field):
        BertConfig(**{field: value})


def test_pad_token_outside_vocabulary_is_refused():
    with pytest.raises(ValueError, match=r"pad_token_id 99 .* 99"):
        BertConfig(vocab_size=99, hidden_size=32, num_attention_heads=4, pad_token_id=99)


def test_from_dict_reads_a_real_huggingface_config_and_ignores_what_bert_does_not_use(minilm_dir):
    d = json.loads((minilm_dir / "config.json").read_text())
    assert "transformers_version" in d or "architectures" in d  # it really carries HF-only fields
    cfg = BertConfig.from_dict(d)
    assert (cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
            cfg.intermediate_size) == (30522, 384, 6, 12, 1536)
    assert cfg.layer_norm_eps == d["layer_norm_eps"]


def test_from_dict_ignores_unknown_fields_and_none():
    cfg = BertConfig.from_dict({"model_type": "bert", "hidden_size": 64, "num_attention_heads": 2,
                                "gradient_checkpointing": False, "use_cache": True, "classifier_dropout": None,
                                "transformers_version": "5.0", "vocab_size": None})
    assert cfg.hidden_size == 64 and cfg.num_attention_heads == 2 and cfg.vocab_size == 30522


def test_from_dict_reads_transformers_own_bert_config(transformers):
    hf = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=5, num_attention_heads=4,
                                 intermediate_size=37, hidden_act="gelu_new", layer_norm_eps=1e-7)
    cfg = BertConfig.from_dict(hf.to_dict())
    assert (cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size,
            cfg.hidden_act, cfg.layer_norm_eps) == (99, 32, 5, 37, "gelu_new", 1e-7)


@pytest.mark.parametrize("model_type", ["roberta", "distilbert", "gpt2"])
def test_from_dict_refuses_other_architectures(model_type):
    with pytest.raises(ValueError, match=rf"model_type is '{model_type}'"):
        BertConfig.from_dict({"model_type": model_type, "hidden_size": 64, "num_attention_heads": 2})


def test_from_dict_refuses_relative_positions():
    with pytest.raises(ValueError, match="relative_key"):
        BertConfig.from_dict({"model_type": "bert", "position_embedding_type": "relative_key"})


def test_save_and_from_file_round_trip(tmp_path, odd_config):
    cfg = BertConfig(**{**odd_config.to_dict(), "hidden_act": "gelu_new", "layer_norm_eps": 1e-5,
                        "hidden_dropout_prob": 0.05})
    cfg.save(tmp_path / "config.json")
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "bert"  # so transformers' AutoConfig recognises it
    assert BertConfig.from_file(tmp_path / "config.json") == cfg


def test_from_file_with_broken_json_says_so(tmp_path):
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        BertConfig.from_file(tmp_path / "config.json")


def test_one_activation_table_is_what_the_config_checks_and_the_model_runs():
    """`HIDDEN_ACTS` maps each accepted name to the function the feed-forward and the MLM transform apply."""
    import torch

    from bertlab import BertForMaskedLM
    from bertlab.config import HIDDEN_ACTS
    x = torch.linspace(-3, 3, 7)
    assert torch.allclose(HIDDEN_ACTS["gelu"](x), x * 0.5 * (1 + torch.erf(x / 2 ** 0.5)), atol=1e-6)  # x·Φ(x)
    assert torch.allclose(HIDDEN_ACTS["gelu_new"](x), HIDDEN_ACTS["gelu_pytorch_tanh"](x))
    assert (HIDDEN_ACTS["gelu_new"](x) - HIDDEN_ACTS["gelu"](x)).abs().max() > 1e-4          # the tanh approximation
    for name, fn in HIDDEN_ACTS.items():
        model = BertForMaskedLM(BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                           intermediate_size=37, hidden_act=name), device="meta")
        assert model.bert.encoder.layer[0].intermediate.act is fn
        assert model.cls.predictions.transform.act is fn
    with pytest.raises(ValueError, match=r"hidden_act 'swish' is not one of " + ", ".join(HIDDEN_ACTS)):
        BertConfig(hidden_act="swish")
