"""Checkpoints: the real MiniLM end to end against transformers, round trips in both directions, the key
spellings real BERT files use, and every way a checkpoint can be wrong."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import bertlab
from bertlab import (
    Bert,
    BertConfig,
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from testkit import bundled, make_batch, max_err, randomize_

TEXTS = ["The river bank was muddy after the storm.",
         "Hello!",
         "Transformers read a whole sentence at once, looking both left and right.",
         "A cat sat on the mat."]
PAIRS = [("Where did the cat sit?", "It sat on the mat by the warm kitchen window."),
         ("The bank raised its rates.", "Investors worried.")]


# ---- the real checkpoint, end to end ------------------------------------------------------------

@pytest.fixture(params=["singles", "pairs"])
def minilm_batch(request, minilm):
    _, tok = minilm
    if request.param == "singles":
        b = tok.batch(TEXTS)
    else:
        b = tok.batch([a for a, _ in PAIRS], [b for _, b in PAIRS])
        assert (b.token_type_ids == 1).any()  # segment B really is marked
    assert (b.attention_mask == 0).any()      # and the batch really is padded
    return b


def assert_hidden_states_match(ours, theirs, attention_mask, atol=1e-4):
    """Real tokens first, then every position. The states at padded positions mean nothing, and they amplify
    float rounding about 100-fold over six layers, so only the same order of operations as transformers keeps
    them within tolerance; a failure on padding alone points at op order, not at the model."""
    real = attention_mask.bool()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert max_err(a[real], b[real]) <= atol, f"hidden state {i}, real tokens"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert max_err(a, b) <= atol, f"hidden state {i}, padded positions"


def test_minilm_loads_as_a_bare_encoder(minilm):
    model, tok = minilm
    assert type(model) is Bert and not model.training
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert tok.vocab_size == model.config.vocab_size == 30522


def test_minilm_matches_transformers_eager_at_every_layer(minilm, minilm_batch, hf_minilm):
    model, _ = minilm
    hf = hf_minilm("eager")
    with torch.no_grad():
        ours = model(**minilm_batch, output_hidden_states=True, output_attentions=True)
        theirs = hf(**minilm_batch, output_hidden_states=True, output_attentions=True)
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 7
    assert_hidden_states_match(ours.hidden_states, theirs.hidden_states, minilm_batch.attention_mask)
    assert max_err(ours.pooler_output, theirs.pooler_output) <= 1e-4
    assert len(ours.attentions) == len(theirs.attentions) == 6
    real = minilm_batch.attention_mask.bool()
    for i, (a, b) in enumerate(zip(ours.attentions, theirs.attentions)):
        assert max_err(a.transpose(1, 2)[real], b.transpose(1, 2)[real]) <= 1e-5, f"attention {i}, real queries"
        assert max_err(a, b) <= 1e-5, f"attention {i}, padded queries"


def test_minilm_fast_path_matches_transformers_sdpa(minilm, minilm_batch, hf_minilm):
    model, _ = minilm
    hf = hf_minilm("sdpa")
    with torch.no_grad():
        ours = model(**minilm_batch, output_hidden_states=True)
        theirs = hf(**minilm_batch, output_hidden_states=True)
    assert_hidden_states_match(ours.hidden_states, theirs.hidden_states, minilm_batch.attention_mask)
    assert max_err(ours.pooler_output, theirs.pooler_output) <= 1e-4


def test_minilm_understands_something(minilm):
    """A sanity check that the weights are the trained ones: similar sentences are closer than unrelated ones."""
    model, tok = minilm
    b = tok.batch(["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell today."])
    with torch.no_grad():
        h = model(**b).last_hidden_state
    m = b.attention_mask[..., None].float()
    e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
    assert (e[0] @ e[1]).item() > (e[0] @ e[2]).item() + 0.2


# ---- round trips ----------------------------------------------------------------------------------

def no_temporary_files(path: Path) -> bool:
    return all("tmp" not in p.name and p.is_file() for p in path.iterdir())


@pytest.mark.slow
def test_bertlab_save_then_load_gives_identical_outputs_on_minilm(minilm, tmp_path):
    model, tok = minilm
    bertlab.save(model, tok, tmp_path)
    assert no_temporary_files(tmp_path)
    loaded, tok2 = bertlab.load(tmp_path)
    assert type(loaded) is Bert
    b = tok.batch(TEXTS)
    assert torch.equal(tok2.batch(TEXTS).input_ids, b.input_ids)
    with torch.no_grad():
        a, c = model(**b), loaded(**b)
    assert torch.equal(a.last_hidden_state, c.last_hidden_state)
    assert torch.equal(a.pooler_output, c.pooler_output)


def test_huggingface_save_of_minilm_loads_in_transformers(minilm, tmp_path, transformers, hf_minilm):
    model, tok = minilm
    bertlab.save(model, tok, tmp_path, format="huggingface")
    assert no_temporary_files(tmp_path)
    hf, info = transformers.BertModel.from_pretrained(tmp_path, attn_implementation="eager",
                                                      output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    original = hf_minilm("eager").state_dict()
    assert hf.state_dict().keys() == original.keys()
    assert all(torch.equal(v, original[k]) for k, v in hf.state_dict().items())  # every weight bit for bit
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    for a, b in [(t, None) for t in TEXTS] + PAIRS:
        assert hf_tok(a, b)["input_ids"] == tok(a, b).input_ids
        assert hf_tok(a, b)["token_type_ids"] == tok(a, b).token_type_ids
    batch = tok.batch(TEXTS)
    with torch.no_grad():
        ours, theirs = model(**batch, output_attentions=True), hf.eval()(**batch)
    assert max_err(ours.last_hidden_state, theirs.last_hidden_state) <= 1e-4
    assert max_err(ours.pooler_output, theirs.pooler_output) <= 1e-4


HEAD_CASES = [(Bert, {}), (BertForPreTraining, {}), (BertForMaskedLM, {}),
              (BertForSequenceClassification, {"num_labels": 3}), (BertForTokenClassification, {"num_labels": 5}),
              (BertForQuestionAnswering, {})]


def head_outputs(model, batch) -> list[torch.Tensor]:
    """Every tensor a model returns for `batch`, whatever its class (bertlab or transformers)."""
    with torch.no_grad():
        out = model(**batch)
    names = ("last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits", "logits",
             "start_logits", "end_logits")
    return [getattr(out, n) for n in names if getattr(out, n, None) is not None]


@pytest.mark.parametrize("cls,kwargs", HEAD_CASES, ids=[c.__name__ for c, _ in HEAD_CASES])
def test_every_model_class_survives_a_bertlab_round_trip(cls, kwargs, odd_config, odd_tokenizer, batch, tmp_path):
    model = randomize_(cls(odd_config, **kwargs))
    bertlab.save(model, odd_tokenizer, tmp_path)
    loaded, _ = bertlab.load(tmp_path)
    assert type(loaded) is cls
    if "num_labels" in kwargs:
        assert loaded.num_labels == kwargs["num_labels"]
    ours, theirs = head_outputs(model, batch), head_outputs(loaded, batch)
    assert len(ours) == len(theirs) >= 1
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


@pytest.mark.parametrize("cls,kwargs", HEAD_CASES, ids=[c.__name__ for c, _ in HEAD_CASES])
def test_a_saves_config_json_is_bertconfigs_with_the_class_and_labels(cls, kwargs, odd_config, odd_tokenizer,
                                                                       tmp_path):
    # bertlab.save writes config.json through BertConfig.save, adding the class and the labels
    model = cls(odd_config, **kwargs)
    bertlab.save(model, odd_tokenizer, tmp_path / "save")
    odd_config.save(tmp_path / "config.json")
    saved = json.loads((tmp_path / "save" / "config.json").read_text())
    plain = json.loads((tmp_path / "config.json").read_text())
    assert saved.pop("architectures") == ["BertModel" if cls is Bert else cls.__name__]
    assert plain.pop("architectures") == ["BertForPreTraining"]
    labels = {k: saved.pop(k) for k in ("num_labels", "id2label", "label2id") if k in saved}
    assert saved == plain
    n = kwargs.get("num_labels")
    assert labels == ({} if n is None else {"num_labels": n, "id2label": {str(i): f"LABEL_{i}" for i in range(n)},
                                            "label2id": {f"LABEL_{i}": i for i in range(n)}})
    assert BertConfig.from_file(tmp_path / "save" / "config.json") == odd_config


@pytest.mark.parametrize("fmt", ["huggingface", "bertlab"])
@pytest.mark.parametrize("cls,kwargs", HEAD_CASES, ids=[c.__name__ for c, _ in HEAD_CASES])
def test_every_model_class_loads_in_transformers(cls, kwargs, fmt, odd_config, odd_tokenizer, batch, tmp_path,
                                                 transformers):
    model = randomize_(cls(odd_config, **kwargs))
    bertlab.save(model, odd_tokenizer, tmp_path, format=fmt)
    hf_cls = getattr(transformers, "BertModel" if cls is Bert else cls.__name__)
    hf, info = hf_cls.from_pretrained(tmp_path, attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"], info
    ours, theirs = head_outputs(model, batch), head_outputs(hf.eval(), batch)
    assert len(ours) == len(theirs) >= 1
    for a, b in zip(ours, theirs):
        assert max_err(a, b) <= 1e-5


@pytest.fixture
def hf_pretraining(odd_config, transformers):
    hf_config = transformers.BertConfig(**odd_config.to_dict(), attn_implementation="eager")
    return randomize_(transformers.BertForPreTraining(hf_config), seed=7)


def test_transformers_save_pretrained_loads_as_bert_for_pretraining(hf_pretraining, odd_tokenizer, batch, tmp_path):
    hf_pretraining.save_pretrained(tmp_path)
    odd_tokenizer.save(tmp_path)
    model, _ = bertlab.load(tmp_path)
    assert type(model) is BertForPreTraining
    with torch.no_grad():
        ours = model(**batch, output_hidden_states=True)
        theirs = hf_pretraining(**batch, output_hidden_states=True)
    assert max_err(ours.prediction_logits, theirs.prediction_logits) <= 1e-5
    assert max_err(ours.seq_relationship_logits, theirs.seq_relationship_logits) <= 1e-5
    for a, b in zip(ours.bert.hidden_states, theirs.hidden_states):
        assert max_err(a, b) <= 1e-5


def test_transformers_bert_model_loads_as_bare_bert(odd_config, odd_tokenizer, batch, tmp_path, transformers):
    hf_config = transformers.BertConfig(**odd_config.to_dict(), attn_implementation="eager")
    hf = randomize_(transformers.BertModel(hf_config), seed=8)
    hf.save_pretrained(tmp_path)
    odd_tokenizer.save(tmp_path)
    model, _ = bertlab.load(tmp_path)
    assert type(model) is Bert
    with torch.no_grad():
        ours, theirs = model(**batch), hf(**batch)
    assert max_err(ours.last_hidden_state, theirs.last_hidden_state) <= 1e-5
    assert max_err(ours.pooler_output, theirs.pooler_output) <= 1e-5


def test_transformers_classifier_loads_with_its_label_count(odd_config, odd_tokenizer, batch, tmp_path, transformers):
    hf_config = transformers.BertConfig(**odd_config.to_dict(), attn_implementation="eager", num_labels=4)
    hf = randomize_(transformers.BertForSequenceClassification(hf_config), seed=9)
    hf.save_pretrained(tmp_path)
    odd_tokenizer.save(tmp_path)
    model, _ = bertlab.load(tmp_path)
    assert type(model) is BertForSequenceClassification and model.num_labels == 4
    with torch.no_grad():
        assert max_err(model(**batch).logits, hf(**batch).logits) <= 1e-5


def test_legacy_pytorch_model_bin_loads(hf_pretraining, odd_tokenizer, batch, tmp_path):
    """A pre-safetensors save: pytorch_model.bin with the tied decoder stored and the position_ids buffer."""
    hf_pretraining.config.save_pretrained(tmp_path)
    sd = dict(hf_pretraining.state_dict())
    assert "cls.predictions.decoder.weight" in sd and "cls.predictions.decoder.bias" in sd
    sd["bert.embeddings.position_ids"] = torch.arange(64)[None]
    torch.save(sd, tmp_path / "pytorch_model.bin")
    odd_tokenizer.save(tmp_path)
    model, _ = bertlab.load(tmp_path)
    assert type(model) is BertForPreTraining
    with torch.no_grad():
        ours, theirs = model(**batch), hf_pretraining(**batch)
    assert max_err(ours.prediction_logits, theirs.prediction_logits) <= 1e-5
    assert max_err(ours.seq_relationship_logits, theirs.seq_relationship_logits) <= 1e-5


# ---- key spellings real checkpoints use ---------------------------------------------------------------

@pytest.fixture
def reference(odd_config, odd_tokenizer):
    """A random BertForPreTraining (with a non-zero MLM bias), its state dict, and a writer for variants."""
    model = randomize_(BertForPreTraining(odd_config), seed=11)
    sd = {k: v.clone() for k, v in model.state_dict().items() if k != "cls.predictions.decoder.weight"}

    def write(directory: Path, state: dict, config_json: dict | None = None) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in state.items()}, str(directory / "model.safetensors"))
        if config_json is None:
            model.config.save(directory / "config.json")
        else:
            (directory / "config.json").write_text(json.dumps(config_json))
        odd_tokenizer.save(directory)
        return directory

    return model, sd, write


def assert_same_pretraining_outputs(a, b, atol=0.0):
    batch = make_batch()
    with torch.no_grad():
        x, y = a(**batch), b(**batch)
    assert max_err(x.prediction_logits, y.prediction_logits) <= atol
    assert max_err(x.seq_relationship_logits, y.seq_relationship_logits) <= atol


def test_keys_without_the_bert_prefix_load(reference, tmp_path):
    model, sd, write = reference
    bare = {k.removeprefix("bert."): v for k, v in sd.items()}
    assert not any(k.startswith("bert.") for k in bare)
    loaded, _ = bertlab.load(write(tmp_path, bare))
    assert type(loaded) is BertForPreTraining
    assert_same_pretraining_outputs(model, loaded)


def test_layernorm_gamma_and_beta_load(reference, tmp_path):
    model, sd, write = reference
    old = {}
    for k, v in sd.items():
        if ".LayerNorm." in k:
            k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        old[k] = v
    assert sum(k.endswith(".gamma") for k in old) == 1 + 2 * 2 + 1  # embeddings, 2 per layer, MLM transform
    loaded, _ = bertlab.load(write(tmp_path, old))
    assert_same_pretraining_outputs(model, loaded)


def test_missing_mlm_bias_loads_as_zeros(reference, tmp_path):
    model, sd, write = reference
    sd = {k: v for k, v in sd.items() if k != "cls.predictions.bias"}
    loaded, _ = bertlab.load(write(tmp_path, sd))
    assert torch.equal(loaded.cls.predictions.bias.cpu(), torch.zeros(99))      # loaded on a GPU where there is one
    assert model.cls.predictions.bias.abs().max().item() > 0  # so the zeros are really new
    with torch.no_grad():
        model.cls.predictions.bias.zero_()
    assert_same_pretraining_outputs(model, loaded)


def test_decoder_bias_alone_loads_as_the_mlm_bias(reference, tmp_path):
    model, sd, write = reference
    sd["cls.predictions.decoder.bias"] = sd.pop("cls.predictions.bias")
    loaded, _ = bertlab.load(write(tmp_path, sd))
    assert torch.equal(loaded.cls.predictions.bias, model.cls.predictions.bias)
    assert_same_pretraining_outputs(model, loaded)


def test_a_stored_tied_decoder_weight_loads(reference, tmp_path):
    model, sd, write = reference
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"].clone()
    sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"].clone()
    sd["bert.embeddings.position_ids"] = torch.arange(64)[None]
    loaded, _ = bertlab.load(write(tmp_path, sd))
    assert_same_pretraining_outputs(model, loaded)


def test_an_untied_decoder_is_refused(reference, tmp_path):
    _, sd, write = reference
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"] + 1.0
    with pytest.raises(ValueError, match="decoder weight differs from its token embeddings"):
        bertlab.load(write(tmp_path, sd))


def test_a_sharded_safetensors_checkpoint_loads(reference, odd_tokenizer, tmp_path):
    model, sd, _ = reference
    keys = sorted(sd)
    shards = {"model-00001-of-00002.safetensors": keys[: len(keys) // 2],
              "model-00002-of-00002.safetensors": keys[len(keys) // 2:]}
    for name, part in shards.items():
        save_file({k: sd[k].contiguous() for k in part}, str(tmp_path / name))
    weight_map = {k: name for name, part in shards.items() for k in part}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    model.config.save(tmp_path / "config.json")
    odd_tokenizer.save(tmp_path)
    loaded, _ = bertlab.load(tmp_path)
    assert_same_pretraining_outputs(model, loaded)


def test_a_bare_encoder_checkpoint_without_architectures_loads_as_bert(reference, tmp_path):
    model, sd, write = reference
    encoder = {k.removeprefix("bert."): v for k, v in sd.items() if k.startswith("bert.")}
    loaded, _ = bertlab.load(write(tmp_path, encoder, {"model_type": "bert", **model.config.to_dict()}))
    assert type(loaded) is Bert
    batch = make_batch()
    with torch.no_grad():
        assert torch.equal(loaded(**batch).last_hidden_state, model.bert(**batch).last_hidden_state)


# ---- a fresh head on a pre-trained encoder -----------------------------------------------------------

def test_new_task_head_on_a_pretraining_save(reference, odd_tokenizer, tmp_path):
    model, _, _ = reference
    bertlab.save(model, odd_tokenizer, tmp_path)
    clf, _ = bertlab.load(tmp_path, model_class=BertForSequenceClassification, num_labels=3)
    assert type(clf) is BertForSequenceClassification and clf.num_labels == 3
    assert clf.classifier.weight.shape == (3, 32)
    ours, theirs = clf.bert.state_dict(), model.bert.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert clf.classifier.weight.std().item() < 0.05  # Google's init (std 0.02), not the saved noise (0.2)
    assert not hasattr(clf, "cls")


def test_model_class_must_be_a_bertlab_model(reference, odd_tokenizer, tmp_path):
    model, _, _ = reference
    bertlab.save(model, odd_tokenizer, tmp_path)
    with pytest.raises(ValueError, match="model_class must be Bert or one of"):
        bertlab.load(tmp_path, model_class=torch.nn.Linear)


# ---- broken checkpoints ---------------------------------------------------------------------------------

def test_a_missing_key_is_named(reference, tmp_path):
    _, sd, write = reference
    del sd["bert.encoder.layer.1.output.dense.weight"]
    with pytest.raises(ValueError, match=r"missing 1 parameter.*bert\.encoder\.layer\.1\.output\.dense\.weight"):
        bertlab.load(write(tmp_path, sd))


def test_an_unexpected_key_is_named(reference, tmp_path):
    _, sd, write = reference
    sd["bert.encoder.layer.1.adapter.weight"] = torch.zeros(3)
    with pytest.raises(ValueError, match=r"1 parameter\(s\) the model does not: bert\.encoder\.layer\.1\.adapter\.weight"):
        bertlab.load(write(tmp_path, sd))


def test_a_shape_mismatch_names_both_shapes(reference, tmp_path):
    _, sd, write = reference
    sd["bert.encoder.layer.0.intermediate.dense.weight"] = torch.zeros(36, 32)
    with pytest.raises(ValueError, match=r"intermediate\.dense\.weight: checkpoint has \(36, 32\), "
                                         r"the model expects \(37, 32\)"):
        bertlab.load(write(tmp_path, sd))


def test_a_config_that_does_not_fit_the_weights_is_refused(reference, tmp_path):
    model, sd, write = reference
    wrong = {"model_type": "bert", **model.config.to_dict(), "num_hidden_layers": 3}
    with pytest.raises(ValueError, match=r"missing .* bert\.encoder\.layer\.2\."):
        bertlab.load(write(tmp_path, sd, wrong))


def test_a_tokenizer_larger_than_the_embeddings_is_refused(reference, minilm_dir, tmp_path):
    _, sd, write = reference
    d = write(tmp_path, sd)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        (d / f).unlink()
    (d / "vocab.txt").write_text((minilm_dir / "vocab.txt").read_text())
    with pytest.raises(ValueError, match=r"30522 tokens but the model only 99 embeddings"):
        bertlab.load(d)


RAN: list[str] = []


def _payload_ran(what: str) -> None:
    RAN.append(what)


class CodeOnLoad:
    """Unpickling this calls a function of the attacker's choosing."""

    def __reduce__(self):
        return (_payload_ran, ("__reduce__ payload",))


