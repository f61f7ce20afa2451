"""In the browser: from a person's change to the drawn figure, p50 / p95 per view (bench/widgets.py --browser).

Starts JupyterLab on 127.0.0.1 in a temporary folder with a notebook of every view (~32 tokens, bertlab-mini;
the attention view also at 512 tokens), opens it in the system's Chromium (network cut: only the server), runs
it, and for each view changes its main control `interactions` times (a slider with the keyboard, a toggle or a
button clicked) after a few untimed warm-ups. The time of one change is measured by the view's own module:
from the moment it sends the change to the moment plotly.js has drawn the answer (`__bertlab.latencies`), so it
includes the trip to the kernel, the computation, the binary state coming back and the drawing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat

PASSAGE = ("Grace walked along the muddy bank of the river with her brother and their old dog while brown "
           "leaves floated past them on the slow current and a family of ducks paddled close to the far shore "
           "near the village bridge")
SENTENCES = ["Grace walked along the muddy bank of the river. | river",
             "The ducks rested on the grassy bank near the water. | river",
             "Tom went to the bank to open a savings account. | money",
             "The bank pays a small amount of interest each year. | money"]


def fit(tok, passage: str, n: int) -> str:
    words = (passage + " ") * (1 + 4 * n // len(passage.split()))
    words = words.split()
    while len(tok(" ".join(words))) > n:
        words = words[:-max(1, (len(tok(" ".join(words))) - n) // 2)]
    return " ".join(words)


def cases(tok) -> list[tuple[str, str]]:
    """(name, constructor source): what each cell of the bench notebook shows."""
    t32, t512 = fit(tok, PASSAGE, 32), fit(tok, PASSAGE, 512)
    m = 'model="bertlab-mini"'
    return [("AttentionExplorer/32", f"AttentionExplorer({t32!r}, {m})"),
            ("AttentionExplorer/512", f"AttentionExplorer({t512!r}, {m})"),
            ("MaskPlayground/32", f"MaskPlayground({t32!r}, {m}, mask='river')"),
            ("MaskingLab/32", f"MaskingLab({t32!r}, {m})"),
            ("EmbeddingSumExplorer/32", f"EmbeddingSumExplorer({t32!r}, '', {m})"),
            ("NSPExplorer/32", f"NSPExplorer({t32[:120]!r}, 'The ducks swam away.', {m})"),
            ("ContextExplorer/4x~12", f"ContextExplorer('bank', {SENTENCES!r}, {m})")]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(interactions: int = 20, warmup: int = 3, chromium: str | None = None, log=print) -> list[dict]:
    from playwright.sync_api import sync_playwright

    import bertlab

    _, tok = bertlab.load("bertlab-mini")
    chosen = cases(tok)
    base = Path(tempfile.mkdtemp(prefix="bertlab-bench-"))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_code_cell("from bertlab.viz import *"))
    nb.cells += [nbformat.v4.new_code_cell(src) for _, src in chosen]
    nbformat.write(nb, base / "bench.ipynb")
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), JUPYTER_PLATFORM_DIRS="1")
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython")):
        env[var] = str(base / sub)
    port, token = _port(), os.urandom(8).hex()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip", "127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={base}", "--LabApp.expose_app_in_browser=True"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, cwd=base, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for _ in range(360):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium or shutil.which("chromium"), headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
                (f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/", "data:", "blob:")) else r.abort())
            page.goto(f"{url}/lab/tree/bench.ipynb?token={token}")
            app = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
            page.wait_for_function(f"() => {app} && {app}.sessionContext.session && {app}.sessionContext.session"
                                   ".kernel && {app}.sessionContext.session.kernel.status === 'idle'".replace(
                                       "{app}", app), timeout=120_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function("(n) => document.querySelectorAll('.bl-view[data-drawn]').length >= n",
                                   arg=len(chosen), timeout=300_000, polling=250)
            views = page.locator(".bl-view")
            for i, (name, _) in enumerate(chosen):
                view = views.nth(i)
                view.scroll_into_view_if_needed()
                slider = view.locator("input[type=range]:not([disabled])").first
                if name.startswith(("AttentionExplorer", "ContextExplorer")) and slider.count():
                    what = "slider"

                    first = "ArrowLeft" if slider.evaluate("s => +s.value >= +s.max") else "ArrowRight"
                    back = {"ArrowLeft": "ArrowRight", "ArrowRight": "ArrowLeft"}[first]

                    def act(k, slider=slider, first=first, back=back):
                        slider.focus()
                        slider.press(first if k % 2 == 0 else back)
                elif name.startswith("MaskPlayground"):
                    what = "token click"

                    def act(k, view=view):
                        view.locator(".bl-group button[aria-pressed=false]").nth(k % 3).click()
                else:
                    what = "button"
                    button = view.locator("button.bl-btn:not([disabled])").filter(visible=True).last

                    def act(k, button=button):
                        button.click()
                for k in range(warmup + interactions):
                    if k == warmup:
                        page.evaluate("() => { __bertlab.latencies.length = 0; }")
                    before = view.evaluate("v => v.dataset.done")
                    act(k)
                    page.wait_for_function("([v, b]) => v.dataset.done !== b", arg=[view.element_handle(), before],
                                           timeout=60_000, polling=5)
                lat = sorted(page.evaluate("() => __bertlab.latencies.map(l => l.ms)"))
                p50, p95 = (lat[min(len(lat) - 1, round(f * (len(lat) - 1)))] for f in (0.5, 0.95))
                row = dict(case=f"{name} ({what})", n=len(lat), p50_ms=round(p50, 1), p95_ms=round(p95, 1))
                log(f"{row['case']}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms over {row['n']} changes")
                rows.append(row)
            browser.close()
    finally:
        for sig in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
            if proc.poll() is None:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=8)
                except subprocess.TimeoutExpired:
                    pass
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(base, ignore_errors=True)
    return rows
