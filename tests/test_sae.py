"""Sparse autoencoders (bertlab.inside.sae): what must hold exactly (an identity autoencoder spliced in
changes nothing, clamping a feature to its own value changes nothing, the residual rows are the model's own
hidden states, hooks never outlive a call), training that is seeded and learns, files that round-trip, and the
requests and files it must refuse."""

from __future__ import annotations

import copy
import importlib
import os

import pytest
import torch

import bertlab
from bertlab.inside import (
    Features,
    SparseAutoencoder,
    compare_probes,
    promoted_words,
    residual_stream,
    sae_report,
    steer,
    trace,
)
from bertlab.inside.sae import FORMAT
from bertlab.probe import fill_mask
from testkit import no_hooks_anywhere

TEXTS = ["The dog began to bark at the mailman.", "We walked along the river after lunch.",
         "She paid for the bread with her card.", "The children played in the park all afternoon.",
         "It rained all day, so we stayed inside.", "He read a book about ships and the sea.",
         "My sister bakes bread every Sunday morning.", "The train to the city was late again."]
FILL = "The dog began to [MASK] at the mailman."


@pytest.fixture(scope="module")
def tiny():
    # on the CPU even where a GPU is (bertlab's default device there): the CUDA test below moves a copy itself
    return bertlab.load("bertlab-tiny", device="cpu")


@pytest.fixture(scope="module")
def sae(tiny):
    model, tok = tiny
    return bertlab.train_sae(model, tok, TEXTS, layer=1, width=256, k=8, steps=30, seed=0, batch_size=64)


def identity_sae(d: int, layer: int) -> SparseAutoencoder:
    """width 2d, k = d: feature i reads +x_i, feature d + i reads −x_i, so ReLU keeps one of each pair and TopK
    keeps exactly those d; decoding gives x back."""
    sae = SparseAutoencoder(d, 2 * d, d, layer)
    eye = torch.eye(d)
    with torch.no_grad():
        sae.W_enc.copy_(torch.cat([eye, -eye]))
        sae.W_dec.copy_(torch.cat([eye, -eye], dim=1))
        sae.b_enc.zero_()
        sae.b_dec.zero_()
    return sae.eval().requires_grad_(False)


# ---- exactness ------------------------------------------------------------------------------------

def test_the_residual_rows_are_the_models_own_hidden_states(tiny):
    model, tok = tiny
    acts = residual_stream(model, tok, TEXTS[:3], layer=1, probability=0.0)
    for s, text in enumerate(TEXTS[:3]):
        enc = tok(text)
        with torch.no_grad():
            h = model.bert(**enc, output_hidden_states=True).hidden_states[1][0]        # (T, H)
        rows = acts.h[acts.sentence == s]
        assert rows.shape == h.shape and torch.allclose(rows, h.cpu(), atol=1e-6)   # rows are kept on the CPU
        assert acts.token_ids[acts.sentence == s].tolist() == enc.input_ids
    assert no_hooks_anywhere(model)


def test_an_identity_autoencoder_spliced_in_changes_nothing(tiny):
    model, tok = tiny
    sae = identity_sae(model.config.hidden_size, layer=1)
    h = torch.randn(5, model.config.hidden_size)
    assert torch.allclose(sae(h), h, atol=1e-6)
    r = sae_report(model, tok, sae, TEXTS)
    assert r.fvu == pytest.approx(0.0, abs=1e-9)
    assert r.mlm_loss_spliced == pytest.approx(r.mlm_loss_clean, abs=1e-5)
    assert r.top1_spliced == r.top1_clean and r.loss_recovered == pytest.approx(1.0, abs=1e-4)
    assert r.l0 == model.config.hidden_size and r.n_masked > 0
    assert no_hooks_anywhere(model)


