"""Every view drawn and driven in each front end that runs here, in Chromium with the network cut.

One page load per front end: the gallery (fixtures/gallery.ipynb, written by scripts/make_gallery.py; the
marimo one is fixtures/gallery_marimo.py) shows every view; the test waits until each has drawn its figure,
then drives each one as a person does (a slider moved with the keyboard, a sentence typed, a button clicked)
and waits until the view has drawn the answer to that change (the module marks its root with the number of
the event it last answered). The time from each change to its drawn figure is read from the page
(`__bertlab.latencies`) and printed in the summary (bench/widgets.py reports them properly).

Only 127.0.0.1, data: and blob: may load: anything else is aborted and fails the test. plotly.js comes
from the kernel, once per page (bertlab/viz/views/base.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GALLERY = HERE / "fixtures" / "gallery.ipynb"
MARIMO_GALLERY = HERE / "fixtures" / "gallery_marimo.py"
CHROMIUM = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
    pytest.skip("the views' browser tests need Playwright and the system's Chromium", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
TIMEOUT_MS = int(float(os.environ.get("BERTLAB_BROWSER_TIMEOUT", "120")) * 1000)


def n_views() -> int:
    nb = json.loads(GALLERY.read_text())
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code" and "(" in "".join(c["source"])
               and not "".join(c["source"]).startswith("from "))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def offline_page(browser, host: str, blocked: list[str]):
    """A page whose requests may go only to `host` (the local server), data: and blob:."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    allowed = (f"http://{host}/", f"ws://{host}/", "data:", "blob:")

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()
    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


# ---- what every front end shares: wait for the views, drive each ----------------------------------------

ALL_DRAWN = """(n) => {
  const views = [...document.querySelectorAll('.bl-view')];
  if (views.length < n) return false;
  return views.every(v => {
    const outs = [...v.querySelectorAll('[data-kind=output]')];
    return v.dataset.drawn && (outs.length === 0 || outs.some(o => o.querySelector('.main-svg')));
  });
}"""
STATE = """() => [...document.querySelectorAll('.bl-view')].map(v => ({
  drawn: v.dataset.drawn, done: v.dataset.done, error: v.dataset.error,
  outputs: [...v.querySelectorAll('[data-kind=output]')].map(o => o.querySelector('.main-svg') ? 'svg'
                                                               : o.innerHTML.length),
  text: v.innerText.slice(0, 120)}))"""


def wait(page, js, arg=None, what=""):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        return page.wait_for_function(js, arg=arg, timeout=TIMEOUT_MS, polling=100)
    except PlaywrightTimeout:
        pytest.fail(f"timed out waiting for {what}: {json.dumps(page.evaluate(STATE), indent=1)[:3000]}")


def drive_views(page, n: int) -> dict:
    """Drive every view on the page: its first slider, its first text box, its first toggle button. Each
    change must come back drawn (the root's data-done becomes the event's number) with no error line."""
    wait(page, ALL_DRAWN, n, f"{n} views drawn")
    views = page.locator(".bl-view")
    assert views.count() == n
    driven = {}
    for i in range(n):
        view = views.nth(i)
        acts = []
        slider = view.locator("input[type=range]:not([disabled])").first
        if slider.count():
            slider.focus()
            before = view.evaluate("v => v.dataset.done")
            at_end = slider.evaluate("s => +s.value >= +s.max")
            slider.press("ArrowLeft" if at_end else "ArrowRight")
            wait_done(page, view, before)
            acts.append("slider")
        sentences = [t for t in view.locator("input[type=text]").all() if " " in t.input_value()]
        if sentences:                   # a sentence, typed a little longer, then Enter (as a person would)
            text = sentences[0]
            before = view.evaluate("v => v.dataset.done")
            text.fill(text.input_value().rstrip(".") + " again.")
            text.press("Enter")
            wait_done(page, view, before)
            acts.append("text")
        for kind, selector in (("toggle", "button.bl-btn[aria-pressed=false]:not([disabled])"),
                               ("radio", "input[type=radio]:not([disabled])"),
                               ("button", "button.bl-btn:not([aria-pressed]):not([disabled])")):
            control = view.locator(selector).filter(visible=True).first
            if control.count():
                before = view.evaluate("v => v.dataset.done")
                control.click()
                wait_done(page, view, before)
                acts.append(kind)
        assert acts, f"view {i} has nothing a person could change"
        assert not view.locator(".bl-html div[style*='#9f1c1c']").count(), view.inner_text()[:400]
        driven[i] = acts
    return driven


def wait_done(page, view, before) -> None:
    wait(page, "([v, b]) => v.dataset.done && v.dataset.done !== b", [view.element_handle(), before],
         "a view to answer a change")


def latencies(page) -> list[float]:
    return page.evaluate("() => (globalThis.__bertlab && globalThis.__bertlab.latencies || []).map(l => l.ms)")


def summary(name: str, lat: list[float]) -> str:
    if not lat:
        return f"{name}: no latencies"
    q = statistics.quantiles(lat, n=20)[-1] if len(lat) > 1 else lat[0]
    return f"{name}: {len(lat)} changes drawn, median {statistics.median(lat):.0f} ms, p95 {q:.0f} ms"


# ---- JupyterLab 4 -------------------------------------------------------------------------------------------

def test_views_in_jupyterlab(lab, browser, report):
    shutil.copy(GALLERY, lab.root / "gallery.ipynb")
    host = lab.url.split("//", 1)[1]
    blocked: list[str] = []
    page, errors = offline_page(browser, host, blocked)
    try:
        page.goto(f"{lab.url}/lab/tree/gallery.ipynb?token={lab.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
        page.wait_for_function("() => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session"
                               " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
                               " return k && k.status === 'idle'; }", timeout=90_000, polling=250)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        driven = drive_views(page, n_views())
        report.append(summary("JupyterLab", latencies(page)) + f"; driven {driven}")
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        page.context.close()
        lab.shutdown_kernels()
