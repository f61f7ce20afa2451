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
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser.conftest import CHROMIUM, OfflinePage, stop_process
from testkit import free_port

HERE = Path(__file__).resolve().parent
GALLERY = HERE / "fixtures" / "gallery.ipynb"
MARIMO_GALLERY = HERE / "fixtures" / "gallery_marimo.py"
if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
    pytest.skip("the views' browser tests need Playwright and the system's Chromium", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT_MS = int(float(os.environ.get("BERTLAB_BROWSER_TIMEOUT", "120")) * 1000)


def n_views() -> int:
    nb = json.loads(GALLERY.read_text())
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code" and "(" in "".join(c["source"])
               and not "".join(c["source"]).startswith("from "))


def _notebook7_own_error(e) -> bool:
    """Notebook 7.6 with expose_app_in_browser throws "reading 'schema'" from its own settings code
    (notebook_core.js) on every page, with or without a view: not ours, so not counted."""
    first_frame = (e.stack or "").split("\n")[1:2]
    return bool(first_frame and "/static/notebook/notebook_core." in first_frame[0])


def offline_page(browser, host: str) -> OfflinePage:
    """A page whose requests may go only to `host` (the local server), data: and blob:."""
    return OfflinePage(browser, (f"http://{host}/", f"ws://{host}/", "data:", "blob:"), ignore=_notebook7_own_error)


# ---- what every front end shares: wait for the views, drive each ----------------------------------------

# every view on the page, inside shadow roots too (marimo draws each widget in one)
VIEWS = """(() => { const out = []; const walk = (root) => {
  root.querySelectorAll('.bl-view').forEach(v => out.push(v));
  root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) walk(e.shadowRoot); }); };
  walk(document); return out; })()"""
ALL_DRAWN = """(n) => {
  const views = """ + VIEWS + """;
  if (views.length < n) return false;
  return views.every(v => {
    const outs = [...v.querySelectorAll('[data-kind=output]')];
    return v.dataset.drawn && (outs.length === 0 || outs.some(o => o.querySelector('.main-svg, table')));
  });
}"""
STATE = """() => """ + VIEWS + """.map(v => ({
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


def drive_interact(page) -> list[str]:
    """The gallery's `interact` view (bertlab.viz.interact, a curve of lr_schedule): typing more words, moving the
    warm-up slider and clicking the other peak each redraw the figure with the function's new answer."""
    view = page.locator(".bl-view", has=page.locator("[data-description=warmup]"))
    assert view.count() == 1, "the gallery's interact view is missing"
    curve = ("v => { const d = v.querySelector('[data-kind=output]')._fullData[0];"
             " return JSON.stringify([Array.from(d.x), Array.from(d.y)]); }")

    def act(what, do):
        before, shown = view.evaluate("v => v.dataset.done"), view.evaluate(curve)
        do()
        wait_done(page, view, before)
        wait(page, f"([v, old]) => ({curve})(v) !== old", [view.element_handle(), shown],
             f"interact's figure to change after {what}")
        return json.loads(view.evaluate(curve))

    text = view.locator("input[type=text]")
    x, _ = act("typing", lambda: (text.fill("four words in all"), text.press("Enter")))
    assert x[-1] == 40                                   # 10 steps a word: the function's answer, drawn
    slider = view.locator("input[type=range]")
    act("the slider", lambda: (slider.focus(), slider.press("ArrowLeft")))
    _, y = act("a toggle", lambda: view.locator("button.bl-btn[aria-pressed=false]").first.click())
    assert abs(max(y) - float(view.locator("button.bl-btn[aria-pressed=true]").inner_text())) < 1e-9
    return ["typing", "slider", "toggle"]


def wait_done(page, view, before) -> None:
    wait(page, "([v, b]) => v.dataset.done && v.dataset.done !== b", [view.element_handle(), before],
         "a view to answer a change")


def run_gallery(page, url: str) -> None:
    """Open the gallery in a Jupyter front end (Lab 4 or Notebook 7: both expose `window.jupyterapp`), wait for
    its kernel, run every cell."""
    page.goto(url)
    app = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
    page.wait_for_function(f"() => {app} && {app}.sessionContext && {app}.sessionContext.session "
                           f"&& {app}.sessionContext.session.kernel "
                           f"&& {app}.sessionContext.session.kernel.status === 'idle'", timeout=90_000, polling=250)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def latencies(page, view: str | None = None) -> list[float]:
    """Milliseconds from each change to its drawn answer, every view's (or only those drawn by js/<view>.js)."""
    return page.evaluate("(v) => (globalThis.__bertlab && globalThis.__bertlab.latencies || [])"
                         ".filter(l => !v || l.view === v).map(l => l.ms)", view)


def summary(name: str, lat: list[float]) -> str:
    if not lat:
        return f"{name}: no latencies"
    q = statistics.quantiles(lat, n=20)[-1] if len(lat) > 1 else lat[0]
    return f"{name}: {len(lat)} changes drawn, median {statistics.median(lat):.0f} ms, p95 {q:.0f} ms"


# ---- JupyterLab 4 -------------------------------------------------------------------------------------------

def test_views_in_jupyterlab(lab, browser, report):
    shutil.copy(GALLERY, lab.root / "gallery.ipynb")
    host = lab.url.split("//", 1)[1]
    view = offline_page(browser, host)
    page, errors, blocked = view.page, view.errors, view.blocked
    try:
        run_gallery(page, f"{lab.url}/lab/tree/gallery.ipynb?token={lab.token}")
        driven = drive_views(page, n_views())
        driven["interact"] = drive_interact(page)
        report.append(summary("JupyterLab", latencies(page)) + f"; driven {driven}")
        report.append(summary("JupyterLab, interact", latencies(page, "interact")))
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        page.context.close()
        lab.shutdown_kernels()


# ---- Notebook 7 ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    """A Notebook 7 server on 127.0.0.1 (its own config, data and runtime folders) serving the gallery."""
    pytest.importorskip("notebook", reason="Notebook 7 is not installed (pip install notebook)")
    base = tmp_path_factory.mktemp("nb7")
    root = base / "root"
    root.mkdir()
    shutil.copy(GALLERY, root / "gallery.ipynb")
    env = dict(os.environ, OMP_NUM_THREADS="1", JUPYTER_PLATFORM_DIRS="1")
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython")):
        env[var] = str(base / sub)
        (base / sub).mkdir()
    port, token = free_port(), os.urandom(16).hex()
    cmd = [sys.executable, "-m", "notebook", "--no-browser", "--ip", "127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
           "--JupyterNotebookApp.expose_app_in_browser=True"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/api/status?token={token}", proc, log)
        yield url, token
    finally:
        stop_process(proc)


def wait_for_http(url: str, proc, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with code {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer within {seconds:.0f} s:\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.25)


def test_views_in_notebook7(notebook7, browser, report):
    url, token = notebook7
    view = offline_page(browser, url.split("//", 1)[1])
    page, errors, blocked = view.page, view.errors, view.blocked
    try:
        run_gallery(page, f"{url}/notebooks/gallery.ipynb?token={token}")
        driven = drive_views(page, n_views())
        report.append(summary("Notebook 7", latencies(page)) + f"; driven {driven}")
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        page.context.close()


# ---- marimo -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def marimo_app(tmp_path_factory):
    """`marimo run` of the gallery's marimo twin on 127.0.0.1 (no token: the port is local and random)."""
    pytest.importorskip("marimo", reason="marimo is not installed (pip install marimo)")
    base = tmp_path_factory.mktemp("marimo")
    app = base / "gallery_marimo.py"
    shutil.copy(MARIMO_GALLERY, app)
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", MARIMO_SKIP_UPDATE_CHECK="1", HOME=str(base))
    cmd = [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1", "-p", str(port),
           "--no-token", "--no-sandbox"]
    log = base / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=base, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/health", proc, log)
        yield url
    finally:
        stop_process(proc)


def test_views_in_marimo(marimo_app, browser, report):
    view = offline_page(browser, marimo_app.split("//", 1)[1])
    page, errors, blocked = view.page, view.errors, view.blocked
    try:
        page.goto(marimo_app)
        driven = drive_views(page, n_views())
        driven["interact"] = drive_interact(page)
        report.append(summary("marimo", latencies(page)) + f"; driven {driven}")
        report.append(summary("marimo, interact", latencies(page, "interact")))
        assert not errors, errors
        assert not blocked, f"the page asked the network for {blocked}"
    finally:
        page.context.close()
