"""interact (bertlab.viz.views.interact): a notebook's function of some controls as a view.

Driven from Python exactly as a person drives it (a control's value, or the browser's `event`), read back
synchronously; the answers saved for the book are the function's own, keyed the same way in Python and in
js/interact.js (run in node where it is installed); the book cleans saved answers; bad input is refused with a
one-line message (STYLE 18).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import plotly.graph_objects as go
import pytest

pytest.importorskip("anywidget", reason="the views need the notebooks extra (anywidget)")

from IPython.display import HTML  # noqa: E402

from bertlab.viz import Interactive, interact  # noqa: E402
from bertlab.viz.views import controls as W  # noqa: E402
from bertlab.viz.views import same_figure  # noqa: E402


def bars(group, metric="loss", log=False):
    fig = go.Figure(go.Bar(x=["a", "b", "c"], y=[len(group), len(metric), 2 if log else 1]))
    return fig.update_layout(title=f"{group}: {metric}{' (log)' if log else ''}")


def pieces(text, upper=False):
    return HTML("<b>" + "</b> <b>".join((text.upper() if upper else text).split()) + "</b>")


# ---- driven as a person drives it ---------------------------------------------------------------------

def test_a_change_from_python_or_the_browser_redraws_synchronously():
    w = interact(bars, group=W.ToggleButtons(options=["masking", "size"], description="ablation"),
                 metric=["loss", "accuracy"], log=False)
    assert w.figure.layout.title.text == "masking: loss" and w.error is None
    assert w.controls["group"].description == "ablation" and w.controls["metric"].description == "metric"
    w.controls["metric"].value = "accuracy"                          # what choosing it does
    assert w.figure.layout.title.text == "masking: accuracy"
    assert same_figure(w.view.content[w.out.id]["figure"], bars("masking", "accuracy"))
    w.view.event = {"id": w.controls["group"].id, "value": 1, "n": 41}   # what the module sends for a click
    assert w.values == {"group": "size", "metric": "accuracy", "log": False} and w.view.done == 41
    assert w.figure.layout.title.text == "size: accuracy" and w.result is w.figure


def test_html_text_numbers_and_nothing_are_shown_as_such():
    w = interact(pieces, text="a <b> c")
    assert w.html == "<b>a</b> <b><b></b> <b>c</b>" and w.text is None
    w.controls["text"].value = "x y"
    assert w.html == "<b>x</b> <b>y</b>"
    t = interact(lambda n: "<i>" * n, n=W.IntSlider(value=1, min=0, max=2))
    assert t.text == "<i>" and t.html.endswith("&lt;i&gt;</pre>") and "<i>" not in t.html   # text is escaped
    assert t.view.content[t.out.id]["plain"] == "<i>"
    num = interact(lambda x: x * 2, x=W.FloatSlider(value=0.5, min=0, max=1, step=0.25))
    assert "1.0</pre>" in num.html
    empty = interact(lambda on: None if on else "off", on=True)
    assert empty.out.empty and empty.result is None
    empty.controls["on"].value = False
    assert empty.text == "off"


def test_the_function_s_error_is_one_line_in_the_view_and_goes_away():
    def picky(word):
        if not word:
            raise ValueError("type a word first\n(a second line nobody needs)")
        if word == "boom":
            raise KeyError("boom")
        return word
    w = interact(picky, word="ok")
    w.controls["word"].value = ""
    assert w.error == "type a word first" and "#9f1c1c" in w.message.value and "second" not in w.message.value
    assert w.out.empty
    w.controls["word"].value = "boom"
    assert w.error == "KeyError: 'boom'"
    w.controls["word"].value = "fine"
    assert w.error is None and w.message.value == "" and w.text == "fine"


def test_a_returned_object_it_cannot_draw_is_a_message():
    class Plot:                                   # a matplotlib figure, say
        pass
    w = interact(lambda k: Plot(), k=[1, 2])
    assert w.error.startswith("<lambda> returned a Plot: return a plotly figure, HTML")


def test_refresh_runs_the_function_again():
    calls = []
    w = interact(lambda text: calls.append(text) or text, text="a")
    w.refresh()
    assert calls == ["a", "a"]


# ---- answers saved for the book -----------------------------------------------------------------------

def test_every_combination_is_saved_when_there_are_few():
    w = interact(bars, group=["masking", "size"], metric=W.Dropdown(options=["loss", "accuracy", "f1"]), log=False)
    assert w.saved == 2 * 3 * 2
    answers = w.view.data["answers"]
    ids = w.view.data["controls"]
    assert ids == [w.controls[n].id for n in ("group", "metric", "log")]
    got = answers[json.dumps([1, 2, True], separators=(",", ":"))]
    assert same_figure(got["content"][w.out.id]["figure"], bars("size", "f1", True))
    assert got["nodes"][w.message.id] == {"value": ""}


def test_a_text_box_is_saved_at_its_current_text_only():
    w = interact(pieces, text="one two", upper=W.ToggleButtons(options=[False, True]))
    assert sorted(w.view.data["answers"]) == ['["one two",0]', '["one two",1]']
    assert w.view.data["answers"]['["one two",1]']["content"][w.out.id]["html"] == "<b>ONE</b> <b>TWO</b>"


def test_too_many_combinations_or_bytes_keep_only_the_answer_shown():
    calls = []

    def count(a, b):
        calls.append((a, b))
        return f"{a} {b}"
    w = interact(count, a=W.IntSlider(value=0, min=0, max=9), b=W.IntSlider(value=0, min=0, max=9))
    assert w.saved == 1 and calls == [(0, 0)]                        # 100 > 64: nothing computed ahead
    w = Interactive(count, {"a": W.IntSlider(value=0, min=0, max=9), "b": W.IntSlider(value=0, min=0, max=9)},
                    precompute=100)
    assert w.saved == 100
    w = Interactive(lambda a: "x" * 1000, {"a": W.IntSlider(value=0, min=0, max=9)}, max_bytes=5000)
    assert w.saved == 1 and list(w.view.data["answers"]) == ["[0]"]
    assert Interactive(pieces, {"text": "a", "upper": False}, precompute=0).saved == 1
    huge = interact(lambda n: str(n), n=W.IntSlider(value=5, min=0, max=10**12))      # counted, never listed
    assert huge.saved == 1 and huge.text == "5"


def test_in_a_kernel_the_function_runs_again_rather_than_the_saved_answer():
    data = {"n": 1}
    w = interact(lambda on: f"{data['n']} {on}", on=False)
    data["n"] = 2
    w.controls["on"].value = True
    assert w.text == "2 True"                                         # not the "1 True" saved for the book


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed: the book's browser test covers js/interact.js")
def test_the_module_looks_changes_up_with_the_same_keys(tmp_path):
    """js/interact.js's `offline`, run in node over the saved state, answers each kind of control's change
    with the answer Python saved for it, and refuses a change it has no answer for (a new text)."""
    from ipywidgets.widgets.widget import _remove_buffers

    from bertlab.viz.views import esm

    w = interact(lambda text, pick, on, n, x: f"{text}|{pick}|{on}|{n}|{x}", text="hi",
                 pick=W.Dropdown(options=[("first", 10), ("second", 20)]), on=W.ToggleButton(value=False),
                 n=W.IntSlider(value=2, min=2, max=4, step=2), x=W.FloatSlider(value=0.1, min=0.1, max=0.3, step=0.1))
    state, _, _ = _remove_buffers(w.view.get_state())
    (tmp_path / "view.mjs").write_text(esm("interact"))
    c = w.controls
    events = [{"id": c["pick"].id, "value": 1}, {"id": c["on"].id, "value": True}, {"id": c["n"].id, "value": 4},
              {"id": c["x"].id, "value": 0.30000000000000004}, {"id": c["text"].id, "value": "new"}]
    script = (f"import {{ offline }} from './view.mjs';\nconst state = {json.dumps(state)};\n"
              f"const out = {json.dumps(events)}.map((ev) => {{ const r = offline(state, ev);\n"
              f"  return r && r.content['{w.out.id}'].plain; }});\nconsole.log(JSON.stringify(out));\n")
    (tmp_path / "run.mjs").write_text(script)
    got = json.loads(subprocess.run([NODE, "run.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                                    check=True).stdout)
    assert got == ["hi|20|False|2|0.1", "hi|10|True|2|0.1", "hi|10|False|4|0.1", "hi|10|False|2|0.3", None]


def test_the_book_cleans_saved_answers():
    from bertlab.book.sanitize import trusted_view
    from bertlab.viz.views.page import is_view

    w = interact(lambda on: HTML('<img src=x onerror="alert(1)"><b>ok</b><script>alert(2)</script>') if on
                 else "plain", on=False)
    entry = {"model_name": "AnyModel", "model_module": "anywidget", "state": json.loads(json.dumps(
        w.view.get_state(), default=lambda o: None)), "buffers": []}
    assert is_view(entry)
    entry["state"]["data"]["answers"]['[false]']["nodes"][w.controls["on"].id] = {"value": "<script>x</script>"}
    clean = trusted_view(entry)["state"]["data"]["answers"]
    shown = clean["[true]"]["content"][w.out.id]
    assert shown["frame"] is True                    # a script: only ever drawn in a sandboxed frame
    entry["state"]["data"]["answers"]["[true]"]["content"][w.out.id]["frame"] = False   # a hostile save
    shown = trusted_view(entry)["state"]["data"]["answers"]["[true]"]["content"][w.out.id]
    assert "onerror" not in shown["html"] and "<script" not in shown["html"] and "<b>ok</b>" in shown["html"]
    assert w.controls["on"].id not in clean["[false]"]["nodes"]       # only the message line's HTML is patched


# ---- bad input: one line that says what was wrong and what to do ----------------------------------------

def test_bad_input_to_interact_is_a_clear_error():
    import ipywidgets

    cases = [
        (lambda: interact("not a function", text="a"), "interact takes a function first"),
        (lambda: interact(pieces), "interact needs at least one control"),
        (lambda: Interactive(pieces, ["text"]), "interact needs at least one control"),
        (lambda: interact(pieces, txt="a"), "pieces has no parameter 'txt': its parameters are text, upper"),
        (lambda: interact(pieces, upper=True), "pieces needs 'text': give it a control"),
        (lambda: interact(pieces, text=ipywidgets.Text("a")), "'text' is an ipywidgets control"),
        (lambda: interact(pieces, text=W.Button(description="go")), "'text' is a Button, which has no value"),
        (lambda: interact(pieces, text=W.Output()), "'text' is a Output"),
        (lambda: interact(pieces, text=3.5), r"'text' must be a control .* got 3.5 \(float\)"),
        (lambda: interact(pieces, text=None), r"got None \(NoneType\)"),
        (lambda: interact(pieces, text="a", upper=[]), "'upper' has an empty list of options"),
        (lambda: Interactive(pieces, {"text": "a"}, precompute=-1), "precompute must be a whole number"),
        (lambda: Interactive(pieces, {"text": "a"}, precompute=True), "precompute must be a whole number"),
        (lambda: Interactive(pieces, {"text": "a"}, max_bytes="1 MB"), "max_bytes must be a whole number"),
        (lambda: Interactive(pieces, {"text one": "a"}), "a control's name is a parameter"),
        (lambda: Interactive(lambda text, /: text, {"text": "a"}), "by position only"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
    box = W.Text("a")
    interact(pieces, text=box)
    with pytest.raises(ValueError, match="already part of another view: make a new one"):
        interact(pieces, text=box)
    same = W.Checkbox()
    with pytest.raises(ValueError, match="its own control"):
        interact(lambda a, b: "", a=same, b=same)
    # a function taking **kwargs takes any name; one with defaults needs no control for them
    assert interact(lambda **kw: str(sorted(kw)), anything="x").text == "['anything']"


# ---- the notebooks use it -------------------------------------------------------------------------------

def test_no_notebook_builds_its_own_ipywidgets_output_cell():
    """Every live cell of the lessons is a view (bertlab.viz: the model widgets, or interact): an ipywidgets
    `interactive`, `interactive_output` or `Output` draws nothing in VS Code, marimo or the book."""
    from pathlib import Path

    import nbformat

    found = []
    for path in sorted((Path(__file__).resolve().parents[1] / "notebooks").rglob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code" and any(s in cell.source for s in (
                    "import ipywidgets", "from ipywidgets", "interactive(", "interactive_output(", "Output(")):
                found.append(f"{path.name} cell {i}")
    assert not found, f"move these cells onto bertlab.viz.interact: {found}"


def test_a_tuple_of_numbers_is_a_slider_as_in_ipywidgets():
    # an ipywidgets user writes layer=(0, 5): a menu of the two ends was a wrong result, silently
    w = interact(lambda n: str(n), n=(0, 10))
    assert isinstance(w.controls["n"], W.IntSlider) and (w.controls["n"].min, w.controls["n"].max) == (0, 10)
    assert w.text == "5" and w.saved == 11
    w = interact(lambda n: f"{n:.1f}", n=(0.0, 1.0))
    assert isinstance(w.controls["n"], W.FloatSlider) and w.text == "0.5"
    assert interact(lambda n: str(n), n=(0, 10, 5)).saved == 3
    assert isinstance(interact(lambda n: n, n=("a", "b")).controls["n"], W.Dropdown)   # not numbers: a menu
    for spec, message in [((5, 0), r"max below min: give \(0, 5\)"), ((0, 1, 0), "step 0 must be above 0"),
                          ((0, float("inf")), "must be finite numbers")]:
        with pytest.raises(ValueError, match=message):
            interact(lambda n: str(n), n=spec)
    with pytest.raises(ValueError, match="'n' is a slider from 5 to 0: its max is below its min; swap them"):
        interact(lambda n: str(n), n=W.IntSlider(min=5, max=0))      # a slider whose every value was 0


def test_a_slider_with_more_values_than_a_float_counts_saves_one_answer():
    # (max - min) / step overflowed to inf and int() of it was a raw OverflowError
    w = interact(lambda a: str(a), a=W.FloatSlider(min=0, max=1e300, step=1e-300))
    assert w.saved == 1 and w.error is None


@pytest.mark.parametrize("make", [lambda: W.IntSlider(max=5), lambda: W.FloatSlider(max=5.0)])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_slider_set_to_nan_or_inf_is_refused_and_the_function_keeps_its_value(make, bad):
    # an IntSlider said only "cannot convert float NaN to integer"; a FloatSlider took nan and passed it on
    slider = make()
    w = interact(lambda a: repr(a), a=slider)
    before = w.text
    with pytest.raises(ValueError, match=r"a takes a finite number from 0(\.0)? to 5(\.0)?, got (nan|-?inf)"):
        w.controls["a"].value = bad
    assert w.text == before and w.values["a"] == slider.value
