"""bertlab.diff: a model against itself differs nowhere; a change in one layer shows from that layer on and
nowhere before it; the lens is exactly the mean rise in log-probability it says it is; files round-trip; and
the comparisons it must refuse."""

from __future__ import annotations

import copy
import importlib
import json
import os

import pytest
import torch

import bertlab
from bertlab.inside import ModelDiff
from bertlab.probe.running import mlm_head
from testkit import no_hooks_anywhere

TEXTS = ["The dog began to bark at the mailman.", "We walked along the river after lunch.",
         "She paid for the bread with her card.", "The children played in the park all afternoon.",
         "It rained all day, so we stayed inside."]


@pytest.fixture(scope="module")
def tiny():
    return bertlab.load("bertlab-tiny")


def test_a_model_against_itself_differs_nowhere(tiny):
    model, tok = tiny
    d = bertlab.diff(model, copy.deepcopy(model), tok, TEXTS)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    assert d.attention.shape == (L, H) and d.residual.shape == (L + 1,)
    assert d.attention.abs().max() == 0 and d.residual.abs().max() == 0 and d.residual_cls.abs().max() == 0
    assert len(d.lens) == 30 and all(t.score == pytest.approx(0.0, abs=1e-6) for t in d.lens)
    assert d.n_texts == len(TEXTS) and d.n_tokens == sum(len(tok(t).input_ids) for t in TEXTS)
    assert no_hooks_anywhere(model)


def test_a_change_in_one_layer_shows_from_that_layer_on(tiny):
    model, tok = tiny
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.bert.encoder.layer[1].attention.self.query.weight.mul_(3.0)       # layer 1's attention only
    model.train()
    d = bertlab.diff(model, other, tok, TEXTS)
    assert model.training                                                          # its mode came back
    model.eval()
    assert d.residual[:2].abs().max() == 0                 # embeddings and layer 0's output: untouched
    assert d.residual_cls[:2].abs().max() == 0 and d.residual_cls[2] > 0
    assert d.residual[2] > 0 and d.attention[0].abs().max() == 0 and (d.attention[1] > 0).all()
    assert (d.attention <= 1 + 1e-6).all()
    top = d.top_heads(2)
    assert all(layer == 1 for layer, _, _ in top) and top[0][2] >= top[1][2]


def test_the_lens_is_the_mean_rise_in_log_probability_of_the_base_head(tiny):
    model, tok = tiny
    other = copy.deepcopy(model)
    v = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(0)).to(model.device)
    with torch.no_grad():   # post-LN: the last LayerNorm's bias moves every final state by exactly v
        other.bert.encoder.layer[-1].output.LayerNorm.bias.add_(v)
    d = bertlab.diff(model, other, tok, TEXTS, top_k=5)
    head = mlm_head(model)
    with torch.no_grad():
        states = torch.cat([model.bert(**tok(t)).last_hidden_state[0] for t in TEXTS])       # (N, H)
        rise = (head(states + v).log_softmax(-1) - head(states).log_softmax(-1)).mean(0)[:tok.vocab_size]
    special = {tok.cls_id, tok.sep_id, tok.pad_id, tok.mask_id}
    expected = [i for i in rise.argsort(descending=True).tolist() if i not in special][:5]
    assert d.lens_tokens(5) == [tok.id_to_token(i) for i in expected]
    assert [t.score for t in d.lens] == pytest.approx([float(rise[i]) for i in expected], abs=1e-4)
    assert d.residual[-1] > 0 and d.attention.abs().max() == 0     # a bias after the last attention moves no head


def test_a_base_without_mlm_head_has_no_lens(tiny):
    model, tok = tiny
    d = bertlab.diff(model.bert, copy.deepcopy(model).bert, tok, TEXTS[:2])
    assert d.lens is None and d.lens_tokens() == [] and "no lens" in str(d)


def test_save_and_load_round_trip(tiny, tmp_path):
    model, tok = tiny
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.bert.encoder.layer[0].attention.self.key.weight.mul_(2.0)
    d = bertlab.diff(model, other, tok, TEXTS[:3], names=("base", "changed"))
    back = ModelDiff.load(d.save(tmp_path / "d.json"))
    assert torch.allclose(back.attention, d.attention, atol=1e-6) and torch.allclose(back.residual, d.residual, atol=1e-6)
    assert back.lens_tokens(30) == d.lens_tokens(30) and back.names == ("base", "changed")
    assert torch.allclose(back.residual_cls, d.residual_cls, atol=1e-6)
    assert "base → changed" in str(back)


