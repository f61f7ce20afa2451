"""Notebook 13's views in Chromium with the network cut: the head atlas live on a book page (no kernel), and
both views drawn and driven in JupyterLab.

The book: a click on a head's point and a change of example sentence are answered in the page by
js/atlas.js from the atlas's saved patterns, and what it draws must be `HeadAtlas.example` exactly, with the
title Python writes. JupyterLab: the steering view's value slider moved with the keyboard and the atlas's
map clicked, each answered by the kernel (the view's root marks the event it last answered) with the figure
that belongs to the new setting.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os

import nbformat
import numpy as np
import pytest

from browser.conftest import CHROMIUM

if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
    pytest.skip("the views' browser tests need Playwright and the system's Chromium", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT_MS = int(float(os.environ.get("BERTLAB_BROWSER_TIMEOUT", "120")) * 1000)
TEXTS = ["The cat sat on the mat.", "It was warm there.", "The dog ran along the river bank."]

# the map pane's points: for each head "l.h", the centre of its marker on the screen
POINTS = """(paneId) => { const pane = document.querySelector(`[data-id="${paneId}"]`); const out = {};
  pane.querySelectorAll('.scatterlayer .trace').forEach(tr => {
    const pts = [...tr.querySelectorAll('.points path.point')], txt = [...tr.querySelectorAll('.textpoint text')];
    pts.forEach((p, i) => { if (!txt[i]) return; const r = p.getBoundingClientRect();
      out[txt[i].textContent] = [r.x + r.width / 2, r.y + r.height / 2]; }); });
  return out; }"""
SHOWN = """(paneId) => { const d = document.querySelector(`[data-id="${paneId}"]`); const t = d.data[0];
  return {title: d.layout.title.text, x: Array.from(t.x), z: Array.from(t.z, r => Array.from(r))}; }"""


def guarded_page(browser, allowed: tuple[str, ...]):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    blocked, errors = [], []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(allowed)
                  else (blocked.append(r.request.url), r.abort()))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, blocked, errors


def farthest_point(page, view_data: dict, selected: str) -> tuple[str, list[float]]:
    """The head whose point lies farthest from the selected one's (so a click cannot land on both)."""
    points = page.evaluate(POINTS, view_data["panes"]["map"])
    assert selected in points and len(points) > 1, points
    x0, y0 = points[selected]
    name = max(points, key=lambda k: (points[k][0] - x0) ** 2 + (points[k][1] - y0) ** 2)
    return name, points[name]


def saved_entry(view) -> dict:
    """A view's state as nbclient stores it in a notebook (buffers base64 beside their paths)."""
    from ipywidgets.widgets.widget import _remove_buffers
    state, paths, buffers = _remove_buffers(view.get_state())
    return {"model_name": "AnyModel", "model_module": "anywidget", "state": state,
            "buffers": [{"encoding": "base64", "path": p, "data": base64.b64encode(bytes(b)).decode()}
                        for p, b in zip(paths, buffers)]}


def test_the_atlas_is_live_on_a_book_page(browser, tmp_path):
    import bertlab
    from bertlab.viz import HeadAtlasView
    from bertlab.viz.views import plotly_source
    from bertlab.viz.views.page import embed

    atlas = bertlab.head_atlas(*bertlab.load("bertlab-tiny", device="cpu"), TEXTS)
    v = HeadAtlasView(atlas)
    (tmp_path / "plotly.min.js").write_bytes(plotly_source())
    (tmp_path / "page.html").write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><script '
                                        f'src="plotly.min.js"></script></head><body>{embed(saved_entry(v.view))}'
                                        "</body></html>")
    page, blocked, errors = guarded_page(browser, ("file:", "data:", "blob:"))
    try:
        page.goto((tmp_path / "page.html").as_uri())
        data = v.view.data
        page.wait_for_selector(f'[data-id="{data["panes"]["map"]}"] .main-svg', timeout=30_000)
        page.wait_for_selector(f'[data-id="{data["panes"]["attention"]}"] .main-svg', timeout=30_000)
        H = atlas.shape[1]
        name, (x, y) = farthest_point(page, data, "0.0")
        page.mouse.click(x, y)
        page.wait_for_function("([id, t]) => document.querySelector(`[data-id=\"${id}\"]`).layout.title.text"
                               ".startsWith(t)", arg=[data["panes"]["attention"], f"layer {name.split('.')[0]}, "
                               f"head {name.split('.')[1]} "], timeout=10_000)
        layer, head = map(int, name.split("."))
        shown = page.evaluate(SHOWN, data["panes"]["attention"])
        assert shown["title"] == f"layer {layer}, head {head} ({atlas.labels[layer][head]}) on sentence 1"
        np.testing.assert_allclose(np.array(shown["z"]), atlas.example(layer, head, 0)[1].numpy(), atol=1e-6)
        menu = page.locator(f'[data-id="{data["controls"]["head"]}"] select')
        assert menu.input_value() == str(layer * H + head)                # the menu follows the click
        # another example sentence, and a head from the menu: both answered in the page
        page.locator(f'[data-id="{data["controls"]["example"]}"] button[data-index="2"]').click()
        menu.select_option(str(H + 1))
        page.wait_for_function("([id]) => document.querySelector(`[data-id=\"${id}\"]`).layout.title.text"
                               ".startsWith('layer 1, head 1 ')", arg=[data["panes"]["attention"]], timeout=10_000)
        shown = page.evaluate(SHOWN, data["panes"]["attention"])
        tokens, att = atlas.example(1, 1, 2)
        assert shown["title"].endswith("on sentence 3")
        assert shown["x"] == [f"{t} ({i})" for i, t in enumerate(tokens)]
        np.testing.assert_allclose(np.array(shown["z"]), att.numpy(), atol=1e-6)
        info = page.locator(f'[data-id="{data["panes"]["info"]}"]').inner_text()
        assert info.startswith("layer 1, head 1:")
        assert page.locator(".bl-needs-model:not([hidden])").count() == 0
        assert not errors, errors
        assert not blocked, blocked
    finally:
        page.context.close()


