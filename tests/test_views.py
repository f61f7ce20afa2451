"""The view base (bertlab.viz.views): what travels to the browser, and bad input refused with a clear message."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

pytest.importorskip("anywidget", reason="the views need the notebooks extra (anywidget)")

from bertlab.viz.views import View, plotly_source, show_figure, show_html, unpack  # noqa: E402
from bertlab.viz.views import controls as W
from bertlab.viz.views.page import embed, is_view  # noqa: E402


def small_view():
    slider = W.IntSlider(value=1, min=0, max=3, description="layer")
    choice = W.Dropdown(options=[("one", 1), ("two", 2)], value=2, description="pick")
    out = W.Output()
    view = View(W.VBox([W.HBox([slider, choice]), out]))
    return view, slider, choice, out


def test_a_person_s_change_is_the_same_as_setting_the_value():
    view, slider, choice, out = small_view()
    seen = []
    slider.observe(lambda ch: seen.append((ch.old, ch.new)), names="value")
    view.event = {"id": slider.id, "value": 3, "n": 7}           # what the module sends
    assert slider.value == 3 and seen == [(1, 3)] and view.done == 7
    assert view.nodes[slider.id]["value"] == 3                   # and the page gets it back
    view.event = {"id": choice.id, "value": 0, "n": 8}           # a selection sends the option's index
    assert choice.value == 1 and view.nodes[choice.id]["index"] == 0


def test_figures_travel_as_binary_buffers():
    view, *_, out = small_view()
    z = np.arange(12, dtype=np.float64).reshape(3, 4) / 7
    show_figure(out, go.Figure(go.Heatmap(z=z, x=list("abcd"))))
    sent = view.content[out.id]["figure"]["data"][0]["z"]
    assert isinstance(sent["bdata"], memoryview) and sent["dtype"] == "f4" and sent["shape"] == "3,4"
    np.testing.assert_allclose(unpack(sent), z, rtol=1e-6)
    assert view.content[out.id]["figure"]["data"][0]["x"] == list("abcd")
    show_html(out, "<b>hi</b><script>1</script>")
    assert view.content[out.id]["frame"] and out.figure is None and out.html.startswith("<b>")
    show_figure(out, None)
    assert out.empty and out.id not in view.content


def test_plotly_js_goes_once_on_request_and_leaves_the_state():
    view, *_ = small_view()
    assert view.plotly_js == b""
    view.plotly_wanted = True
    assert view.plotly_js == plotly_source() and len(view.plotly_js) > 1_000_000
    view.plotly_wanted = False
    assert view.plotly_js == b""


def test_bad_input_to_the_view_base_is_a_clear_error():
    with pytest.raises(ValueError, match="a view's root is a row or control"):
        View("not a control")
    with pytest.raises(ValueError, match="no view module 'nope'"):
        View(W.VBox([]), module="nope")
    with pytest.raises(ValueError, match="no view module"):
        View(W.VBox([]), module="../runtime")
    s = W.IntSlider(value=0, min=0, max=3, description="layer")
    with pytest.raises(ValueError, match="layer takes a number"):
        s.value = "2"
    s.value = 99
    assert s.value == 3                                           # clamped, as ipywidgets' slider does
    d = W.Dropdown(options=["a", "b"], description="pick")
    with pytest.raises(ValueError, match="'c' is not one of the pick"):
        d.value = "c"
    with pytest.raises(ValueError, match="on or off"):
        W.Checkbox(description="words").value = "yes"
    with pytest.raises(ValueError, match="must be a str"):
        W.Text(description="text").value = 3
    with pytest.raises(AttributeError, match="Layout has no 'colour'"):
        W.Layout(colour="red")
    with pytest.raises(ValueError, match="views observe only 'value'"):
        s.observe(print, names="max")


def test_a_bad_event_from_the_page_is_ignored_not_raised():
    view, slider, choice, _ = small_view()
    view.event = {"id": "no-such", "value": 1, "n": 1}
    view.event = {"id": choice.id, "value": 9, "n": 2}            # an index out of range
    view.event = {"id": slider.id, "value": "x", "n": 3}
    assert view.done == 3 and slider.value == 1 and choice.value == 2


def test_the_book_embed_escapes_the_state_and_mounts_once():
    view, *_, out = small_view()
    show_html(out, "</script><script>alert(1)</script>")
    from ipywidgets.widgets.widget import _remove_buffers
    state, _, _ = _remove_buffers(view.get_state())
    entry = {"model_name": "AnyModel", "state": state, "buffers": []}
    assert is_view(entry) and not is_view({"model_name": "VBoxModel", "state": {}})
    first, second = embed(entry, first=True), embed(entry, first=False)
    data = first.split('class="bl-embed-state">', 1)[1].split("</script>", 1)[0]
    assert "</script>" not in data and json.loads(data)["state"]["root"] == view.root
    assert first.count("G.mountView = mountView") == 1 and "mountView" not in second


# ---- what travels per change, and what it costs ---------------------------------------------------------

def two_pane_view():
    slider = W.IntSlider(value=1, min=0, max=3, description="layer")
    left, right = W.Output(), W.Output()
    view = View(W.VBox([slider, W.HBox([left, right])]))
    show_figure(left, go.Figure(go.Heatmap(z=np.eye(3))))
    show_html(right, "<p>" + "big pane " * 2000 + "</p>")
    sent = []
    # what would go to the page (here `event` is set from Python, so it goes too: the page's own would not)
    view._send = lambda msg, buffers=None: sent.append(msg) if "event" not in msg["state"] else None
    return view, slider, left, right, sent


def test_a_person_s_change_sends_only_the_panes_it_changed():
    view, slider, left, right, sent = two_pane_view()
    slider.observe(lambda ch: show_figure(left, go.Figure(go.Heatmap(z=np.eye(3) * ch.new))), names="value")
    view.event = {"id": slider.id, "value": 2, "n": 5}
    (msg,) = [m for m in sent if m["method"] == "update"]
    assert "content" not in msg["state"] and set(msg["state"]["patch"]["panes"]) == {left.id}
    assert msg["state"]["done"] == 5 and msg["state"]["patch"]["n"] == 5
    # Python reads everything as before: the whole content, the new figure in it, the big pane untouched
    assert view.content[left.id]["rev"] == msg["state"]["patch"]["panes"][left.id]["rev"] > view.content[right.id]["rev"]
    np.testing.assert_allclose(unpack(view.content[left.id]["figure"]["data"][0]["z"]), np.eye(3) * 2)
    # a pane a change empties travels as gone, with its revision
    sent.clear()
    slider.observe(lambda ch: show_html(right, None), names="value")
    view.event = {"id": slider.id, "value": 3, "n": 6}
    (msg,) = [m for m in sent if m["method"] == "update"]
    assert msg["state"]["patch"]["panes"][right.id]["gone"] and right.id not in view.content


def test_a_change_made_from_python_still_sends_the_whole_content():
    # a cell (or nbclient running the notebook for the book) changes the view: the saved state stays complete
    view, slider, left, right, sent = two_pane_view()
    show_figure(left, go.Figure(go.Heatmap(z=np.eye(3) * 5)))
    (msg,) = [m for m in sent if m["method"] == "update"]
    assert set(msg["state"]["content"]) == {left.id, right.id} and "patch" not in msg["state"]


def test_an_unchanged_control_setting_is_not_sent_again():
    view, slider, *_, sent = two_pane_view()
    slider.disabled = True
    slider.disabled = True                                         # widgets set this on every update
    slider.layout.display = "none"
    slider.layout.display = "none"
    assert len([m for m in sent if "nodes" in m["state"]]) == 2
    choice = W.Dropdown(options=["a", "b"], description="pick")
    choice.tooltips = np.array(["one", "two"])                     # an array compares elementwise: still taken
    choice.tooltips = np.array(["one", "two"])
    assert list(choice.tooltips) == ["one", "two"]
    # the page keeps one store of a view's panes, under the widget's own model id (no new randomness)
    assert view.uid == view.model_id


def test_events_are_not_echoed_and_each_is_timed():
    view, slider, *_ = two_pane_view()
    assert view.trait_metadata("event", "echo_update") is False   # no message back for the page's own change
    View.timings.clear()
    view.event = {"id": slider.id, "value": 3, "n": 9}
    view.event = {"id": "no-such", "value": 1, "n": 10}            # a bad event is timed too, and answered
    first, second = View.timings
    assert first["n"] == 9 and second["n"] == 10 and view.done == 10
    assert all(t["handle_ms"] >= t["send_ms"] >= 0 and t["pack_ms"] >= 0 for t in View.timings)


def test_the_shared_look_is_the_same_figure_without_re_validating_the_template():
    import plotly.io as pio

    from bertlab.viz.figures.look import LAYOUT, finish
    fig = finish(go.Figure(go.Heatmap(z=np.eye(2))), "t", margin=dict(l=1))
    slow = go.Figure(go.Heatmap(z=np.eye(2))).update_layout(**{**LAYOUT, "margin": dict(l=1)},
                                                           title=dict(text="t", x=0.01, xanchor="left"))
    assert fig.to_dict() == slow.to_dict()
    fig.layout.template.layout.font.size = 99                      # a copy: the registered template is untouched
    assert pio.templates[LAYOUT["template"]].layout.font.size != 99
    assert finish(go.Figure(), "t", template="plotly_dark").layout.template == pio.templates["plotly_dark"]
