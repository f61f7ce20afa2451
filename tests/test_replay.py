"""Replaying a run's snapshots: the figure shows the recorded numbers, the slider swaps them, nothing jumps."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets", reason="the replay widget needs the notebooks extra (ipywidgets)")
pytest.importorskip("plotly", reason="the replay draws with plotly")

from test_trainer import TINY  # noqa: E402

from bertlab.pretraining import read_snapshots  # noqa: E402
from bertlab.pretraining.trainer import pretrain  # noqa: E402
from bertlab.viz.figures import intra_similarity_figure, snapshot_figure  # noqa: E402
from bertlab.viz.replay import ALL_HEADS, SnapshotReplay  # noqa: E402
from bertlab.viz.views import controls as C  # noqa: E402
from bertlab.viz.views import same_figure, unpack  # noqa: E402
from testkit import corpus, one_thread  # noqa: E402,F401  (fixtures)

TEXT = "The river [MASK] was muddy after the [MASK]."


@pytest.fixture(scope="module")
def run(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replay")
    pretrain(corpus, out, **TINY, steps=6, log_every=3, save_every=6, snapshot_every=2, snapshot_text=TEXT)
    return out


@pytest.fixture(scope="module")
def shots(run):
    return read_snapshots(run)


def shown(out) -> dict:
    """The plotly figure a view's pane holds, as the browser receives it (arrays as binary float32)."""
    assert out.content is not None and "figure" in out.content
    return unpack(out.content["figure"])


# ---- the figure ----------------------------------------------------------------------------------------

def test_the_figure_shows_the_chosen_heads_weights_and_the_guesses_of_that_step(shots):
    s = shots[-1]
    fig = snapshot_figure(s, layer=1, head=1, mask_index=1)
    heat, bars = fig.data
    assert heat.type == "heatmap" and bars.type == "bar"
    assert [list(r) for r in heat.z] == s.attentions[1][1]
    assert list(bars.customdata) == [t for t, _ in s.guesses[1]]
    assert list(bars.x) == [p for _, p in s.guesses[1]]
    assert f"step {s.step}" in fig.layout.title.text and "layer 1, head 1" in fig.layout.title.text
    assert len(heat.x) == len(s.tokens) and heat.x[0] == "[CLS] (0)"


def test_all_heads_of_a_layer_as_small_multiples(shots):
    s = shots[0]
    fig = snapshot_figure(s, layer=0, head=ALL_HEADS)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert [[list(r) for r in h.z] for h in heatmaps] == s.attentions[0]     # both heads, in order
    assert len(snapshot_figure(s, layer=0, head=None).data) == len(fig.data)


def test_colours_and_axes_do_not_move_between_steps(shots):
    first = snapshot_figure(shots[0], layer=0, head=0, p_max=0.5)
    last = snapshot_figure(shots[-1], layer=0, head=0, p_max=0.5)
    for fig in (first, last):
        assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
        assert list(fig.data[1].y) == ["1", "2", "3", "4", "5"]             # ranks, not the changing tokens
    assert first.layout.xaxis2.range == last.layout.xaxis2.range
    assert first.layout.xaxis2.range[1] >= 0.5
    assert first.data[0].z != last.data[0].z                                # ... while the data do change


def test_intra_similarity_figure_has_a_line_per_layer_across_steps(shots):
    fig = intra_similarity_figure(shots, step=shots[1].step)
    assert [t.name for t in fig.data] == ["embeddings", "after layer 0", "after layer 1"]
    assert list(fig.data[2].x) == [s.step for s in shots]
    assert list(fig.data[2].y) == [s.intra_similarity[2] for s in shots]
    assert fig.layout.shapes[0].x0 == shots[1].step


def test_bad_choices_say_what_exists(shots):
    with pytest.raises(ValueError, match=r"layer 2 does not exist: the snapshot has 2 layers \(0 … 1\)"):
        snapshot_figure(shots[0], layer=2)
    with pytest.raises(ValueError, match="head 5 does not exist"):
        snapshot_figure(shots[0], head=5)
    with pytest.raises(ValueError, match="mask_index 2 does not exist"):
        snapshot_figure(shots[0], mask_index=2)
    with pytest.raises(ValueError, match="expected a Snapshot"):
        snapshot_figure({"step": 0})
    with pytest.raises(ValueError, match="p_max must be a probability"):
        snapshot_figure(shots[0], p_max=2)


def test_the_figure_fits_a_notebook(shots):
    s = shots[-1]
    T, (L, A) = 60, s.attention.shape[:2]                       # a long sentence: the heatmap stops growing
    long = dataclasses.replace(s, tokens=[f"w{i}" for i in range(T)],
                               attentions=[[[[1 / T] * T] * T] * A] * L)
    assert snapshot_figure(s, layer=0, head=0).layout.width <= 1000
    assert snapshot_figure(long, layer=0, head=0).layout.width <= 1000
    assert snapshot_figure(s, layer=0, head=ALL_HEADS).layout.width <= 1000
    assert intra_similarity_figure(shots).layout.width <= 1000


