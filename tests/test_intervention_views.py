"""Cause-and-effect figures and the MinimalPairs widget, driven as a reader drives them: every number shown
is compared with the probe computed by hand."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ipywidgets", reason="the widgets need the notebooks extra (ipywidgets)")

from bertlab.probe.minimal_pairs import compare_fill  # noqa: E402
from bertlab.probe.mixing import context_mixing, mixing_scoreboard  # noqa: E402
from bertlab.probe.patching import patch  # noqa: E402
from bertlab.viz import figures as F  # noqa: E402
from bertlab.viz import widgets as W  # noqa: E402
from bertlab.viz.views import same_figure  # noqa: E402
from testkit import bundled, no_hooks_anywhere  # noqa: E402

A = "Tom went to the [MASK] to open a savings account."
B = "Tom went to the [MASK] to open a birthday present."


@pytest.fixture(scope="module")
def mini():
    return bundled("bertlab-mini")


@pytest.fixture(autouse=True)
def shared(mini, monkeypatch):
    monkeypatch.setitem(W.LOADED, "bertlab-mini", mini)


@pytest.mark.slow
def test_patching_figure_is_the_effect_matrix_with_tokens_on_the_axis(mini):
    model, tok = mini
    p = patch(model, tok, A, B)
    fig = F.patching_figure(p)
    heat = fig.data[0]
    assert torch.allclose(torch.tensor(heat.z), p.effect, atol=1e-6)
    assert list(heat.y) == p.rows and len(heat.x) == len(p.tokens)
    assert "savings/birthday (9)" in heat.x and "bank" in fig.layout.title.text
    h = F.patching_figure(patch(model, tok, A, B, site="head"))
    assert list(h.data[0].x) == [f"head {i}" for i in range(model.config.num_attention_heads)]
    with pytest.raises(ValueError, match="result of patch"):
        F.patching_figure(compare_fill(model, tok, A, B))


@pytest.mark.slow
def test_fill_shift_and_mixing_figures(mini):
    model, tok = mini
    c = compare_fill(model, tok, A, B, top_k=6)
    fig = F.fill_shift_figure(c)
    assert list(fig.data[0].y) == [s.token for s in c.shifts]
    assert list(fig.data[0].x) == pytest.approx([s.p_a for s in c.shifts])
    assert list(fig.data[1].x) == pytest.approx([s.p_b for s in c.shifts])
    mix = context_mixing(model, tok, A, measures=["attention", "norm"])
    mf = F.mixing_figure(mix)
    assert len(mf.data) == 2 and max(abs(v) for v in mf.data[1].y) == pytest.approx(1.0)
    board = mixing_scoreboard(model, tok, [A, B], measures=["attention", "rollout"])
    sf = F.scoreboard_figure(board)
    assert list(sf.data[0].y) == list(board.summary)
    assert list(sf.data[0].x) == pytest.approx([m for m, _ in board.summary.values()])


@pytest.mark.slow
def test_minimal_pairs_widget_compares_then_patches_on_a_click(mini):
    model, tok = mini
    w = W.MinimalPairs(A, B)
    assert w.error is None and w.comparison.top_a.token == "bank"
    assert "bank" in w.summary.value and w.patching is None
    assert [s.token for s in w.comparison.shifts] == [s.token for s in compare_fill(model, tok, A, B, 8).shifts]
    w.patch_button.click()
    assert w.error is None and w.patching is not None
    assert torch.allclose(w.patching.effect, patch(model, tok, A, B).effect, atol=1e-5)
    assert torch.allclose(torch.tensor(w.patch_figure.data[0].z), w.patching.effect, atol=1e-6)
    assert "largest effect" in w.message.value
    w.site.value = "head"                                   # a new site: the heatmap follows
    assert w.patching.site == "head" and same_figure(w.patch_out.content["figure"], w.patch_figure)
    assert w.patching.effect.shape == (model.config.num_hidden_layers, model.config.num_attention_heads)
    assert no_hooks_anywhere(model)


@pytest.mark.slow
def test_an_edit_after_patching_redraws_the_heatmap_for_the_new_pair(mini):
    model, tok = mini
    w = W.MinimalPairs(A, B)
    w.patch_button.click()
    c = "Tom went to the [MASK] to open a birthday card."
    w.text_b.value = c
    assert w.error is None and w.patching is not None
    assert torch.allclose(w.patching.effect, patch(model, tok, A, c).effect, atol=1e-5)
    w.text_b.value = "Tom went to the [MASK] to open a bottle of red wine."       # not the same length
    assert w.patching is None and w.error is None and w.comparison is not None
    assert "same number of tokens" in w.message.value                             # a note, not an error
    assert "No heatmap for this pair" in w.patch_figure.layout.annotations[0].text   # its place says why
    w.text_b.value = c                                         # patchable again: the heatmap comes back
    assert w.patching is not None and w.error is None


@pytest.mark.slow
def test_before_the_first_click_no_sweep_runs(mini):
    w = W.MinimalPairs(A, B)
    w.direction.value = "noise"
    w.text_b.value = "Tom went to the [MASK] to open a birthday card."
    assert w.patching is None and w.patch_out.empty and w.error is None


@pytest.mark.slow
def test_minimal_pairs_widget_edits_and_mistakes_are_messages(mini):
    w = W.MinimalPairs(A, B)
    w.text_b.value = "Tom went to the [MASK] to open a bottle of red wine."
    assert w.error is None and w.comparison.text_b.endswith("red wine.")   # lengths may differ for the chart
    w.patch_button.click()
    assert "same number of tokens" in w.error and w.patching is None
    assert w.comparison is not None and same_figure(w.out.content["figure"], w.figure)   # the chart stays on screen
    w.text_a.value = "No mask in this one."
    assert "exactly one [MASK]" in w.error and w.comparison is None
    w.text_a.value = A
    assert w.error is None


@pytest.mark.parametrize("kwargs, message", [
    (dict(text_a=3), "text_a must be a str"),
    (dict(site="layers"), "site must be one of"),
    (dict(direction="up"), "direction must be"),
    (dict(top_k=0), "top_k must be"),
])
def test_minimal_pairs_widget_checks_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        W.MinimalPairs(**kwargs)


@pytest.mark.slow
def test_minimal_pairs_offers_bertlab_mini_for_minilm(minilm, monkeypatch):
    monkeypatch.setitem(W.LOADED, "minilm", minilm)
    w = W.MinimalPairs(A, B, model="minilm")
    assert "no masked-LM head" in w.error and w.switch.layout.display == ""
    w.switch.click()
    assert w.error is None and w.model_name == "bertlab-mini"