def test_clamping_a_feature_to_its_own_value_changes_nothing(tiny, sae):
    model, tok = tiny
    tokens, z = trace(model, tok, sae, FILL)
    m = tokens.index("[MASK]")
    clean = fill_mask(model, tok, FILL, top_k=5).guesses[0]
    for f in (int(z[m].argmax()), int(z[m].argmin())):           # a feature that fires and one that does not
        steered = steer(model, tok, sae, FILL, f, float(z[m, f]), top_k=5)
        assert [g.token for g in steered] == [g.token for g in clean]
        assert [g.probability for g in steered] == pytest.approx([g.probability for g in clean], abs=1e-7)
    everywhere = steer(model, tok, sae, FILL, 0, float(z[m, 0]), positions="all")
    assert [g.token for g in everywhere][:3] != [] and no_hooks_anywhere(model)
    assert not model.training


def test_clamping_a_feature_high_moves_the_guesses_and_leaves_the_model_as_it_was(tiny, sae):
    model, tok = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    clean = fill_mask(model, tok, FILL, top_k=5).guesses[0]
    pushed = steer(model, tok, sae, FILL, 3, 50.0)
    assert [g.probability for g in pushed] != pytest.approx([g.probability for g in clean], abs=1e-4)
    assert model.training and all(m.training for m in model.modules())        # its mode came back
    model.eval()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert no_hooks_anywhere(model)


def test_encode_keeps_exactly_k_non_negative_features(sae):
    h = torch.randn(7, sae.d_model) * 3
    z = sae.encode(h)
    assert z.shape == (7, sae.width) and (z >= 0).all() and ((z > 0).sum(-1) <= sae.k).all()
    assert sae.decode(z).shape == (7, sae.d_model)
    assert torch.allclose(sae.W_dec.norm(dim=0), torch.ones(sae.width), atol=1e-5)   # unit directions


# ---- training and the report ---------------------------------------------------------------------

def test_training_is_seeded_and_learns(tiny, sae):
    model, tok = tiny
    curve = []
    again = bertlab.train_sae(model, tok, TEXTS, layer=1, width=256, k=8, steps=30, seed=0, batch_size=64,
                              callback=lambda step, loss: curve.append(loss))
    assert all(torch.equal(a, b) for a, b in zip(sae.state_dict().values(), again.state_dict().values()))
    assert curve[-1] < 0.7 * curve[0]
    other = bertlab.train_sae(model, tok, TEXTS, layer=1, width=256, k=8, steps=2, seed=1, batch_size=64)
    assert not torch.equal(other.W_dec, sae.W_dec)
    r = sae_report(model, tok, sae, TEXTS)
    assert 0 < r.fvu < 1 and r.l0 <= sae.k and 0 <= r.dead <= sae.width
    assert r.mlm_loss_zero > r.mlm_loss_clean                     # zeroing a layer hurts
    assert "FVU" in str(r) and set(r.as_dict()) >= {"fvu", "l0", "dead", "mlm_loss_clean", "mlm_loss_spliced",
                                                     "mlm_loss_zero", "loss_recovered"}


def test_reading_a_feature(tiny, sae):
    model, tok = tiny
    f = Features(model, tok, sae, TEXTS)
    busiest = f.top_features(1)[0]
    contexts = f.top_contexts(busiest, n=3)
    assert contexts and contexts[0].value >= contexts[-1].value > 0
    assert "[[" in contexts[0].marked and contexts[0].sentence in TEXTS
    short = contexts[0].snippet(20)
    assert "[[" in short and len(short) <= 22 and contexts[0].snippet(500) == contexts[0].marked
    tokens, values = trace(model, tok, sae, contexts[0].sentence, busiest)
    assert float(values[contexts[0].position]) == pytest.approx(contexts[0].value, abs=1e-5)
    words = promoted_words(model, tok, sae, busiest, k=4)
    assert len(words) == 4 and words[0][1] >= words[-1][1]
    assert 0 < float(f.frequency[busiest]) <= 1


# ---- files -----------------------------------------------------------------------------------------

def test_save_and_load_round_trip(sae, tmp_path):
    x = torch.randn(4, sae.d_model)
    loaded = SparseAutoencoder.load(sae.save(tmp_path / "sae.safetensors"))
    assert torch.equal(loaded.encode(x), sae.encode(x)) and loaded.layer == sae.layer and loaded.k == sae.k
    small = SparseAutoencoder.load(sae.save(tmp_path / "half.safetensors", dtype=torch.float16))
    assert (tmp_path / "half.safetensors").stat().st_size < 0.6 * (tmp_path / "sae.safetensors").stat().st_size
    assert torch.allclose(small.decode(small.encode(x)), sae.decode(sae.encode(x)), atol=0.05)