def test_a_sentence_without_mask_shows_heads_and_says_there_are_no_guesses(shots):
    s = dataclasses.replace(shots[0], guesses=[])
    fig = snapshot_figure(s, layer=0, head=0)
    assert len(fig.data[1].x) == 0
    assert any("no [MASK]" in a.text for a in fig.layout.annotations)


# ---- the widget ----------------------------------------------------------------------------------------

def test_moving_the_slider_shows_that_steps_snapshot(run, shots):
    w = SnapshotReplay(run)
    assert list(w.step.options) == [0, 2, 4, 6] and w.snapshot.step == 0
    assert [list(r) for r in w.figure.data[0].z] == shots[0].attentions[0][0]
    w.step.value = 4
    assert w.snapshot.step == 4 and "step 4" in w.figure.layout.title.text
    assert [list(r) for r in w.figure.data[0].z] == shots[2].attentions[0][0]
    assert list(w.figure.data[-1].customdata) == [t for t, _ in shots[2].guesses[0]]
    assert shown(w.out)["layout"]["title"]["text"] == w.figure.layout.title.text   # what the browser gets
    assert w.similarity.layout.shapes[0].x0 == 4
    assert same_figure(w.out.content["figure"], w.figure) and same_figure(w.similarity_out.content["figure"],
                                                                         w.similarity)


def test_play_steps_the_slider_as_the_page_sends_it(run, shots):
    w = SnapshotReplay(run)
    assert (w.play.min, w.play.max, w.play.value) == (0, 3, 0)
    w.view.event = {"id": w.play.id, "value": 2, "n": 5}          # ▶'s third frame, as the module sends it
    assert w.view.done == 5 and w.step.value == 4 and w.snapshot.step == 4
    assert [list(r) for r in w.figure.data[0].z] == shots[2].attentions[0][0]
    assert w.view.nodes[w.step.id]["index"] == 2                  # the page's slider moved with it
    w.step.value = 6                                              # and the slider moves ▶'s position
    assert w.play.value == 3 and w.view.nodes[w.play.id]["value"] == 3
    w.view.event = {"id": w.play.id, "value": 9, "n": 6}          # past the end: clamped, as a slider is
    assert w.view.done == 6 and w.play.value == 3 and w.snapshot.step == 6
    w.view.event = {"id": w.play.id, "value": "x", "n": 7}        # not a step: answered, nothing moves
    assert w.view.done == 7 and w.snapshot.step == 6 and same_figure(w.out.content["figure"], w.figure)


def test_layer_head_and_mask_menus_swap_the_figure(shots):
    w = SnapshotReplay(shots)
    w.step.value = 6
    w.layer.value, w.head.value = 1, 1
    assert [list(r) for r in w.figure.data[0].z] == shots[-1].attentions[1][1]
    w.head.value = ALL_HEADS
    assert len([t for t in w.figure.data if t.type == "heatmap"]) == 2
    w.mask.value = 1
    assert list(w.figure.data[-1].customdata) == [t for t, _ in shots[-1].guesses[1]]
    # the guesses' axis is the whole run's, so it is the same at every step
    top = max(p for s in shots for _, p in s.guesses[1])
    ranges = set()
    for step in w.step.options:
        w.step.value = step
        ranges.add(tuple(w.figure.layout[f"xaxis{len(w.figure.data)}"].range))
    assert len(ranges) == 1 and ranges.pop()[1] >= top


def test_the_replay_is_a_displayable_widget(run):
    w = SnapshotReplay(run, layer=1, head=ALL_HEADS)
    bundle = w._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle   # anywidget's: (bundle, metadata)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.view.model_id
    assert w.play.max == len(w.step.options) - 1
    assert "4 snapshots" in repr(w)


def test_bad_sources_say_what_to_pass(tmp_path, shots):
    with pytest.raises(FileNotFoundError, match="snapshot-every"):
        SnapshotReplay(tmp_path)
    with pytest.raises(ValueError, match="no snapshots to replay"):
        SnapshotReplay([])
    with pytest.raises(ValueError, match="run folder or a list of Snapshots"):
        SnapshotReplay(42)
    with pytest.raises(ValueError, match="expected a Snapshot"):
        SnapshotReplay([json.dumps({"step": 0})])
    with pytest.raises(ValueError, match="layer 3 does not exist"):
        SnapshotReplay(shots, layer=3)


def test_play_takes_whole_steps_and_says_what_it_wanted():
    with pytest.raises(ValueError, match="takes a number, got 'x'"):
        C.Play(value="x", description="play")
    for bad in (0, 2.5, "600", True):
        with pytest.raises(ValueError, match="milliseconds between steps"):
            C.Play(interval=bad)
    p = C.Play(value=1, min=0, max=3, interval=600)
    seen = []
    p.observe(lambda change: seen.append(change.new), names="value")
    p.value = 9                                                  # past the end: clamped, as a slider is
    assert p.value == 3 and seen == [3] and p.spec()["interval"] == 600
    with pytest.raises(ValueError, match="takes a number"):
        p._from_front("next")                                    # the page sends numbers only
    assert p.value == 3
