"""What makes a view fast, checked in JupyterLab (Chromium, network cut): the attention view answers a layer
change in the page itself, from the attention buffer it already has, with exactly the figure Python computes;
a change sends only the panes it altered, and the page merges them into what it shows.

bench/widgets.py --browser measures how long these take; this test holds what they draw.
"""

from __future__ import annotations

import importlib.util
import json

import nbformat
import pytest

from browser.conftest import CHROMIUM

if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
    pytest.skip("the views' browser tests need Playwright and the system's Chromium", allow_module_level=True)

from .test_views_in_browser import offline_page, run_gallery, wait, wait_done  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "The river bank was muddy after the rain, so the dog waited on the grass."

# the page's store of the view's panes (runtime.js), Python's figure in it, and the heatmap as drawn
PANES = """() => {
  const stores = [...globalThis.__bertlab.stores.values()];
  const st = stores.find(s => s.patch) || stores[0];
  const out = [...document.querySelectorAll('.bl-out')].find(o => o._fullData && o.data[0].type === 'heatmap'
                                                                   && o.layout.title.text.includes('where'));
  const sent = st.content[out.dataset.id].figure;
  const z = sent.data[0].z;
  const f = new Float32Array(z.bdata.buffer, z.bdata.byteOffset, z.bdata.byteLength / 4);
  const drawn = out._fullData[0].z;
  const rows = drawn.length, cols = drawn[0].length;
  let diff = 0;
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) diff = Math.max(diff, Math.abs(drawn[i][j] - f[i * cols + j]));
  return {shape: z.shape, rows, cols, diff, title: out.layout.title.text, sentTitle: sent.layout.title.text,
          patched: st.patch ? Object.keys(st.patch.panes) : [], pane: out.dataset.id,
          panes: Object.keys(st.content).filter(k => !st.content[k].gone), plots: out._plots || 0,
          last: globalThis.__bertlab.latencies.slice(-1)[0]};
}"""


# count plotly's draws of the heatmap from now on
COUNT_DRAWS = """() => {
  const out = [...document.querySelectorAll('.bl-out')].find(o => o._fullData && o.data[0].type === 'heatmap'
                                                                   && o.layout.title.text.includes('where'));
  out._plots = 0;
  if (!out._counting) { out._counting = true; out.on('plotly_afterplot', () => { out._plots += 1; }); }
}"""


def test_the_attention_view_answers_layer_changes_in_the_page_with_python_s_figure(lab, browser):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("from bertlab.viz import AttentionExplorer"),
                nbformat.v4.new_code_cell(f"w = AttentionExplorer({TEXT!r}, model='bertlab-tiny')\n"
                                          "w.show_grid.value = True\nw")]
    nbformat.write(nb, lab.root / "fast.ipynb")
    offline = offline_page(browser, lab.url.split("//", 1)[1])
    page, errors, blocked = offline.page, offline.errors, offline.blocked
    try:
        run_gallery(page, f"{lab.url}/lab/tree/fast.ipynb?token={lab.token}")
        wait(page, "() => document.querySelectorAll('.bl-view[data-drawn] .main-svg').length >= 2", None,
             "the heatmap and the grid drawn")
        view = page.locator(".bl-view").first
        slider = view.locator("input[type=range]").first              # the layer slider
        page.evaluate(COUNT_DRAWS)
        for key in ("ArrowRight", "ArrowLeft", "ArrowRight"):
            before = view.evaluate("v => v.dataset.done")
            slider.focus()
            slider.press(key)
            wait_done(page, view, before)
            seen = page.evaluate(PANES)
            # drawn by the page before Python answered, and the same heatmap as Python's to float32 precision
            assert seen["last"]["local"], seen["last"]
            assert seen["shape"] == f"{seen['rows']},{seen['cols']}" and seen["diff"] < 1e-6, seen
            assert seen["title"] == seen["sentTitle"]
            # only the heatmap travelled back: the grid (every head, unchanged) was not sent again; and the
            # heatmap was drawn once, by the page: Python's answer (the same figure) is not drawn over it
            assert seen["patched"] == [seen["pane"]] and len(seen["panes"]) == 2, seen
            page.wait_for_timeout(300)
            assert page.evaluate(PANES)["plots"] == 1, "the heatmap was drawn more than once for one change"
            page.evaluate(COUNT_DRAWS)
        # a new text needs the model: Python answers it, and both panes come back new
        text = view.locator("input[type=text]").first
        before = view.evaluate("v => v.dataset.done")
        text.fill(TEXT.replace("dog", "cat"))
        text.press("Enter")
        wait_done(page, view, before)
        seen = page.evaluate(PANES)
        assert not seen["last"]["local"] and seen["diff"] < 1e-6 and len(seen["patched"]) == 2, seen
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        page.context.close()
        lab.shutdown_kernels()
        print(json.dumps(seen["last"]))


def test_the_book_shows_a_saved_view_s_content_never_its_last_patch(browser):
    # a saved state carries the last `patch` a live page got; the book sanitises `content` only, so its
    # runtime must draw `content` and nothing from `patch` (a hostile notebook could put anything there)
    from ipywidgets.widgets.widget import _remove_buffers

    from bertlab.viz.views import View, show_html
    from bertlab.viz.views import controls as W
    from bertlab.viz.views.page import embed
    out = W.Output()
    view = View(W.VBox([out]))
    show_html(out, "<p>saved</p>")
    state, paths, buffers = _remove_buffers(view.get_state())
    state["patch"] = {"n": 1, "panes": {out.id: {"rev": 10_000, "html": "<p id='evil'>patched</p>"}}}
    entry = {"model_name": "AnyModel", "state": state, "buffers": []}
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(f"<html><body>{embed(entry)}</body></html>")
        page.wait_for_function("() => document.querySelector('.bl-view[data-drawn]')", timeout=30_000)
        assert "saved" in page.inner_text(".bl-view") and not page.locator("#evil").count()
    finally:
        context.close()