def test_bad_files_are_refused(sae, tmp_path):
    with pytest.raises(FileNotFoundError, match="no autoencoder file"):
        SparseAutoencoder.load(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="must be a file path"):
        SparseAutoencoder.load(3)
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file at all")
    with pytest.raises(ValueError, match="not a readable autoencoder file"):
        SparseAutoencoder.load(tmp_path / "junk.safetensors")
    from safetensors.torch import save_file
    save_file({"x": torch.zeros(2)}, str(tmp_path / "other.safetensors"), metadata={"format": "something-else"})
    with pytest.raises(ValueError, match="not a bertlab autoencoder file"):
        SparseAutoencoder.load(tmp_path / "other.safetensors")
    save_file({"W_enc": torch.zeros(2, 2)}, str(tmp_path / "cut.safetensors"),
              metadata={"format": FORMAT, "d_model": "2", "width": "4", "k": "1", "layer": "0"})
    with pytest.raises(ValueError, match="damaged or was edited"):
        SparseAutoencoder.load(tmp_path / "cut.safetensors")
    target = sae.save(tmp_path / "real.safetensors")
    os.symlink(target, tmp_path / "link.safetensors")
    with pytest.raises(ValueError, match="symbolic link"):
        SparseAutoencoder.load(tmp_path / "link.safetensors")
    with pytest.raises(ValueError, match="symbolic link"):
        sae.save(tmp_path / "link.safetensors")
    (tmp_path / "folder.safetensors").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        sae.save(tmp_path / "folder.safetensors")
    with pytest.raises(ValueError, match="dtype"):
        sae.save(tmp_path / "x.safetensors", dtype=torch.int8)


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(layer=3), "layer must be an int in 0 … 2"),
    (dict(layer="1"), "layer must be an int"),
    (dict(layer=True), "layer must be an int"),
    (dict(width=0), "width must be an int of at least 1"),
    (dict(width=8.0), "width must be an int"),
    (dict(k=300), "cannot exceed the width"),
    (dict(k=0), "k must be an int of at least 1"),
    (dict(steps=0), "steps must be an int of at least 1"),
    (dict(seed="0"), "seed must be an int"),
    (dict(lr=float("nan")), "lr must be a learning rate"),
    (dict(lr=5.0), "lr must be a learning rate"),
    (dict(batch_size=-1), "batch_size must be an int"),
])
def test_train_sae_refuses_impossible_settings(tiny, kwargs, match):
    model, tok = tiny
    settings = dict(layer=1, width=256, k=8, steps=1) | kwargs
    with pytest.raises(ValueError, match=match):
        bertlab.train_sae(model, tok, TEXTS, **settings)


@pytest.mark.parametrize("texts,match", [("one sentence", "for one text pass"), ([], "texts is empty"),
                                         (["fine", ""], r"texts\[1\]"), ([3], r"texts\[0\]")])
def test_bad_texts_are_named(tiny, sae, texts, match):
    model, tok = tiny
    with pytest.raises(ValueError, match=match):
        bertlab.train_sae(model, tok, texts, layer=1, width=16, k=2, steps=1)
    with pytest.raises(ValueError, match=match):
        sae_report(model, tok, sae, texts)