class SneakyDict(collections.OrderedDict):
    """An OrderedDict subclass: unpickling it runs this class's __setitem__."""

    def __setitem__(self, key, value):
        _payload_ran("SneakyDict.__setitem__")
        super().__setitem__(key, value)


def _evil_state_dicts(sd):
    yield "reduce", {**sd, "extra": CodeOnLoad()}
    sneaky = SneakyDict()
    for k, v in sd.items():
        collections.OrderedDict.__setitem__(sneaky, k, v)
    yield "subclass", sneaky


@pytest.mark.parametrize("kind", ["reduce", "subclass"])
def test_a_pickle_with_code_is_refused_and_never_runs(kind, reference, odd_tokenizer, tmp_path):
    model, sd, _ = reference
    evil = dict(_evil_state_dicts(sd))[kind]
    model.config.save(tmp_path / "config.json")
    odd_tokenizer.save(tmp_path)
    torch.save(evil, tmp_path / "pytorch_model.bin")
    RAN.clear()
    with pytest.raises(ValueError, match=r"pytorch_model.bin could not be read as plain tensors"):
        bertlab.load(tmp_path)
    assert RAN == []
    # the payload is live: an unsafe load would have run it
    torch.load(tmp_path / "pytorch_model.bin", weights_only=False)
    assert RAN, "the test's payload did not run even when unpickled unsafely"
    RAN.clear()


