"""In the browser: from a person's change to the drawn figure, p50 / p95 per view (bench/widgets.py --browser).

Starts JupyterLab on 127.0.0.1 in a temporary folder with a notebook of every view (~32 tokens, bertlab-mini;
the attention view also at 512 tokens), opens it in the system's Chromium (network cut: only the server), runs
it, and for each view changes its main control `interactions` times (a slider with the keyboard, a toggle or a
button clicked) after a few untimed warm-ups. The time of one change is measured by the view's own module:
from the moment it sends the change to the moment plotly.js has drawn the answer (`__bertlab.latencies`), so it
includes the trip to the kernel, the computation, the binary state coming back and the drawing.

Where the time goes, per change (medians): `recv`, from sending the change to Python's answer arriving in the
page (the kernel's handling, `py`, plus the trip both ways through the Jupyter server and the decoding of the
message); `draw`, from there to the figure drawn; `local`, how many changes the page answered itself (the
attention view's layer, head... from the buffer it has). And CPU time per change, which a loaded machine does
not inflate the way it inflates wall time: the kernel's and the Jupyter server's (from /proc) and the
browser page's main thread (Chrome's `TaskDuration`).

`baseline` (a folder with another checkout of bertlab, say `git archive` of the commit before a change) runs
the same notebook in a second JupyterLab whose kernel imports that bertlab; the two pages are measured in
turns, view by view, so both see the same load.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
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


def _cpu_ms(pids: list[int]) -> float:
    """CPU time (user + system) of these processes so far, in ms (Linux /proc; 0 elsewhere)."""
    total = 0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 1) if xs else None


def _q(xs: list[float], f: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(f * (len(xs) - 1)))]


class _Lab:
    """One JupyterLab server (its kernel importing bertlab from `src`), one page of the bench notebook in it."""

    def __init__(self, label: str, src: Path, notebook, browser, log, local: bool = True, front: str = "lab"):
        self.label, self.log, self.front = label, log, front
        self.base = Path(tempfile.mkdtemp(prefix=f"bertlab-bench-{label}-"))
        nbformat.write(notebook, self.base / "bench.ipynb")
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), JUPYTER_PLATFORM_DIRS="1",
                   PYTHONPATH=os.pathsep.join([str(src)] + [p for p in os.environ.get("PYTHONPATH", "").split(
                       os.pathsep) if p]))
        for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                         ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython")):
            env[var] = str(self.base / sub)
        self.port, token = _port(), os.urandom(8).hex()
        # JupyterLab 4 or Notebook 7: both expose `window.jupyterapp`, whose current widget is the notebook
        app, expose = FRONTS[front]
        cmd = [sys.executable, "-m", app, "--no-browser", "--ip", "127.0.0.1", f"--port={self.port}",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={self.base}",
               f"--{expose}.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self.proc = subprocess.Popen(cmd, cwd=self.base, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{self.port}"
        for _ in range(360):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        # a context of its own: its own renderer, so the page's CPU time is this page's alone
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        if not local:                            # the views' own answers in the page turned off (runtime.js)
            self.context.add_init_script("globalThis.__bertlab = Object.assign(globalThis.__bertlab || {}, "
                                         "{local: false});")
        self.page = page = self.context.new_page()
        port = self.port
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            (f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/", "data:", "blob:")) else r.abort())
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Performance.enable")
        page.goto(f"{url}/{'lab/tree' if front == 'lab' else 'notebooks'}/bench.ipynb?token={token}")

    def start(self, n_views: int) -> None:
        app = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
        self.page.wait_for_function(f"() => {app} && {app}.sessionContext.session && {app}.sessionContext.session"
                                    ".kernel && {app}.sessionContext.session.kernel.status === 'idle'".replace(
                                        "{app}", app), timeout=120_000)
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_function("(n) => document.querySelectorAll('.bl-view[data-drawn]').length >= n",
                                    arg=n_views, timeout=300_000, polling=250)
        kids = _children(self.proc.pid)
        self.kernel = [k for k in kids if "ipykernel" in Path(f"/proc/{k}/cmdline").read_bytes().decode(
            "utf-8", "replace")]

    def task_ms(self) -> float:
        """The page's main-thread busy time so far (Chrome's TaskDuration), in ms."""
        metrics = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return metrics.get("TaskDuration", 0.0) * 1000

    def python_timings(self) -> list[dict]:
        """View.timings from the kernel (a bertlab without them: none)."""
        code = ("import json\ntry:\n    from bertlab.viz.views.base import View\n    print('@@' + json.dumps("
                "list(View.timings)))\nexcept Exception:\n    print('@@[]')")
        out = self.page.evaluate("""async (code) => {
          const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
          let text = "";
          const f = k.requestExecute({ code, silent: false, store_history: false });
          f.onIOPub = (msg) => { if (msg.header.msg_type === "stream") text += msg.content.text; };
          await f.done;
          return text;
        }""", code)
        line = [x for x in out.splitlines() if x.startswith("@@")]
        return json.loads(line[-1][2:]) if line else []

    def measure(self, i: int, name: str, interactions: int, warmup: int) -> dict:
        page, view = self.page, self.page.locator(".bl-view").nth(i)
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
        handle = view.element_handle()
        for k in range(warmup + interactions):
            if k == warmup:
                page.evaluate("() => { __bertlab.latencies.length = 0; }")
                py0 = len(self.python_timings())
                cpu0 = (_cpu_ms(self.kernel), _cpu_ms([self.proc.pid]), self.task_ms())
            before = view.evaluate("v => v.dataset.done")
            act(k)
            page.wait_for_function("([v, b]) => v.dataset.done !== b", arg=[handle, before], timeout=60_000,
                                   polling=5)
        cpu1 = (_cpu_ms(self.kernel), _cpu_ms([self.proc.pid]), self.task_ms())
        lat = page.evaluate("() => __bertlab.latencies")
        py = self.python_timings()[py0:]
        ms = [x["ms"] for x in lat]
        n = max(1, len(ms))
        remote = [x for x in lat if not x.get("local")]
        return dict(case=f"{name} ({what})", tree=self.label, front=self.front, n=len(ms), p50_ms=round(_q(ms, 0.5), 1),
                    p95_ms=round(_q(ms, 0.95), 1), local=sum(1 for x in lat if x.get("local")),
                    recv_ms=_median([x["recv"] for x in remote if "recv" in x]),
                    draw_ms=_median([x["draw"] for x in lat if "draw" in x]),
                    py_ms=_median([x["handle_ms"] for x in py]), pack_ms=_median([x.get("pack_ms", 0) for x in py]),
                    send_ms=_median([x["send_ms"] for x in py]),
                    kernel_cpu_ms=round((cpu1[0] - cpu0[0]) / n, 1), server_cpu_ms=round((cpu1[1] - cpu0[1]) / n, 1),
                    page_cpu_ms=round((cpu1[2] - cpu0[2]) / n, 1), load=os.getloadavg()[0])

    def close(self) -> None:
        for sig in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout=8)
                except subprocess.TimeoutExpired:
                    pass
        if self.proc.poll() is None:
            self.proc.kill()
        shutil.rmtree(self.base, ignore_errors=True)


FRONTS = {"lab": ("jupyterlab", "LabApp"), "nb7": ("notebook", "JupyterNotebookApp")}


def run(interactions: int = 20, warmup: int = 3, chromium: str | None = None, log=print,
        baseline: Path | None = None, only: set[str] | None = None, baseline_local: bool = True,
        front: str = "lab") -> list[dict]:
    """Rows {case, tree, n, p50_ms, p95_ms, local, recv_ms, draw_ms, py_ms, pack_ms, send_ms, kernel_cpu_ms,
    server_cpu_ms, page_cpu_ms, load}, one per view (and per tree: "this", and "baseline" when given).
    `front`: "lab" (JupyterLab 4) or "nb7" (Notebook 7). `baseline_local=False` turns the views' own answers off in the baseline's page (the same code with and
    without them: `--baseline HEAD --no-local-baseline`)."""
    from playwright.sync_api import sync_playwright

    import bertlab

    _, tok = bertlab.load("bertlab-mini")
    chosen = [c for c in cases(tok) if not only or c[0].split("/")[0] in only]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_code_cell("from bertlab.viz import *"))
    nb.cells += [nbformat.v4.new_code_cell(src) for _, src in chosen]
    here = Path(bertlab.__file__).resolve().parent.parent
    trees = [("this", here)] + ([("baseline", Path(baseline).resolve())] if baseline else [])
    rows, labs = [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium or shutil.which("chromium"), headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            labs = [_Lab(label, src, nb, browser, log, local=label == "this" or baseline_local, front=front)
                    for label, src in trees]
            for lab in labs:
                lab.start(len(chosen))
            for i, (name, _) in enumerate(chosen):
                # the trees in turns, the order swapped every view: both see the same load
                for lab in (labs if i % 2 == 0 else labs[::-1]):
                    lab.page.bring_to_front()
                    row = lab.measure(i, name, interactions, warmup)
                    log(f"{row['case']} [{row['tree']}]: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms over "
                        f"{row['n']} changes ({row['local']} answered in the page); recv {row['recv_ms']}, draw "
                        f"{row['draw_ms']}, python {row['py_ms']} (pack {row['pack_ms']}, send {row['send_ms']}); "
                        f"CPU per change: kernel {row['kernel_cpu_ms']}, server {row['server_cpu_ms']}, page "
                        f"{row['page_cpu_ms']} ms; load {row['load']:.1f}")
                    rows.append(row)
            browser.close()
    finally:
        for lab in labs:
            lab.close()
    return rows
