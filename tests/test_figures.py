"""The figures show the model's own numbers: every trace is checked against a hand computation.

Built from real outputs (the MiniLM checkpoint and a tiny pre-trained BERT with MLM and NSP heads), each
figure must also share the house look, name the token and the number on hover, serialise to JSON with no
external address, and turn bad input into a ValueError that says what to do.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
import torch.nn.functional as F

from bertlab import viz
from bertlab.pretraining import mask_tokens
from bertlab.pretraining.schedule import lr_at
from bertlab.probe import AttentionMap, fill_mask, next_sentence
from bertlab.viz.figures import LAYOUT
from testkit import bundled

torch.set_num_threads(1)

TEXT_A, TEXT_B = "The river bank was muddy after the rain.", "She sat on the bank and watched the water."
SENTENCES = ["The river bank was muddy.", "He sat on the bank of the river.", "The bank raised its interest rates.",
             "I deposited money at the bank.", "The bank closed my account."]
SENSES = ["river", "river", "money", "money", "money"]
ATOL = 1e-5


def SEED(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# ---- shared fixtures: real model outputs ----------------------------------------------------------------

@pytest.fixture(scope="module")
def run(minilm):
    """MiniLM on a sentence pair with every intermediate: (model, tok, enc, out)."""
    model, tok = minilm
    enc = tok(TEXT_A, TEXT_B)
    with torch.no_grad():
        out = model(**enc, output_attentions=True, output_hidden_states=True)
    return model, tok, enc, out


@pytest.fixture(scope="module")
def tiny():
    """bertlab-tiny: the bundled BertForPreTraining (MLM + NSP heads)."""
    model, tok = bundled("bertlab-tiny")
    return model.eval(), tok


@pytest.fixture(scope="module")
def bank(minilm):
    """'bank' in five sentences: its vector at every layer, (5, L+1, H), read off hidden_states by hand."""
    model, tok = minilm
    vectors = []
    for s in SENTENCES:
        enc = tok(s)
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True)
        i = enc.tokens.index("bank")
        vectors.append(torch.stack([h[0, i] for h in out.hidden_states]))
    return torch.stack(vectors)


def by_hand_cosine_distances(x: torch.Tensor) -> np.ndarray:
    n = len(x)
    return np.array([[1.0 - F.cosine_similarity(x[i].double(), x[j].double(), dim=0).item() for j in range(n)]
                     for i in range(n)])


ROWS = [{"step": s, "loss": 9.0 - s / 100, "mlm_loss": 8.3 - s / 100, "nsp_loss": 0.7 - s / 1000,
         "mlm_acc": s / 1000, "nsp_acc": 0.5 + s / 1000, "lr": lr_at(s, 300, 30, 1e-3)} for s in range(20, 301, 20)]
ROWS_WITH_EVAL = ROWS + [{"step": 300, "eval": {"mlm_top1": 0.16, "nsp_accuracy": 0.7}}]


@pytest.fixture(scope="module")
def figures(run, bank):
    """One of every figure, for the checks every figure must pass."""
    model, tok, enc, out = run
    inputs, labels = mask_tokens(torch.tensor(enc.input_ids), tok, probability=0.4,
                                 generator=torch.Generator().manual_seed(0))
    fm = _fake_fill_mask()
    return {
        "embedding_sum": viz.embedding_sum(out, enc.tokens),
        "position_similarity": viz.position_similarity(model.embeddings.position_embeddings.weight, n=32),
        "attention_heatmap": viz.attention_heatmap(out, enc.tokens, layer=2, head=3),
        "attention_map_figure": viz.attention_map_figure(
            AttentionMap.from_output(out, enc.tokens, layer="all", head="all", words=True, hide_special=True)),
        "attention_grid": viz.attention_grid(out, enc.tokens),
        "masking_figure": viz.masking_figure(enc.tokens, inputs, labels, tok),
        "nsp_figure": viz.nsp_figure(0.8, TEXT_A, TEXT_B),
        "fill_mask_figure": viz.fill_mask_figure(fm),
        "fill_mask_layers_figure": viz.fill_mask_layers_figure(fm),
        "cosine_matrix": viz.cosine_matrix(by_hand_cosine_distances(bank[:, -1]), SENTENCES, word="bank"),
        "drift_by_layer": viz.drift_by_layer(bank, SENTENCES, word="bank"),
        "projection_2d": viz.projection_2d(bank[:, -1], SENTENCES, senses=SENSES, word="bank"),
        "training_curves": viz.training_curves(ROWS_WITH_EVAL),
        "lr_schedule": viz.lr_schedule(300, 0.1, 1e-3, rows=ROWS),
        "head_importance_figure": viz.head_importance_figure(torch.rand(6, 12, generator=SEED())),
        "ablation_figure": viz.ablation_figure(_fake_ablation()),
    }


def _fake_ablation(metric: str = "prediction"):
    from bertlab.probe import AblationEffect
    tokens = ["[CLS]", "the", "[MASK]", "flowed", ".", "[SEP]"]
    if metric == "output":
        return AblationEffect([(0, 1)], "output", tokens, [], change=torch.tensor([0.0, 0.1, 0.3, 0.2, 0.0, 0.05]))
    return AblationEffect([(0, 1), (1, 0)], "prediction", tokens, [2],
                          baseline=[("river", 0.5), ("water", 0.2)], guesses=[("water", 0.4), ("it", 0.3)],
                          compared=[("river", 0.5, 0.1), ("water", 0.2, 0.4), ("it", 0.05, 0.3)])


def _fake_fill_mask():
    from bertlab.probe import FillMask, Guess
    guesses = [[Guess("bank", 0.6), Guess("shore", 0.2), Guess("edge", 0.1)]]
    layers = [[[Guess("the", 0.1), Guess("a", 0.05), Guess("bank", 0.04)]], guesses]
    return FillMask("the river [MASK] was muddy .", ["[CLS]", "the", "river", "[MASK]", "was", "muddy", ".", "[SEP]"],
                    [3], guesses, layers)


# ---- the house look, for every figure -------------------------------------------------------------------------

def test_every_public_function_has_a_figure_here(figures):
    """Every figure of the subjects this file covers (inspection, intervention and replay have their own tests)."""
    from bertlab.viz.figures import attention, context, embeddings, fill_mask, heads, masking, nsp, training
    modules = (embeddings, attention, masking, nsp, fill_mask, heads, context, training)
    makers = {name for m in modules for name in m.__all__
              if name.islower() and name not in ("sinusoidal_positions", "sparse_ticks")}
    assert makers == set(figures)


def test_every_figure_is_importable_from_the_package_and_from_viz():
    """The figures package is one place to import from: each subject module's names are the package's, and
    every figure the package lists is bertlab.viz's too (the views' helper sparse_ticks aside)."""
    import importlib
    import pkgutil

    from bertlab.viz import figures as package
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"bertlab.viz.figures.{info.name}")
        if info.name == "look":
            continue                                        # the look's helpers are for figure makers
        for name in set(module.__all__) - {"MAX_TICKS", "ALL_HEADS", "largest_guess"}:   # constants, a replay helper
            assert name in package.__all__ and getattr(package, name) is getattr(module, name), (info.name, name)
    public = [n for n in package.__all__ if n.islower() and n not in ("sparse_ticks", "note_figure", "saliency_rows")]
    assert [n for n in public if getattr(viz, n, None) is not getattr(package, n)] == []


def test_every_figure_shares_the_look_and_serialises_offline(figures):
    template = go.Figure(layout=LAYOUT).layout.template
    for name, fig in figures.items():
        assert isinstance(fig, go.Figure), name
        assert fig.layout.template == template, name
        assert fig.layout.font.size == LAYOUT["font"]["size"], name
        assert fig.layout.title.text, name
        text = fig.to_json()
        json.loads(text)
        assert "http" not in text, name                     # no CDN, no remote image or font
        assert not fig.layout.images, name


def test_every_hover_names_what_it_shows_and_its_number(figures):
    for name, fig in figures.items():
        hovers = [t.hovertemplate for t in fig.data if t.hovertemplate]
        assert hovers, name
        for h in hovers:
            assert h.endswith("<extra></extra>"), (name, h)
        if name != "masking_figure":                        # the masking figure shows tokens, no numbers
            assert all(re.search(r"%\{[xyz]:\.3[fe]\}", h) for h in hovers), name


# ---- embeddings ---------------------------------------------------------------------------------------------

def test_embedding_sum_bars_are_the_norms_and_heatmaps_the_values(run):
    _, _, enc, out = run
    fig = viz.embedding_sum(out, enc.tokens, dims=20)
    bars = [t for t in fig.data if t.type == "bar"]
    maps = [t for t in fig.data if t.type == "heatmap"]
    assert [b.name for b in bars] == ["token", "segment", "position", "sum", "LayerNorm(sum)"]
    parts = out.embeddings
    by_hand = {"token": parts.token, "segment": parts.segment, "position": parts.position,
               "sum": parts.token + parts.segment + parts.position, "LayerNorm(sum)": parts.normed}
    T = len(enc.tokens)
    for bar, heat in zip(bars, maps):
        x = by_hand[bar.name][0].detach()                                   # (T, H)
        norms = [math.sqrt(sum(float(v) ** 2 for v in x[i])) for i in range(T)]
        np.testing.assert_allclose(arr(bar.y), norms, rtol=1e-4)
        np.testing.assert_allclose(arr(heat.z), x[:, :20].numpy(), atol=ATOL)
        assert [lab.rsplit(" (", 1)[0] for lab in bar.x] == enc.tokens
        assert "%{x}" in bar.hovertemplate and "%{y}" in heat.hovertemplate   # the token label
    # segment B's vector differs from A's: the bars show where sentence B starts
    seg = arr(bars[1].y)
    first_b = enc.token_type_ids.index(1)
    assert np.allclose(seg[:first_b], seg[0]) and not np.isclose(seg[first_b], seg[0])


def test_embedding_sum_rejects_more_tokens_than_positions(run):
    _, _, enc, out = run
    with pytest.raises(ValueError, match="tokens given"):
        viz.embedding_sum(out, enc.tokens + ["extra"])
    with pytest.raises(ValueError, match="batch_index"):
        viz.embedding_sum(out, enc.tokens, batch_index=1)


def test_sinusoidal_positions_follow_the_formula():
    for d in (16, 7):
        pe = viz.sinusoidal_positions(50, d)
        assert pe.shape == (50, d) and pe.dtype == torch.float32
        for pos in (0, 1, 17, 49):
            for j in range(d):
                i2 = j - j % 2                                              # the 2i of the pair
                angle = pos / 10000 ** (i2 / d)
                want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
                assert abs(pe[pos, j].item() - want) < 1e-6, (d, pos, j)
    with pytest.raises(ValueError):
        viz.sinusoidal_positions(0, 8)


def test_position_similarity_is_the_cosine_matrix(minilm):
    model, _ = minilm
    w = model.embeddings.position_embeddings.weight.detach()
    fig = viz.position_similarity(model.embeddings.position_embeddings, n=24)   # an nn.Embedding works too
    learned, sinus = fig.data
    z = arr(learned.z)
    assert z.shape == (24, 24)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-5)
    for i, j in [(0, 0), (0, 1), (3, 17), (23, 5)]:
        assert abs(z[i, j] - F.cosine_similarity(w[i], w[j], dim=0).item()) < 1e-5
    pe = viz.sinusoidal_positions(24, w.shape[1])
    np.testing.assert_allclose(arr(sinus.z), F.normalize(pe, dim=-1) @ F.normalize(pe, dim=-1).T, atol=1e-5)
    assert len(viz.position_similarity(w, n=8, compare_sinusoidal=False).data) == 1
    with pytest.raises(ValueError, match="n must be"):
        viz.position_similarity(w, n=w.shape[0] + 1)
    with pytest.raises(ValueError, match="2-D"):
        viz.position_similarity(w[0])


# ---- attention ----------------------------------------------------------------------------------------------

def test_attention_heatmap_is_one_head(run):
    _, _, enc, out = run
    fig = viz.attention_heatmap(out, enc.tokens, layer=2, head=3)
    np.testing.assert_allclose(arr(fig.data[0].z), out.attentions[2][0, 3].numpy(), atol=ATOL)
    assert list(fig.data[0].y)[1] == f"{enc.tokens[1]} (1)" and list(fig.data[0].x)[4] == f"{enc.tokens[4]} (4)"
    assert fig.data[0].hovertemplate.startswith("%{y} → %{x}")   # hover names both tokens from the axes
    assert fig.data[0].customdata is None                           # no T² strings to send
    with pytest.raises(ValueError, match="layer 6 does not exist"):
        viz.attention_heatmap(out, enc.tokens, layer=6)


def test_attention_grid_cells_are_the_heads(run):
    _, _, enc, out = run
    L, A = len(out.attentions), out.attentions[0].shape[1]
    fig = viz.attention_grid(out, enc.tokens)
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == L * A == 72
    cell = heat[2 * A + 3]
    np.testing.assert_allclose(arr(cell.z), out.attentions[2][0, 3].numpy(), atol=ATOL)
    assert cell.hovertemplate.startswith("layer 2, head 3<br>%{y} → %{x}")    # query and key tokens
    assert [lab.rsplit(" (", 1)[0] for lab in cell.x] == enc.tokens
    assert {t.coloraxis for t in heat} == {"coloraxis"}                      # one shared colour scale
    assert fig.layout.coloraxis.cmin == 0.0
    assert abs(fig.layout.coloraxis.cmax - max(a.max().item() for a in out.attentions)) < 1e-6
    assert fig.layout.xaxis.showticklabels is False and fig.layout.yaxis.showticklabels is False


@pytest.mark.slow
def test_attention_grid_is_readable_at_128_tokens(minilm):
    model, tok = minilm
    enc = tok(" ".join(["the river bank was muddy after the rain"] * 30), max_length=128, truncation=True)
    assert len(enc.tokens) == 128
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    fig = viz.attention_grid(out, enc.tokens)
    assert arr(fig.data[-1].z).shape == (128, 128)
    assert fig.layout.width <= 12 * 130 + 200 and fig.layout.height <= 6 * 130 + 150   # ~120 px a cell
    assert len(fig.to_json()) < 12e6                                        # weights travel as binary float32
    short = viz.attention_grid(out, enc.tokens, max_tokens=16)
    assert arr(short.data[0].z).shape == (16, 16) and "first 16 of 128 tokens" in short.layout.title.text


def test_attention_figures_explain_bad_input(run, minilm):
    model, tok, enc, out = run
    with torch.no_grad():
        plain = model(**enc)
    for make in (viz.attention_heatmap, viz.attention_grid):
        with pytest.raises(ValueError, match="output_attentions=True"):
            make(plain, enc.tokens)
        with pytest.raises(ValueError, match="tokens given"):
            make(out, enc.tokens + ["[PAD]"])
        with pytest.raises(ValueError, match="batch_index"):
            make(out, enc.tokens, batch_index=2)


# ---- masking and NSP --------------------------------------------------------------------------------------------

def test_masking_figure_counts_and_colours_match_the_labels(run):
    _, tok, enc, _ = run
    ids = torch.tensor(enc.input_ids)
    inputs, labels = mask_tokens(ids, tok, probability=0.5, generator=torch.Generator().manual_seed(1))
    fig = viz.masking_figure(enc.tokens, inputs, labels, tok, per_row=8)
    chosen = labels != -100
    want = dict(n=int(chosen.sum()), m=int((chosen & (inputs == tok.mask_id)).sum()),
                k=int((chosen & (inputs == ids)).sum()))
    want["r"] = want["n"] - want["m"] - want["k"]
    got = re.match(r"(\d+) of (\d+) tokens chosen: (\d+) \[MASK\], (\d+) random, (\d+) kept", fig.layout.title.text)
    assert got and tuple(map(int, got.groups())) == (want["n"], len(ids), want["m"], want["r"], want["k"])
    z = [v for row in fig.data[0].z for v in row if v is not None]
    assert len(z) == len(ids) and sum(v != 0 for v in z) == want["n"] and z.count(1) == want["m"]


def test_masking_figure_by_hand(run):
    _, tok, enc, _ = run
    ids = torch.tensor(enc.input_ids)
    inputs, labels = ids.clone(), torch.full_like(ids, -100)
    labels[[1, 2, 3]] = ids[[1, 2, 3]]
    inputs[1] = tok.mask_id
    inputs[2] = tok.token_to_id("zebra")                                     # random
    fig = viz.masking_figure(enc.tokens, inputs[None], labels[None], tok, per_row=100)
    assert fig.layout.title.text.startswith(f"3 of {len(ids)} tokens chosen: 1 [MASK], 1 random, 1 kept")
    heat = fig.data[0]
    assert list(heat.z[0][:5]) == [0, 1, 2, 3, 0]
    assert heat.text[0][2] == f"{enc.tokens[2]}→zebra"
    assert heat.customdata[0][2][1] == enc.tokens[2] and "zebra" in heat.customdata[0][2][3]
    assert "%{customdata[1]}" in heat.hovertemplate                           # the original token on hover
    assert [t.name for t in fig.data[1:]] == ["not chosen", "chosen → [MASK]", "chosen → random token",
                                             "chosen → kept"]
    with pytest.raises(ValueError, match="tokens of the unmasked text"):
        viz.masking_figure(enc.tokens[::-1], inputs, labels, tok)
    with pytest.raises(ValueError, match="same shape"):
        viz.masking_figure(enc.tokens, inputs, labels[:-1], tok)
    with pytest.raises(ValueError, match="tokens given"):
        viz.masking_figure(enc.tokens + ["x"], inputs, labels, tok)


def test_nsp_figure_shows_the_probe(tiny):
    model, tok = tiny
    p = next_sentence(model, tok, TEXT_A, TEXT_B)
    fig = viz.nsp_figure(torch.tensor(p), TEXT_A, TEXT_B)
    isnext, notnext = fig.data
    assert isnext.name == "IsNext" and notnext.name == "NotNext"
    assert abs(isnext.x[0] - p) < 1e-6 and abs(notnext.x[0] - (1 - p)) < 1e-6
    assert f"{p:.3f}" in fig.layout.title.text and "river bank" in fig.layout.title.text
    assert list(isnext.customdata[0]) == [TEXT_A, TEXT_B]
    for bad in (1.5, -0.1, "high", [0.2, 0.8]):
        with pytest.raises(ValueError):
            viz.nsp_figure(bad)


# ---- fill-mask ----------------------------------------------------------------------------------------------

def test_fill_mask_figures_show_the_guesses(tiny):
    model, tok = tiny
    result = fill_mask(model, tok, "the river [MASK] was muddy .", top_k=4, by_layer=True)
    bars = viz.fill_mask_figure(result).data[0]
    assert list(bars.customdata) == [g.token for g in result.guesses[0]]
    np.testing.assert_allclose(arr(bars.x), [g.probability for g in result.guesses[0]])
    layers = viz.fill_mask_layers_figure(result).data[0]
    assert len(layers.z) == model.config.num_hidden_layers
    np.testing.assert_allclose(arr(layers.z), [[g.probability for g in r[0]] for r in result.by_layer])
    assert [list(r) for r in layers.text] == [[g.token for g in r[0]] for r in result.by_layer]
    assert "%{text}" in layers.hovertemplate and "%{z:.3f}" in layers.hovertemplate
    # the last layer's reading is the model's answer
    assert list(layers.text[-1]) == [g.token for g in result.guesses[0]]
    with pytest.raises(ValueError, match="by_layer=True"):
        viz.fill_mask_layers_figure(fill_mask(model, tok, "the river [MASK] was muddy ."))
    with pytest.raises(ValueError, match="mask_index"):
        viz.fill_mask_figure(result, mask_index=1)
    with pytest.raises(ValueError, match="FillMask"):
        viz.fill_mask_figure({"guesses": []})


# ---- contextual vectors -------------------------------------------------------------------------------------

def test_cosine_matrix_is_the_distances(bank):
    d = by_hand_cosine_distances(bank[:, -1])
    fig = viz.cosine_matrix(torch.tensor(d), SENTENCES, word="bank")
    heat = fig.data[0]
    np.testing.assert_allclose(arr(heat.z), d, atol=1e-6)
    assert heat.texttemplate == "%{z:.2f}"
    assert list(heat.customdata[0][3]) == [SENTENCES[0], SENTENCES[3]]            # whole sentences on hover
    assert "'bank'" in fig.layout.title.text
    # a per-layer stack: `layer` picks one
    stack = np.stack([by_hand_cosine_distances(bank[:, l]) for l in range(bank.shape[1])])
    np.testing.assert_allclose(arr(viz.cosine_matrix(stack, SENTENCES, layer=2).data[0].z), stack[2], atol=1e-6)
    # the river senses are closer to each other than to the money senses
    assert d[0, 1] < min(d[0, 2:].min(), d[1, 2:].min())
    with pytest.raises(ValueError, match="one label"):
        viz.cosine_matrix(d, SENTENCES[:3])
    with pytest.raises(ValueError, match="square"):
        viz.cosine_matrix(d[:, :3], SENTENCES)


def test_drift_by_layer_is_the_distance_at_each_layer(bank):
    n, L1, _ = bank.shape
    fig = viz.drift_by_layer(bank, SENTENCES, reference=0)
    assert len(fig.data) == n - 1
    for trace, j in zip(fig.data, range(1, n)):
        assert list(trace.x) == list(range(L1))
        want = [1 - F.cosine_similarity(bank[0, l], bank[j, l], dim=0).item() for l in range(L1)]
        np.testing.assert_allclose(arr(trace.y), want, atol=1e-5)
        assert list(trace.customdata[0]) == [SENTENCES[0], SENTENCES[j]]
    assert len(viz.drift_by_layer(bank, SENTENCES, reference=None).data) == n * (n - 1) // 2
    with pytest.raises(ValueError, match="reference"):
        viz.drift_by_layer(bank, SENTENCES, reference=5)
    with pytest.raises(ValueError, match="3-D"):
        viz.drift_by_layer(bank[:, -1], SENTENCES)


def test_projection_2d_is_pca_coloured_by_sense(bank):
    x = bank[:, -1].double().numpy()
    xc = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    want = xc @ vt[:2].T                                                    # (n, 2), up to the sign of each axis
    fig = viz.projection_2d(bank[:, -1], SENTENCES, senses=SENSES)
    assert [t.name for t in fig.data] == ["river", "money"]
    got = np.zeros((len(SENTENCES), 2))
    for t in fig.data:
        for (px, py), cd in zip(zip(t.x, t.y), t.customdata):
            got[SENTENCES.index(cd[0])] = (px, py)
            assert cd[1] == t.name
    for axis in range(2):
        sign = np.sign(got[:, axis] @ want[:, axis])
        np.testing.assert_allclose(got[:, axis], sign * want[:, axis], atol=1e-4)
    share = s[0] ** 2 / (s ** 2).sum()
    assert f"{100 * share:.0f} % of variance" in fig.layout.xaxis.title.text
    # the same vectors from the (n, L+1, H) stack
    np.testing.assert_allclose(arr(viz.projection_2d(bank, SENTENCES).data[0].x), got[:, 0], atol=1e-5)
    with pytest.raises(ValueError, match="pca"):
        viz.projection_2d(bank[:, -1], SENTENCES, method="tsne")
    with pytest.raises(ValueError, match="one sense per vector"):
        viz.projection_2d(bank[:, -1], SENTENCES, senses=SENSES[:2])


# ---- training ---------------------------------------------------------------------------------------------------

def test_training_curves_are_the_rows(tmp_path: Path):
    fig = viz.training_curves(ROWS_WITH_EVAL)
    traces = {t.meta: t for t in fig.data}
    assert set(traces) == {"loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc"}
    for key, t in traces.items():
        assert list(t.x) == [r["step"] for r in ROWS]                      # the eval line is skipped
        np.testing.assert_allclose(arr(t.y), [r[key] for r in ROWS])
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS_WITH_EVAL))
    assert list(viz.training_curves(path).data[1].y) == list(fig.data[1].y)
    with pytest.raises(ValueError, match="no training rows"):
        viz.training_curves(ROWS_WITH_EVAL[-1:])
    with pytest.raises(ValueError, match="single dict"):
        viz.training_curves(ROWS[0])


def test_lr_schedule_peaks_after_warmup_and_ends_at_zero():
    steps, share, peak = 1000, 0.1, 5e-4
    warmup = 100                                                     # 10 % of the steps
    fig = viz.lr_schedule(steps, share, peak)
    x, y = list(fig.data[0].x), arr(fig.data[0].y)
    assert x[0] == 0 and x[-1] == steps and warmup in x
    assert abs(y.max() - peak) < 1e-12 and abs(y[x.index(warmup)] - peak) < 1e-12 and y[-1] == 0.0
    np.testing.assert_allclose(y, [lr_at(s, steps, warmup, peak) for s in x])
    assert "over 100 steps (10%)" in fig.layout.title.text
    logged = viz.lr_schedule(300, 0.1, 1e-3, rows=ROWS_WITH_EVAL).data[1]
    assert list(logged.x) == [r["step"] for r in ROWS] and list(logged.y) == [r["lr"] for r in ROWS]
    flat = arr(viz.lr_schedule(50, 0.0, 1e-3).data[0].y)
    assert flat[0] == 1e-3 and "end of warm-up" not in str(viz.lr_schedule(50, 0, 1e-3).layout.annotations)


@pytest.mark.parametrize("bad, words", [
    ((0, 0.1, 1e-3), "steps must be a whole number ≥ 1, got 0"), ((100.5, 0.1, 1e-3), "steps must be"),
    ((True, 0.1, 1e-3), "steps must be"),
    ((300, 30, 1e-3), r"not a count of steps: for 30 of 300 steps pass warmup=0\.1"),     # the old spelling
    ((100, 1.0, 1e-3), r"warmup=1\.0 is out of range: it must be a finite number in \[0, 1\)"),
    ((100, -0.1, 1e-3), "warmup=-0.1 is out of range"), ((100, math.nan, 1e-3), "warmup=nan"),
    ((100, "0.1", 1e-3), r"warmup='0\.1' \(str\)"), ((100, True, 1e-3), "warmup=True"),
    ((100, 0.1, 0.0), "peak must be a positive learning rate"),
])
def test_lr_schedule_refuses_bad_input_and_says_warmup_is_a_share(bad, words):
    with pytest.raises(ValueError, match=words):
        viz.lr_schedule(*bad)


def test_lr_schedule_takes_numpy_numbers_as_python_ones():
    # np.float32(1e-4) (a peak read from an array) was refused as "not a positive learning rate"
    ref = viz.lr_schedule(100, 0.1, 1e-4).data[0].y
    for args in [(np.int64(100), np.float64(0.1), np.float32(1e-4)), (100, 0.1, np.float64(1e-4))]:
        np.testing.assert_allclose(viz.lr_schedule(*args).data[0].y, ref, rtol=1e-6)
    with pytest.raises(ValueError, match="peak must be a positive learning rate"):
        viz.lr_schedule(100, 0.1, np.float32("nan"))


def test_head_importance_figure_is_the_scores():
    from dataclasses import dataclass

    @dataclass
    class Importance:
        scores: torch.Tensor

    scores = torch.rand(4, 6, generator=torch.Generator().manual_seed(2))
    for given in (scores, Importance(scores)):
        heat = viz.head_importance_figure(given).data[0]
        np.testing.assert_allclose(arr(heat.z), scores.numpy(), atol=1e-7)
        assert "layer %{y}, head %{x}" in heat.hovertemplate
    with pytest.raises(ValueError, match="2-D"):
        viz.head_importance_figure(scores[0])
    with pytest.raises(ValueError, match="NaN"):
        viz.head_importance_figure(torch.full((2, 2), float("nan")))


def test_ablation_figure_draws_both_runs_of_every_guess_or_the_change_per_token():
    effect = _fake_ablation()
    fig = viz.ablation_figure(effect)
    on, off = fig.data
    assert list(on.y) == list(off.y) == ["river (0)", "water (1)", "it (2)"]          # the union, baseline first
    np.testing.assert_allclose(arr(on.x), [0.5, 0.2, 0.05])
    np.testing.assert_allclose(arr(off.x), [0.1, 0.4, 0.3])
    assert off.name == "off: L0H1, L1H0" and "L0H1, L1H0" in fig.layout.title.text
    change = viz.ablation_figure(_fake_ablation("output"))
    assert list(change.data[0].x)[2] == "[MASK] (2)"
    np.testing.assert_allclose(arr(change.data[0].y), [0.0, 0.1, 0.3, 0.2, 0.0, 0.05], atol=1e-7)
    with pytest.raises(ValueError, match="AblationEffect"):
        viz.ablation_figure(torch.zeros(3))

