"""bertlab.head_atlas: its shares are head_types's shares on the same texts, two heads with the same weights
stand at distance zero, the placement keeps the distances' structure, tags add the syntactic relations, the
figure browses every head, and the requests it must refuse."""

from __future__ import annotations

import copy

import plotly.graph_objects as go
import pytest
import torch

import bertlab
from bertlab.inside import HeadAtlas, pos_corpus
from bertlab.inside.figures import atlas_figure
from testkit import no_hooks_anywhere

TEXTS = ["The dog began to bark at the mailman.", "We walked along the river after lunch, slowly.",
         "She paid for the bread with her card.", "The children played in the park all afternoon!"]


@pytest.fixture(scope="module")
def tiny():
    return bertlab.load("bertlab-tiny")


@pytest.fixture(scope="module")
def atlas(tiny):
    model, tok = tiny
    return bertlab.head_atlas(model, tok, TEXTS)


def test_the_shares_are_head_types_shares(tiny, atlas):
    model, tok = tiny
    ht = bertlab.head_types(model, tok, TEXTS)
    for m in ("previous", "next", "self", "[CLS]", "[SEP]", "punctuation"):
        assert torch.allclose(atlas.share[m], ht.share[m], atol=1e-6), m
    assert torch.allclose(atlas.sharpness, 1 - ht.entropy / ht.uniform_entropy, atol=1e-5)
    assert atlas.labels == ht.labels and atlas.n_tokens == ht.n_tokens
    assert no_hooks_anywhere(model)


def test_two_heads_with_the_same_weights_stand_at_distance_zero(tiny):
    model, tok = tiny
    twin = copy.deepcopy(model)
    att = twin.bert.encoder.layer[0].attention.self
    d = att.attention_head_size if hasattr(att, "attention_head_size") else model.config.hidden_size // model.config.num_attention_heads
    with torch.no_grad():
        for lin in (att.query, att.key):
            lin.weight[d:2 * d] = lin.weight[:d]
            lin.bias[d:2 * d] = lin.bias[:d]
    a = bertlab.head_atlas(twin, tok, TEXTS)
    H = model.config.num_attention_heads
    assert a.distance[0, 1] == pytest.approx(0.0, abs=1e-3)
    assert torch.allclose(a.coords[0], a.coords[1], atol=1e-3)
    assert a.nearest(0, 0, 1)[0][:2] == (0, 1)
    off = a.distance + torch.eye(len(a.distance)) * 9
    assert off.min() >= 0 and torch.allclose(a.distance, a.distance.t()) and a.distance.diagonal().abs().max() == 0
    assert a.distance.shape == (model.config.num_hidden_layers * H,) * 2


def test_the_placement_keeps_far_heads_apart(atlas):
    far = atlas.distance.flatten().argmax()
    n = len(atlas.distance)
    i, j = int(far) // n, int(far) % n
    near = (atlas.distance + torch.eye(n) * 9).flatten().argmin()
    a, b = int(near) // n, int(near) % n
    assert (atlas.coords[i] - atlas.coords[j]).norm() > (atlas.coords[a] - atlas.coords[b]).norm()


def test_tags_add_the_syntactic_relations(tiny):
    model, tok = tiny
    texts, tags = pos_corpus()
    assert len(texts) == 260 and all(len(t.split()) == len(g) for t, g in zip(texts, tags))
    a = bertlab.head_atlas(model, tok, texts[:12], tags[:12])
    assert {"det → noun", "noun → det"} <= set(a.share)
    assert all(0 <= float(a.share[r].min()) and float(a.share[r].max()) <= 1 for r in ("det → noun", "noun → det"))
    best = a.top("det → noun", 1)[0]
    assert best[2] == pytest.approx(float(a.share["det → noun"].max()))


def test_examples_and_the_figure_browse_every_head(atlas):
    tokens, pattern = atlas.example(1, 1)
    assert pattern.shape == (len(tokens), len(tokens))
    assert torch.allclose(pattern.sum(-1), torch.ones(len(tokens)), atol=1e-5)
    fig = atlas_figure(atlas)
    L, H = atlas.shape
    assert isinstance(fig, go.Figure) and len(fig.layout.updatemenus[0].buttons) == L * H
    heatmaps = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert len(heatmaps) == L * H and sum(bool(t.visible) for t in heatmaps) == 1


def test_requests_it_must_refuse(tiny, atlas):
    model, tok = tiny
    for texts, match in (("a sentence", "for one text pass"), ([], "texts is empty"), ([None], r"texts\[0\]")):
        with pytest.raises(ValueError, match=match):
            bertlab.head_atlas(model, tok, texts)
    with pytest.raises(ValueError, match="one list of tags per text"):
        bertlab.head_atlas(model, tok, TEXTS, tags=[["DET"]])
    with pytest.raises(ValueError, match=r"tags\[0\] must be one str tag per whitespace-separated word"):
        bertlab.head_atlas(model, tok, TEXTS, tags=[["DET"]] * len(TEXTS))
    with pytest.raises(ValueError, match="expected a bertlab model"):
        bertlab.head_atlas("bertlab-tiny", tok, TEXTS)
    with pytest.raises(ValueError, match="layer must be an int in 0 … 1"):
        atlas.example(2, 0)
    with pytest.raises(ValueError, match="head must be an int"):
        atlas.example(0, "1")
    with pytest.raises(ValueError, match="index must be an int"):
        atlas.example(0, 0, index=5)
    with pytest.raises(ValueError, match="no measure 'det → noun'"):
        atlas.top("det → noun")
    with pytest.raises(ValueError, match="atlas_figure takes a HeadAtlas"):
        atlas_figure({"share": {}})
    assert isinstance(atlas, HeadAtlas)


# ---- the adversarial round: what a hostile user tried -----------------------------------------------------

def test_counts_are_checked_and_nearest_never_lists_the_head_itself(atlas):
    L, H = atlas.shape
    for bad in (0, -3, "2", 2.5, True):
        with pytest.raises(ValueError, match="n must be an int of at least 1"):
            atlas.nearest(0, 0, n=bad)
        with pytest.raises(ValueError, match="n must be an int of at least 1"):
            atlas.top("previous", n=bad)
    everyone = atlas.nearest(0, 0, n=10**6)
    assert len(everyone) == L * H - 1 and (0, 0) not in [(l, h) for l, h, _ in everyone]
    assert all(d == d and d != float("inf") for _, _, d in everyone)
    with pytest.raises(ValueError, match="need tags="):
        atlas.top("det → noun")
    with pytest.raises(ValueError, match="no measure"):
        atlas.top(["previous"])


def test_a_model_that_computes_nan_is_named(tiny):
    model, tok = tiny
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.bert.encoder.layer[0].output.LayerNorm.weight[0] = float("nan")
    with pytest.raises(ValueError, match="texts\\[0\\] is nan or inf"):
        bertlab.head_atlas(broken, tok, TEXTS[:2])