def test_bad_files_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model-diff file"):
        ModelDiff.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="must be a file path"):
        ModelDiff.load(None)
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a bertlab model-diff file"):
        ModelDiff.load(tmp_path / "junk.json")
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not a bertlab model-diff file"):
        ModelDiff.load(tmp_path / "other.json")
    (tmp_path / "cut.json").write_text('{"format": "bertlab-model-diff/1", "attention": [[0.1]], "residual": [0.0],'
                                       ' "lens": null, "n_texts": 1, "n_tokens": 3, "names": ["a", "b"]}')
    with pytest.raises(ValueError, match="residual"):
        ModelDiff.load(tmp_path / "cut.json")
    (tmp_path / "real.json").write_text("{}")
    os.symlink(tmp_path / "real.json", tmp_path / "link.json")
    with pytest.raises(ValueError, match="symbolic link"):
        ModelDiff.load(tmp_path / "link.json")


def test_comparisons_it_must_refuse(tiny):
    model, tok = tiny
    mini, mini_tok = bertlab.load("bertlab-mini")
    with pytest.raises(ValueError, match="differ in hidden_size"):
        bertlab.diff(model, mini, tok, TEXTS)
    with pytest.raises(ValueError, match="expected a bertlab model"):
        bertlab.diff(model, "bertlab-tiny", tok, TEXTS)
    with pytest.raises(ValueError, match="more tokens|vocabulary|tokenizer"):
        bertlab.diff(model, copy.deepcopy(model), mini_tok, TEXTS)
    for texts, match in (("a sentence", "for one text pass"), ([], "texts is empty"), (["ok", "  "], r"texts\[1\]")):
        with pytest.raises(ValueError, match=match):
            bertlab.diff(model, model, tok, texts)
    with pytest.raises(ValueError, match="top_k must be an int"):
        bertlab.diff(model, model, tok, TEXTS, top_k=0)
    with pytest.raises(ValueError, match="names must be two"):
        bertlab.diff(model, model, tok, TEXTS, names=("only one",))
    d = bertlab.diff(model, model, tok, TEXTS[:1])
    with pytest.raises(ValueError, match="n must be an int"):
        d.top_heads(0)


def test_the_figure_draws_a_diff_and_refuses_anything_else(tiny):
    import plotly.graph_objects as go

    from bertlab.inside.figures import diff_figure
    model, tok = tiny
    d = bertlab.diff(model, model, tok, TEXTS[:2])
    fig = diff_figure(d)
    assert isinstance(fig, go.Figure) and fig.data[0].z.shape == tuple(d.attention.shape)
    assert list(fig.data[1].y) == d.residual.tolist()
    with pytest.raises(ValueError, match="takes a ModelDiff"):
        diff_figure(d.to_json())


# ---- the adversarial round: what a hostile user tried -----------------------------------------------------

def test_a_nan_model_a_bad_count_and_a_bad_path_are_refused(tiny, tmp_path):
    model, tok = tiny
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.bert.encoder.layer[0].output.LayerNorm.weight[0] = float("nan")
    with pytest.raises(ValueError, match="nan or inf"):
        bertlab.diff(model.bert, broken.bert, tok, TEXTS)          # no lens: the attention and residual say it
    d = bertlab.diff(model, copy.deepcopy(model), tok, TEXTS[:2])
    for n in (0, -1, "3", True):
        with pytest.raises(ValueError, match="n must be an int of at least 1"):
            d.lens_tokens(n)
    with pytest.raises(ValueError, match="path must be a file path"):
        d.save(None)
    (tmp_path / "plain").write_text("x")
    with pytest.raises(FileNotFoundError, match="plain is not a folder"):
        d.save(tmp_path / "plain" / "d.json")


def test_files_with_nan_one_name_or_no_heads_are_refused(tiny, tmp_path):
    model, tok = tiny
    good = bertlab.diff(model, copy.deepcopy(model), tok, TEXTS[:2]).to_json()
    for change, needle in (({"names": ["a"]}, "names must be two"), ({"attention": [[], []], "residual": [0, 0, 0]},
                                                                      "holds no head"),
                           ({"residual": [float("nan")] * len(good["residual"])}, "nan or inf")):
        (tmp_path / "d.json").write_text(json.dumps(good | change))
        with pytest.raises(ValueError, match=needle):
            ModelDiff.load(tmp_path / "d.json")


def test_a_file_that_is_not_a_diff_is_one_line_however_it_is_built(tmp_path, monkeypatch):
    # thousands of nested brackets were a raw RecursionError from json; a list said "'list' object has no
    # attribute 'get'"; a huge file was read whole before anything was checked
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="its JSON nests too deep"):
        ModelDiff.load(deep)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON list, not the object ModelDiff.save writes"):
        ModelDiff.load(listed)
    diff_module = importlib.import_module("bertlab.inside.diff")     # bertlab.inside.diff is also the function
    monkeypatch.setattr(diff_module, "MAX_FILE_BYTES", 1024)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"format": diff_module.FORMAT, "pad": "x" * 4096}))
    with pytest.raises(ValueError, match=r"far more than a model-diff file \(at most 0 MiB\)"):
        ModelDiff.load(big)
