"""The steering view and the head-atlas view (bertlab.viz.views.steer / atlas): what they show is the library's
answer exactly (bertlab.steer, steered_probabilities, the atlas's own patterns), Python drives them as a person
does and reads the result back at once, hooks never outlive a change, the saved data lets the book answer a
click without a kernel, and every bad argument or interaction is a one-line message, never a traceback."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bertlab
from bertlab.inside import SparseAutoencoder, steered_probabilities
from bertlab.viz import HeadAtlasView, SteeringView
from bertlab.viz.views import unpack
from testkit import bundled, no_hooks_anywhere

TEXTS = ["The dog began to bark at the mailman.", "We walked along the river after lunch.",
         "She paid for the bread with her card.", "The children played in the park all afternoon.",
         "It rained all day, so we stayed inside.", "He read a book about ships and the sea."]
FILL = "The dog began to [MASK] at the mailman."


@pytest.fixture(scope="module")
def tiny():
    return bundled("bertlab-tiny")


@pytest.fixture(scope="module")
def sae(tiny):
    model, tok = tiny
    return bertlab.train_sae(model, tok, TEXTS, layer=1, width=128, k=8, steps=20, seed=0, batch_size=64)


@pytest.fixture(scope="module")
def features(tiny, sae):
    from bertlab.inside import Features
    return Features(*tiny, sae, TEXTS)


@pytest.fixture
def view(tiny, sae, features):
    return SteeringView(FILL, model=tiny, sae=sae, feature=5, value=3.0, top_k=5, features=features)


@pytest.fixture(scope="module")
def atlas(tiny):
    return bertlab.head_atlas(*tiny, TEXTS[:4])


# ---- the steering view ------------------------------------------------------------------------------------

def test_the_view_shows_what_steer_answers(tiny, sae, view):
    model, tok = tiny
    assert view.error is None and view.figure is not None
    want = bertlab.steer(model, tok, sae, FILL, 5, 3.0, top_k=5)
    assert [(g.token, g.probability) for g in view.guesses] == [(g.token, g.probability) for g in want]
    plain = bertlab.fill_mask(model, tok, FILL, top_k=5).guesses[0]
    assert [g.token for g in view.baseline] == [g.token for g in plain]
    assert np.allclose([g.probability for g in view.baseline], [g.probability for g in plain], atol=1e-6)
    # every bar is the library's number for its token, clamped and as it is
    after = steered_probabilities(model, tok, sae, FILL, 5, 3.0)
    before = steered_probabilities(model, tok, sae, FILL, 5, None)
    for token, (b, a) in view.probabilities.items():
        i = tok.token_to_id(token)
        assert (b, a) == (float(before[i]), float(after[i]))
    assert no_hooks_anywhere(model)


def test_at_its_own_value_the_clamped_bars_are_the_unclamped_ones(view):
    view.value.value = view.own_value
    assert view.error is None
    assert all(b == a for b, a in view.probabilities.values())
    assert [g.token for g in view.guesses] == [g.token for g in view.baseline]


def test_moving_the_controls_redraws_synchronously(tiny, sae, view):
    model, tok = tiny
    view.value.value = 6.0
    assert view.guesses == bertlab.steer(model, tok, sae, FILL, 5, 6.0, top_k=5)
    view.where.value = "all"
    assert view.guesses == bertlab.steer(model, tok, sae, FILL, 5, 6.0, top_k=5, positions="all")
    assert "every token" in view.figure.layout.title.text
    # a feature from the drop-down becomes the feature; the slider spans its range
    offered = [v for v in view.pick.values if v >= 0]
    assert offered, "the drop-down offers the features largest at the [MASK]"
    view.pick.value = offered[0]
    assert view.feature.value == offered[0] and view.error is None
    assert view.value.max == pytest.approx(3 * float(sae.max_activation[offered[0]]) or 3.0, abs=0.01)
    assert f"feature {offered[0]}" in view.about.value and "fires most on" in view.about.value
    # a new sentence: new suggestions, the same feature kept
    view.text.value = "We walked along the [MASK] after lunch."
    assert view.error is None and view.feature.value == offered[0]
    assert view.guesses == bertlab.steer(model, tok, sae, view.text.value, offered[0], view.value.value, top_k=5,
                                         positions="all")
    # the browser's event is applied exactly as a Python change
    view.view.event = {"id": view.value.id, "value": 1.5, "n": 7}
    assert view.value.value == 1.5 and view.view.done == 7
    assert no_hooks_anywhere(model)


@pytest.mark.parametrize("text,match", [
    ("The dog began to bark.", "exactly one \\[MASK\\]"),
    ("The [MASK] began to [MASK].", "exactly one \\[MASK\\]"),
    ("", "exactly one \\[MASK\\]"),
    ("word " * 600 + "[MASK]", "tokens"),
])
def test_a_bad_sentence_is_a_message_not_a_traceback(view, text, match):
    view.text.value = text
    assert view.error is not None and __import__("re").search(match, view.error), view.error
    assert view.figure is None and view.out.empty
    view.text.value = FILL                                  # and it recovers
    assert view.error is None and view.figure is not None


@pytest.mark.parametrize("kwargs,match", [
    (dict(text=3), "text must be a str"),
    (dict(top_k=0), "top_k must be a whole number"),
    (dict(top_k=True), "top_k must be a whole number"),
    (dict(top_k=31), "top_k must be a whole number"),
    (dict(where="everywhere"), "where must be 'mask'"),
    (dict(value=float("nan")), "value must be a finite number"),
    (dict(value=float("inf")), "value must be a finite number"),
    (dict(value="high"), "value must be a finite number"),
    (dict(value=True), "value must be a finite number"),
    (dict(feature=128), "feature must be an int in 0 … 127"),
    (dict(feature="5"), "feature must be an int"),
    (dict(feature=2.0), "feature must be an int"),
    (dict(features="feats"), "features must be a bertlab.inside.Features"),
    (dict(sae="sae.safetensors"), "sae must be a SparseAutoencoder"),
    (dict(model=42), "model must be a name"),
])
def test_bad_arguments_are_named(tiny, sae, kwargs, match):
    args = dict(text=FILL, model=tiny, sae=sae, feature=5)
    with pytest.raises(ValueError, match=match):
        SteeringView(**{**args, **kwargs})


def test_an_autoencoder_or_features_of_another_model_are_refused(tiny, sae, features):
    model, tok = tiny
    wrong = SparseAutoencoder(model.config.hidden_size + 8, 32, 4, 1)
    with pytest.raises(ValueError, match="wide model"):
        SteeringView(FILL, model=tiny, sae=wrong)
    other = bertlab.train_sae(model, tok, TEXTS, layer=1, width=64, k=4, steps=2, seed=1, batch_size=32)
    with pytest.raises(ValueError, match="another autoencoder"):
        SteeringView(FILL, model=tiny, sae=other, features=features)
    with pytest.raises(ValueError, match="could not load|no model|not"):
        SteeringView(FILL, model="/no/such/checkpoint", sae=sae)


def test_a_negative_feature_counts_from_the_end_and_an_id_past_the_end_is_held_at_the_last(tiny, sae, features):
    v = SteeringView(FILL, model=tiny, sae=sae, feature=-1, features=features)
    assert v.feature.value == sae.width - 1 and v.error is None
    v.feature.value = 10_000                        # a number box's bounds, as ipywidgets' BoundedIntText
    assert v.feature.value == sae.width - 1 and v.error is None


def test_the_default_is_the_shipped_autoencoder_on_bertlab_mini():
    v = SteeringView(model=bundled("bertlab-mini"))
    assert v.error is None and v.sae.layer == 3 and v.sae.width == 3072
    top = float(v.sae.max_activation[v.feature.value])
    assert v.value.value == pytest.approx(2 * top)           # starts at twice its largest value in training
    with pytest.raises(ValueError, match="wide model"):
        SteeringView(FILL, model=bundled("bertlab-tiny"))   # the shipped one reads bertlab-mini only


# ---- the head-atlas view ----------------------------------------------------------------------------------

def test_the_atlas_view_shows_the_atlas_patterns(atlas):
    v = HeadAtlasView(atlas, layer=1, head=1, example=2)
    L, H = atlas.shape
    assert v.selected == (1, 1) and v.error is None
    tokens, att = atlas.example(1, 1, 2)
    assert np.array_equal(v.figure.data[0].z, att.numpy())
    assert v.figure.layout.title.text == f"layer 1, head 1 ({atlas.labels[1][1]}) on sentence 3"
    sent = unpack(v.out.content["figure"])["data"][0]["z"]
    assert np.allclose(sent, att.numpy(), atol=1e-7)            # what the module gets is that pattern
    ring = v.map_figure.data[-1]
    assert (ring.x[0], ring.y[0]) == tuple(atlas.coords[1 * H + 1].tolist())
    # every head is on the map once, its point carrying its flat index
    points = sorted(i for t in v.map_figure.data[:-1] for i in t.customdata)
    assert points == list(range(L * H))
    v.select(-1, -1)
    assert v.selected == (L - 1, H - 1)
    assert np.array_equal(v.figure.data[0].z, atlas.example(L - 1, H - 1, 2)[1].numpy())


def test_a_click_is_the_menu_event_and_is_answered_at_once(atlas):
    v = HeadAtlasView(atlas)
    H = atlas.shape[1]
    v.view.event = {"id": v.head_menu.id, "value": H + 1, "n": 11}     # what js/atlas.js sends on a click
    assert v.selected == (1, 1) and v.view.done == 11
    v.view.event = {"id": v.example.id, "value": 1, "n": 12}
    assert v.example.value == 1 and v.figure.layout.title.text.endswith("on sentence 2")
    # a hostile event (an index past the menu, a control that is not there) changes nothing
    v.view.event = {"id": v.head_menu.id, "value": 10_000, "n": 13}
    v.view.event = {"id": "no-such-control", "value": 0, "n": 14}
    assert v.selected == (1, 1) and v.view.done == 14


def test_the_book_gets_every_heads_pattern(atlas):
    v = HeadAtlasView(atlas)
    d = unpack(v.view.data)
    L, H = atlas.shape
    assert d["shape"] == [L, H] and len(d["infos"]) == L * H and len(d["labels"]) == L * H
    assert d["controls"] == {"head": v.head_menu.id, "example": v.example.id}
    for (tokens, att), ex in zip(atlas.examples, d["examples"]):
        assert len(ex["labels"]) == len(tokens)
        assert np.array_equal(ex["attention"], att.numpy())
    assert np.array_equal(d["coords"], atlas.coords.numpy())


@pytest.mark.parametrize("kwargs,match", [
    (dict(layer=2), "layer must be a whole number in 0 … 1"),
    (dict(layer=-3), "layer must be a whole number"),
    (dict(head=True), "head must be a whole number"),
    (dict(head=1.0), "head must be a whole number"),
    (dict(example=3), "example must be a whole number in 0 … 2"),
    (dict(example="0"), "example must be a whole number"),
])
def test_atlas_view_bad_arguments_are_named(atlas, kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeadAtlasView(atlas, **kwargs)


def test_atlas_view_refuses_what_is_not_an_atlas(atlas):
    with pytest.raises(ValueError, match="takes a HeadAtlas"):
        HeadAtlasView({"share": atlas.share})
    with pytest.raises(ValueError, match="takes a HeadAtlas"):
        HeadAtlasView(None)
    v = HeadAtlasView(atlas)
    with pytest.raises(ValueError, match="head must be a whole number"):
        v.select(0, 99)
    with pytest.raises(ValueError, match="layer must be a whole number"):
        v.select("0", 0)
    empty = type(atlas)(**{**atlas.__dict__, "examples": []})
    with pytest.raises(ValueError, match="no example sentences"):
        HeadAtlasView(empty)


def test_the_figures_refuse_mismatched_input(atlas):
    from bertlab.inside.figures import atlas_head_figure, atlas_map_figure, steering_bars_figure
    with pytest.raises(ValueError, match="as many probabilities as tokens"):
        steering_bars_figure(["a", "b"], [0.1], [0.2, 0.3], "t")
    with pytest.raises(ValueError, match="as many probabilities as tokens"):
        steering_bars_figure([], [], [], "t")
    with pytest.raises(ValueError, match="takes a HeadAtlas"):
        atlas_map_figure(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="index must be an int"):
        atlas_head_figure(atlas, 0, 0, 5)


# ---- steered_probabilities: the view's numbers, and its bad-input table ------------------------------------

def test_steered_probabilities_are_steers_numbers_and_the_plain_model_without_a_value(tiny, sae):
    model, tok = tiny
    p = steered_probabilities(model, tok, sae, FILL, 5, 4.0)
    top = bertlab.steer(model, tok, sae, FILL, 5, 4.0, top_k=3)
    assert [p[tok.token_to_id(g.token)].item() for g in top] == [g.probability for g in top]
    assert p.shape == (tok.vocab_size,) and abs(float(p.sum()) - 1) < 1e-4
    plain = steered_probabilities(model, tok, sae, FILL, 5, None)
    want = bertlab.fill_mask(model, tok, FILL, top_k=3).guesses[0]
    assert np.allclose([plain[tok.token_to_id(g.token)].item() for g in want], [g.probability for g in want],
                       atol=1e-6)
    assert no_hooks_anywhere(model)


@pytest.mark.parametrize("kwargs,match", [
    (dict(value=float("nan")), "value must be a finite number"),
    (dict(value="3"), "value must be a finite number"),
    (dict(value=torch.ones(2)), "value must be a finite number"),
    (dict(feature=-129), "feature must be an int in 0 … 127"),
    (dict(feature=None), "feature must be an int"),
    (dict(text="no mask here"), "exactly one \\[MASK\\]"),
    (dict(text=["The [MASK] ran."]), "exactly one \\[MASK\\]"),
    (dict(text="word " * 600 + "[MASK]"), "cut off"),
    (dict(positions="some"), "positions must be 'mask'"),
    (dict(sae=None), "sae must be a SparseAutoencoder"),
])
def test_steered_probabilities_refuses_bad_requests(tiny, sae, kwargs, match):
    model, tok = tiny
    args = dict(text=FILL, feature=5, value=1.0, sae=sae)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        steered_probabilities(model, tok, args["sae"], args["text"], args["feature"], args["value"],
                              **({"positions": args["positions"]} if "positions" in args else {}))


def test_steered_probabilities_needs_a_model_with_an_mlm_head(tiny, sae):
    model, tok = tiny
    with pytest.raises(ValueError, match="MLM|masked"):
        steered_probabilities(model.bert, tok, sae, FILL, 5, 1.0)


def test_the_map_after_any_clicks_is_the_map_built_for_that_head(atlas):
    from bertlab.inside.figures import atlas_map_figure
    from bertlab.viz.views import same_figure
    v = HeadAtlasView(atlas)
    for layer, head in ((1, 0), (0, 1), (1, 1)):
        v.select(layer, head)
        v.example.value = (layer + head) % 3
        assert same_figure(v.map_out.content["figure"], atlas_map_figure(atlas, layer, head))