def test_a_missing_directory_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a model bertlab knows by name"):
        bertlab.load(tmp_path / "nope")


def test_a_directory_without_config_is_file_not_found(reference, tmp_path):
    _, sd, write = reference
    (write(tmp_path, sd) / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        bertlab.load(tmp_path)


def test_a_directory_without_weights_is_file_not_found(reference, tmp_path):
    _, sd, write = reference
    (write(tmp_path, sd) / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors or pytorch_model.bin"):
        bertlab.load(tmp_path)


def test_a_file_instead_of_a_directory_is_refused(reference, tmp_path):
    _, sd, write = reference
    with pytest.raises(ValueError, match="is a file"):
        bertlab.load(write(tmp_path, sd) / "model.safetensors")


# ---- saving ---------------------------------------------------------------------------------------------

def test_saves_are_atomic_and_overwrite_cleanly(reference, odd_tokenizer, tmp_path):
    model, _, _ = reference
    for fmt in ("bertlab", "huggingface", "bertlab"):
        bertlab.save(model, odd_tokenizer, tmp_path, format=fmt)
        assert no_temporary_files(tmp_path), sorted(p.name for p in tmp_path.iterdir())
    assert {"config.json", "model.safetensors"} <= {p.name for p in tmp_path.iterdir()}
    loaded, _ = bertlab.load(tmp_path)
    assert_same_pretraining_outputs(model, loaded)


def test_a_failed_save_leaves_the_previous_one_intact(reference, odd_tokenizer, tmp_path, monkeypatch):
    model, _, _ = reference
    bertlab.save(model, odd_tokenizer, tmp_path)
    before = (tmp_path / "model.safetensors").read_bytes()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("bertlab.checkpoint.save_file", fail)
    with pytest.raises(OSError, match="disk full"):
        bertlab.save(randomize_(BertForPreTraining(model.config), seed=99), odd_tokenizer, tmp_path)
    assert (tmp_path / "model.safetensors").read_bytes() == before
    assert no_temporary_files(tmp_path)


def test_saved_weights_are_safetensors_without_the_tied_copy(reference, odd_tokenizer, tmp_path):
    model, _, _ = reference
    bertlab.save(model, odd_tokenizer, tmp_path)
    keys = set(load_file(tmp_path / "model.safetensors"))
    assert "cls.predictions.decoder.weight" not in keys and "cls.predictions.bias" in keys
    assert not (tmp_path / "pytorch_model.bin").exists()
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["BertForPreTraining"]


def test_unknown_save_format_is_refused(reference, odd_tokenizer, tmp_path):
    model, _, _ = reference
    with pytest.raises(ValueError, match='format must be "bertlab" or "huggingface"'):
        bertlab.save(model, odd_tokenizer, tmp_path, format="onnx")


@pytest.mark.parametrize("head", [bertlab.BertForTokenClassification, bertlab.BertForQuestionAnswering])
def test_a_fresh_head_without_a_pooler_goes_on_a_pretrained_encoder(head):
    # taggers and span heads have no pooler: the checkpoint's pooler is left out, every encoder weight loads
    model, tok = bertlab.load("bertlab-tiny", device="cpu", model_class=head)
    reference, _ = bundled("bertlab-tiny")
    assert isinstance(model, head) and model.bert.pooler is None
    for name, p in model.bert.state_dict().items():
        assert torch.equal(p, reference.bert.state_dict()[name]), name