def test_an_autoencoder_for_another_model_or_a_model_without_mlm_head_is_refused(tiny, sae):
    model, tok = tiny
    wide = SparseAutoencoder(model.config.hidden_size + 2, 16, 2, 1)
    with pytest.raises(ValueError, match="use the model it was trained on"):
        sae_report(model, tok, wide, TEXTS)
    deep = SparseAutoencoder(model.config.hidden_size, 16, 2, 5)
    with pytest.raises(ValueError, match="use the model it was trained on"):
        steer(model, tok, deep, FILL, 0, 1.0)
    with pytest.raises(ValueError, match="must be a SparseAutoencoder"):
        sae_report(model, tok, "sae.safetensors", TEXTS)
    with pytest.raises(ValueError, match="no masked-LM head"):
        sae_report(model.bert, tok, sae, TEXTS)
    with pytest.raises(ValueError, match="encode takes floating-point residual vectors"):
        sae.encode(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="decode takes feature vectors"):
        sae.decode(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="cannot exceed the width"):
        SparseAutoencoder(8, 4, 5, 0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(text="No mask here."), "exactly one \\[MASK\\]"),
    (dict(text="[MASK] and [MASK]."), "exactly one \\[MASK\\]"),
    (dict(text=None), "exactly one \\[MASK\\]"),
    (dict(feature=256), "feature must be an int in 0 … 255"),
    (dict(feature=1.5), "feature must be an int"),
    (dict(value=float("inf")), "value must be a finite number"),
    (dict(value="high"), "value must be a finite number"),
    (dict(top_k=0), "top_k must be an int of at least 1"),
    (dict(positions="mine"), "positions must be 'mask'"),
])
def test_steer_refuses_bad_requests(tiny, sae, kwargs, match):
    model, tok = tiny
    args = dict(text=FILL, feature=0, value=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        steer(model, tok, sae, args.pop("text"), args.pop("feature"), args.pop("value"), **args)
    assert no_hooks_anywhere(model)


def test_reading_tools_refuse_bad_requests(tiny, sae):
    model, tok = tiny
    f = Features(model, tok, sae, TEXTS[:3])
    for call, match in ((lambda: f.top_contexts(0, n=0), "n must be an int"),
                        (lambda: f.top_contexts(sae.width), "feature must be an int in 0"),
                        (lambda: promoted_words(model, tok, sae, 0, k=0), "k must be an int"),
                        (lambda: promoted_words(model.bert, tok, sae, 0), "no masked-LM head"),
                        (lambda: trace(model, tok, sae, "   "), "pass the sentence"),
                        (lambda: trace(model, tok, sae, "fine", feature="3"), "feature must be an int"),
                        (lambda: Features(model, tok, sae, "one text"), "for one text pass"),
                        (lambda: compare_probes(model, tok, sae, task="sentiment"), "no probing set named"),
                        (lambda: compare_probes(model, tok, sae, test_size=1.5), "test_size must be a fraction")):
        with pytest.raises(ValueError, match=match):
            call()
    assert no_hooks_anywhere(model)


def test_the_figures_draw_the_results_and_refuse_anything_else(tiny, sae):
    import plotly.graph_objects as go

    from bertlab.inside.figures import sae_report_figure, steering_figure, trace_figure
    model, tok = tiny
    r = sae_report(model, tok, sae, TEXTS)
    fig = sae_report_figure({"trained": r, "as a dict": r.as_dict()})
    assert isinstance(fig, go.Figure) and len(fig.data) == 3 and list(fig.data[1].y) == [r.mlm_loss_spliced] * 2
    tokens, values = trace(model, tok, sae, FILL, 0)
    assert len(trace_figure(tokens, values, 0).data[0].y) == len(tokens)
    guesses = fill_mask(model, tok, FILL).guesses[0]
    assert len(steering_figure(guesses, steer(model, tok, sae, FILL, 0, 5.0)).data) == 2
    with pytest.raises(ValueError, match="non-empty dict"):
        sae_report_figure([r])
    with pytest.raises(ValueError, match="pass trace"):
        trace_figure(tokens, values[:-1])


def test_the_probe_comparison_uses_one_split_for_both(tiny, sae):
    model, tok = tiny
    p = compare_probes(model, tok, sae)
    assert p.n_train + p.n_test == 1738 and p.layer == sae.layer         # every token of the POS set
    assert p.raw > p.majority and 0 <= p.features <= 1 and "raw activations" in str(p)


def test_the_readme_quotes_the_shipped_card():
    # STYLE 19: the README's numbers about the shipped autoencoder are the card's, rounded as the README writes them
    from pathlib import Path

    from bertlab.inside import load_card_rows
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = load_card_rows()
    mini, rand = rows["sae: bertlab-mini"], rows["sae: random init"]
    for quoted in (f"FVU {mini['fvu']:.2f}", f"MLM loss {mini['mlm_loss_clean']:.2f} clean",
                   f"{mini['mlm_loss_spliced']:.2f} spliced in", f"{mini['mlm_loss_zero']:.2f} with the layer zeroed",
                   f"({mini['loss_recovered']:.0%} of the loss recovered)".replace("%", " %"),
                   f"(FVU {rand['fvu']:.2f})", f"token purity {rand['token_purity']:.2f} against {mini['token_purity']:.2f}",
                   f"({mini['probe_raw']:.3f} against {mini['probe_features']:.3f} held-out accuracy)",
                   f"at {mini['steps_per_s']:.1f} steps/s"):
        assert quoted in " ".join(readme.split()), f"README.md should say {quoted!r} (from the card)"


# ---- the adversarial round: what a hostile user tried -------------------------------------------------

def _edited(sae, tmp_path, name, change=None, **meta):
    """A copy of `sae`'s file with its tensors changed by `change` and its settings by `meta`."""
    from safetensors.torch import save_file
    tensors = {k: v.detach().clone().contiguous() for k, v in sae.state_dict().items()}
    if change:
        change(tensors)
    settings = {"format": FORMAT, "d_model": str(sae.d_model), "width": str(sae.width), "k": str(sae.k),
                "layer": str(sae.layer)} | meta
    save_file(tensors, str(tmp_path / name), metadata=settings)
    return tmp_path / name


def test_files_with_nan_integer_weights_or_oversized_settings_are_refused(sae, tmp_path):
    def nan(t):
        t["W_dec"][0, 0] = float("nan")

    def integer(t):
        t["b_enc"] = t["b_enc"].to(torch.int32)
    with pytest.raises(ValueError, match="W_dec holds nan or inf"):
        SparseAutoencoder.load(_edited(sae, tmp_path, "nan.safetensors", nan))
    with pytest.raises(ValueError, match="b_enc holds torch.int32 values"):
        SparseAutoencoder.load(_edited(sae, tmp_path, "int.safetensors", integer))
    # settings that would size a 40 GB autoencoder are checked against the tensors before anything is made
    with pytest.raises(ValueError, match="do not match its decoder"):
        SparseAutoencoder.load(_edited(sae, tmp_path, "huge.safetensors", d_model="100000", width="100000"))


def test_save_says_what_is_wrong_with_the_path(sae, tmp_path):
    with pytest.raises(ValueError, match="path must be a file path"):
        sae.save(None)
    with pytest.raises(FileNotFoundError, match="create the folder first"):
        sae.save(tmp_path / "missing" / "sae.safetensors")
    assert not (tmp_path / "missing").exists()


def test_nan_is_refused_not_passed_on(tiny, sae):
    model, tok = tiny
    with pytest.raises(ValueError, match="hold nan or inf"):
        sae.encode(torch.full((2, sae.d_model), float("nan")))
    broken = bertlab.load("bertlab-tiny")[0]
    with torch.no_grad():
        broken.bert.encoder.layer[0].output.LayerNorm.weight[0] = float("nan")
    with pytest.raises(ValueError, match="outputs nan or inf"):
        bertlab.train_sae(broken, tok, TEXTS, layer=1, width=16, k=2, steps=1)
    with pytest.raises(ValueError, match="pass texts with words in them"):
        bertlab.train_sae(model, tok, ["\x00\x01", "\u200b"], layer=1, width=16, k=2, steps=1)


def test_steer_takes_any_number_and_says_when_a_value_is_too_large(tiny, sae):
    import numpy as np
    model, tok = tiny
    plain = steer(model, tok, sae, FILL, 3, 2.0)
    assert steer(model, tok, sae, FILL, np.int64(3), torch.tensor(2.0)) == plain
    assert steer(model, tok, sae, FILL, torch.tensor(3), np.float32(2.0)) == plain
    with pytest.raises(ValueError, match="came out nan: the value is too large"):
        steer(model, tok, sae, FILL, 3, 1e30)
    with pytest.raises(ValueError, match="feature must be an int"):
        steer(model, tok, sae, FILL, torch.tensor([3]), 2.0)
    with pytest.raises(ValueError) as cut:
        steer(model, tok, sae, "word " * 2000 + "[MASK]", 3, 2.0)
    assert "cut off" in str(cut.value) and len(str(cut.value)) < 300      # the text is not quoted whole
    assert no_hooks_anywhere(model)


def test_save_under_a_file_is_named_in_words(sae, tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(FileNotFoundError, match="plain is not a folder"):
        sae.save(tmp_path / "plain" / "sae.safetensors")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_a_cpu_autoencoder_reads_a_model_on_cuda_as_it_reads_one_on_the_cpu(tiny):
    # a shipped autoencoder loads on the CPU while bertlab.load puts a model on CUDA when there is one
    model, tok = tiny
    sae = bertlab.train_sae(model, tok, ["The river bank was muddy.", "She sat on the bank."] * 4,
                            layer=1, width=64, k=4, steps=3)
    on_cpu = bertlab.steer(model, tok, sae, "The dog began to [MASK].", feature=0, value=2.0)
    on_cuda = bertlab.steer(copy.deepcopy(model).to("cuda"), tok, sae, "The dog began to [MASK].", feature=0, value=2.0)
    assert [g.token for g in on_cuda] == [g.token for g in on_cpu]


def _devices(sae: SparseAutoencoder) -> set[str]:
    return {t.device.type for t in list(sae.parameters()) + list(sae.buffers())}


def test_the_autoencoder_trains_on_the_models_device_and_stays_there(tiny, sae):
    # every weight and buffer (scale, max_activation too) where the model is: the CPU here
    model, _ = tiny
    assert _devices(sae) == {bertlab.probe.base_model(model).device.type} == {"cpu"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_on_cuda_the_autoencoder_trains_there_and_learns_what_the_cpu_learns(tiny):
    model, tok = tiny
    kw = dict(layer=1, width=256, k=8, steps=30, seed=0, batch_size=64)
    on_cpu = bertlab.train_sae(model, tok, TEXTS, **kw)
    gpu_model = copy.deepcopy(model).to("cuda")
    on_cuda = bertlab.train_sae(gpu_model, tok, TEXTS, **kw)
    assert _devices(on_cuda) == {"cuda"}
    # the same rows in the same order (one CPU generator): the same training up to float rounding
    assert torch.allclose(on_cuda.b_dec.cpu(), on_cpu.b_dec, atol=1e-5)
    r_cpu, r_cuda = sae_report(model, tok, on_cpu, TEXTS), sae_report(gpu_model, tok, on_cuda, TEXTS)
    assert abs(r_cuda.fvu - r_cpu.fvu) < 0.05
    steered = bertlab.steer(gpu_model, tok, on_cuda, FILL, feature=0, value=2.0)
    assert len(steered) == 5


def test_a_file_with_an_extra_tensor_is_refused_before_any_tensor_is_read(sae, tmp_path, monkeypatch):
    # every tensor was read into memory before its shape was checked: a file carrying a large extra tensor
    # (or one grown past its settings) cost its whole size in memory before being refused
    def extra(t):
        t["junk"] = torch.zeros(1000, 1000)
    path = _edited(sae, tmp_path, "extra.safetensors", extra)
    import safetensors

    reads = []
    real = safetensors.safe_open

    class Counting:
        def __init__(self, *a, **k):
            self.f = real(*a, **k)

        def __enter__(self):
            self.f.__enter__()
            return self

        def __exit__(self, *a):
            return self.f.__exit__(*a)

        def get_tensor(self, name):
            reads.append(name)
            return self.f.get_tensor(name)

        def __getattr__(self, name):
            return getattr(self.f, name)
    sae_module = importlib.import_module("bertlab.inside.sae")
    monkeypatch.setattr(sae_module, "safe_open", Counting)
    with pytest.raises(ValueError, match=r"holds tensors .*'junk': \(1000, 1000\).* the file is damaged or was edited"):
        SparseAutoencoder.load(path)
    assert reads == []
    assert SparseAutoencoder.load(sae.save(tmp_path / "fine.safetensors")).width == sae.width    # a good file reads
    assert sorted(reads) == sorted(sae.state_dict())