def test_both_views_draw_and_answer_in_jupyterlab(lab, browser):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import bertlab\nfrom bertlab.viz import HeadAtlasView, SteeringView"),
                nbformat.v4.new_code_cell("s = SteeringView('The river [MASK] was muddy after the rain.', "
                                          "feature=1370)\ns"),
                nbformat.v4.new_code_cell(f"a = HeadAtlasView(bertlab.head_atlas(*bertlab.load('bertlab-tiny'), "
                                          f"{TEXTS!r}))\na")]
    nbformat.write(nb, lab.root / "inside_views.ipynb")
    host = lab.url.split("//", 1)[1]
    page, blocked, errors = guarded_page(browser, (f"http://{host}/", f"ws://{host}/", "data:", "blob:"))
    try:
        page.goto(f"{lab.url}/lab/tree/inside_views.ipynb?token={lab.token}")
        app = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
        page.wait_for_function(f"() => {app} && {app}.sessionContext && {app}.sessionContext.session "
                               f"&& {app}.sessionContext.session.kernel "
                               f"&& {app}.sessionContext.session.kernel.status === 'idle'", timeout=90_000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function("() => [...document.querySelectorAll('.bl-view')].filter(v => "
                               "[...v.querySelectorAll('[data-kind=output]')].some(o => o.querySelector('.main-svg'))"
                               ").length >= 2", timeout=TIMEOUT_MS)
        steering, atlas_view = page.locator(".bl-view").nth(0), page.locator(".bl-view").nth(1)
        title = "v => v.querySelector('[data-kind=output] .main-svg .gtitle').textContent"
        # the value slider, one step right: the kernel answers with the bars for the new value
        slider = steering.locator("[data-description=value] input[type=range]")
        before, done = steering.evaluate(title), steering.evaluate("v => v.dataset.done")
        slider.focus()
        slider.press("ArrowRight")
        page.wait_for_function("([v, d]) => v.dataset.done && v.dataset.done !== d",
                               arg=[steering.element_handle(), done], timeout=TIMEOUT_MS)
        page.wait_for_function(f"([v, b]) => ({title})(v) !== b", arg=[steering.element_handle(), before],
                               timeout=TIMEOUT_MS)
        new_value = float(slider.input_value())
        assert f"clamped to {new_value:.2f}" in steering.evaluate(title)
        # a click on the atlas's map: the kernel answers with that head's attention
        ids = json.loads(atlas_view.evaluate("v => JSON.stringify([...v.querySelectorAll('[data-kind=output]')]"
                                             ".map(o => o.dataset.id))"))
        atlas_view.locator(f'[data-id="{ids[0]}"]').scroll_into_view_if_needed()    # on screen, to be clicked
        points = page.evaluate(POINTS, ids[0])
        x0, y0 = points["0.0"]
        name = max(points, key=lambda k: (points[k][0] - x0) ** 2 + (points[k][1] - y0) ** 2)
        done = atlas_view.evaluate("v => v.dataset.done")
        page.mouse.click(*points[name])
        page.wait_for_function("([v, d]) => v.dataset.done && v.dataset.done !== d",
                               arg=[atlas_view.element_handle(), done], timeout=TIMEOUT_MS)
        layer, head = name.split(".")
        page.wait_for_function("([id, t]) => document.querySelector(`[data-id=\"${id}\"]`).layout.title.text"
                               ".startsWith(t)", arg=[ids[1], f"layer {layer}, head {head} "], timeout=TIMEOUT_MS)
        assert not page.locator(".bl-view .bl-html div[style*='#9f1c1c']").count()
        assert not errors, errors
        assert not blocked, blocked
    finally:
        page.context.close()
        lab.shutdown_kernels()
