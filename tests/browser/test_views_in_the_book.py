"""Views live on a book page without a kernel (bertlab.viz.views.page), in Chromium with the network cut.

The page is what the book renders for a view: its saved state (as an executed notebook stores it: JSON with
base64 buffers) and the in-page runtime, beside the site's plotly.min.js. The attention view must draw, and
every control that can be computed from the saved attention must answer in the page with exactly what
`bertlab.probe.attention_map` gives in Python; a new text must be refused with a note, not a wrong picture.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil

import numpy as np
import pytest

CHROMIUM = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
    pytest.skip("the book's view test needs Playwright and the system's Chromium", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def saved_entry(widget) -> dict:
    """A view's state as nbclient stores it in a notebook's metadata (buffers base64 beside their paths)."""
    from ipywidgets.widgets.widget import _remove_buffers
    state, paths, buffers = _remove_buffers(widget.view.get_state())
    return {"model_name": "AnyModel", "model_module": "anywidget", "state": state,
            "buffers": [{"encoding": "base64", "path": p, "data": base64.b64encode(bytes(b)).decode()}
                        for p, b in zip(paths, buffers)]}


def test_attention_view_is_live_on_a_book_page(tmp_path):
    from playwright.sync_api import sync_playwright

    import bertlab
    from bertlab.probe.attention_maps import AttentionMap
    from bertlab.viz import AttentionExplorer
    from bertlab.viz.views import plotly_source
    from bertlab.viz.views.page import embed

    model, tok = bertlab.load("bertlab-tiny", device="cpu")
    text = "The playwright wrote it on the riverbank."
    w = AttentionExplorer(text, model=(model, tok))
    (tmp_path / "plotly.min.js").write_bytes(plotly_source())
    page_html = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><script src="plotly.min.js"></script></head>'
                 f"<body>{embed(saved_entry(w))}</body></html>")
    (tmp_path / "page.html").write_text(page_html)
    enc = tok(text)
    out = model(**enc, output_attentions=True)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            blocked, errors = [], []
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                       else (blocked.append(r.request.url), r.abort()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((tmp_path / "page.html").as_uri())
            page.wait_for_selector(".bl-view [data-kind=output] .main-svg", timeout=30_000)

            def shown():
                return page.evaluate("""() => { const d = document.querySelector('.bl-view [data-kind=output]');
                  const t = d.data[0]; return {title: d.layout.title.text, x: Array.from(t.x),
                  z: Array.from(t.z, r => Array.from(r))}; }""")

            def control(description):
                return page.locator(f".bl-view [data-description='{description}']")

            settings = [("layer", dict(layer=1, head=0)), ("head", dict(layer=1, head=1))]
            for name, opts in settings:
                slider = control(name).locator("input[type=range]")
                slider.focus()
                slider.press("ArrowRight")
                page.wait_for_function("(t) => document.querySelector('.bl-view [data-kind=output]')"
                                       ".layout.title.text.startsWith(t)", arg=f"layer {opts['layer']}, head "
                                       f"{opts['head']}", timeout=10_000)
                want = AttentionMap.from_output(out, enc.tokens, **opts)
                got = shown()
                assert got["title"] == f"{want.title}: where each token looks"
                np.testing.assert_allclose(np.array(got["z"]), want.weights.numpy(), atol=1e-6)

            # words, [CLS]/[SEP] hidden, a threshold and a layer's heads summed: all computed in the page
            control("words, not WordPieces").locator("input").check()
            control("hide [CLS]/[SEP]").locator("input").check()
            control("show").locator("select").select_option(label="this layer's heads, sum")
            slider = control("threshold").locator("input[type=range]")
            slider.fill("0.1")
            slider.dispatch_event("change")
            page.wait_for_function("() => document.querySelector('.bl-view [data-kind=output]')"
                                   ".layout.title.text.includes('weights ≥ 0.1')", timeout=10_000)
            want = AttentionMap.from_output(out, enc.tokens, layer=1, head="all", reduce="sum", words=True,
                                            hide_special=True, threshold=0.1)
            got = shown()
            assert got["title"] == f"{want.title}: where each token looks"
            assert got["x"] == [f"{t} ({i})" for i, t in enumerate(want.tokens)]
            np.testing.assert_allclose(np.array(got["z"]), want.weights.numpy(), atol=1e-5)

            # a new text needs the model: refused with a note, the figure unchanged
            box = page.locator(".bl-view input[type=text]").first
            box.fill("Another sentence entirely.")
            box.press("Enter")
            page.wait_for_selector(".bl-needs-model:not([hidden])", timeout=10_000)
            assert "needs the model" in page.locator(".bl-needs-model").inner_text()
            assert shown()["title"] == f"{want.title}: where each token looks"
            assert not errors, errors
            assert not blocked, blocked
        finally:
            browser.close()


def test_interact_is_live_on_a_book_page_over_its_saved_answers(tmp_path):
    """A notebook's own live cell (bertlab.viz.interact) on a book page: every menu and toggle change is looked
    up among the answers saved when it was built (figures with binary arrays, an error line), after the book's
    cleaning (trusted_view); a new text needs a kernel and is refused with the note."""
    import plotly.graph_objects as go
    from playwright.sync_api import sync_playwright

    from bertlab.book.sanitize import trusted_view
    from bertlab.viz import interact
    from bertlab.viz.views import controls as W
    from bertlab.viz.views import plotly_source
    from bertlab.viz.views.page import embed

    def letters(word, scale, flip):
        if scale == 3:
            raise ValueError("scale 3 is too much")
        y = [scale * (i + 1) for i in range(len(word))]
        return go.Figure(go.Bar(x=list(word), y=y[::-1] if flip else y)).update_layout(title=f"{word} ×{scale}")

    w = interact(letters, word="playwright", scale=W.Dropdown(options=[1, 2, 3]), flip=W.ToggleButtons(options=[False, True]))
    assert w.saved == 6
    (tmp_path / "plotly.min.js").write_bytes(plotly_source())
    (tmp_path / "page.html").write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><script src="plotly.min.js"></script></head>'
        f"<body>{embed(trusted_view(saved_entry(w)))}</body></html>")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            blocked, errors = [], []
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                       else (blocked.append(r.request.url), r.abort()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((tmp_path / "page.html").as_uri())
            page.wait_for_selector(".bl-view [data-kind=output] .main-svg", timeout=30_000)
            shown = ("() => { const d = document.querySelector('.bl-view [data-kind=output]');"
                     " return d._fullData ? {title: d.layout.title.text, y: Array.from(d._fullData[0].y)} : null; }")

            def wait_title(title):
                page.wait_for_function(f"() => {{ const s = ({shown})(); return s && s.title === {title!r}; }}",
                                       timeout=10_000)
                return page.evaluate(shown)

            page.locator(".bl-view [data-description=scale] select").select_option(label="2")
            assert wait_title("playwright ×2")["y"] == [2 * (i + 1) for i in range(10)]
            page.locator(".bl-view button.bl-btn", has_text="True").click()
            page.wait_for_function(f"() => ({shown})().y[0] === 20", timeout=10_000)
            assert page.evaluate(shown)["y"] == [2 * (i + 1) for i in range(10)][::-1]
            # the combination that failed in Python shows its one-line message, and no figure
            page.locator(".bl-view [data-description=scale] select").select_option(label="3")
            page.wait_for_selector(".bl-view .bl-html div", timeout=10_000)
            assert page.locator(".bl-view .bl-html").inner_text() == "scale 3 is too much"
            assert page.evaluate("() => document.querySelector('.bl-view [data-kind=output]').dataset.empty") == "1"
            page.locator(".bl-view [data-description=scale] select").select_option(label="1")
            wait_title("playwright ×1")
            assert page.locator(".bl-view .bl-html").inner_text() == ""
            # a new word needs the kernel: refused with the note, the figure unchanged
            box = page.locator(".bl-view input[type=text]")
            box.fill("another")
            box.press("Enter")
            page.wait_for_selector(".bl-needs-model:not([hidden])", timeout=10_000)
            assert page.evaluate(shown)["title"] == "playwright ×1"
            assert not errors, errors
            assert not blocked, blocked
        finally:
            browser.close()
