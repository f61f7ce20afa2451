"""One JupyterLab server for the browser tests (tests/browser); the browser itself is in the test module.

Module-scoped, so the server and the browser are gone before the rest of the suite (nbval) runs.

The server runs from this Python (`python -m jupyterlab`) on 127.0.0.1 with a random token, a free port and
every Jupyter/IPython directory inside a temporary folder, so nobody's own settings or extensions leak in.
Its root is a temporary copy of `notebooks/`: running the notebooks never modifies the repository, and a
notebook that only works beside the repository's other folders fails here (as it would after `bertlab lab`).

`network` records what the browser's route let through and aborted: only 127.0.0.1 (this server), data: and
blob: may load; anything else is aborted and listed, and the test asserts the list is empty.

Stopping: the server by its PID (SIGINT twice, which also shuts its kernels down, then SIGTERM, SIGKILL).

What every browser module shares lives here once (a module takes the fixtures by name and the helpers with
`from browser.conftest import OfflinePage, serve_folder, stop_process`):
- `browser`: the system's headless Chromium through Playwright, one per module (Playwright's sync API allows one
  instance at a time, and the module's servers are gone with it);
- `OfflinePage(browser, allowed)`: a page in a context of its own whose every request outside `allowed` is
  aborted and listed (`.blocked`, `.requested`), with its uncaught JavaScript errors (`.errors`);
- `serve_folder(folder)`: a quiet static file server on 127.0.0.1 and a free port, as a context manager;
- `stop_process(proc)`: ends a server this test started, by its PID.
Under pytest-xdist every module here runs whole on one worker (`--dist loadfile`, pyproject), so its servers,
ports and temporary folders are its worker's own.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testkit import free_port

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


def find_chromium() -> str | None:
    """The system's Chromium: `BROWSER_PATH` if set (as kaleido reads it), else chromium on PATH."""
    named = os.environ.get("BROWSER_PATH")
    if named and Path(named).is_file():
        return named
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = find_chromium()
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 900}

# Written into the server's user-settings folder: what a person gets by default, minus what breaks a test.
USER_SETTINGS = {
    # Lab 4 leaves off-screen cells out of the page by default; a test must see every cell and output
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    # no news or update checks: they would ask jupyter.org, which the offline check forbids
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
}


@dataclass
class Lab:
    url: str            # http://127.0.0.1:PORT
    token: str
    root: Path          # the server's root_dir: a copy of notebooks/
    pid: int
    log: Path

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every session and kernel (each test starts from a cold kernel; a 2-core machine needs the CPU)."""
        try:
            sessions = self.api("/api/sessions")
        except (urllib.error.URLError, OSError):
            return                                 # the server is gone: nothing to end
        for s in sessions:
            try:
                self.api(f"/api/sessions/{s['id']}", method="DELETE")
            except urllib.error.URLError:
                pass
        for k in self.api("/api/kernels"):
            try:
                self.api(f"/api/kernels/{k['id']}", method="DELETE")
            except urllib.error.URLError:
                pass

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def stop_process(proc: subprocess.Popen) -> None:
    """SIGINT twice (Jupyter's "shut down? y" prompt is skipped by the second, and its kernels end), then
    SIGTERM, then SIGKILL: by PID, and only the process this test started."""
    for sig, wait in ((signal.SIGINT, 0.5), (signal.SIGINT, 10), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):            # one line per request would drown the test's own output
        pass


@contextlib.contextmanager
def serve_folder(folder: Path):
    """`with serve_folder(site) as url:` a static file server for `folder` on 127.0.0.1 (a free port the system
    picks), stopped when the block ends; `url` ends with a slash."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    """The system's headless Chromium (never Playwright's own download), for this module."""
    if importlib.util.find_spec("playwright") is None or CHROMIUM is None:
        pytest.skip("the browser tests need Playwright and the system's Chromium (bash scripts/install_browser.sh, "
                    "or set BROWSER_PATH)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class OfflinePage:
    """A page in a browser context of its own whose every request outside `allowed` (URL prefixes) is aborted
    and listed in `.blocked`; `.requested` lists every request, `.errors` the page's uncaught JavaScript errors
    but those `ignore(error)` accepts (a front end's own known error, say). `close()` ends the context."""

    def __init__(self, browser, allowed: tuple[str, ...], ignore=None, viewport: dict = VIEWPORT):
        self.context = browser.new_context(viewport=viewport, service_workers="block")
        self.allowed = allowed
        self.blocked, self.requested, self.errors = [], [], []

        def route(r):
            url = r.request.url
            self.requested.append(url)
            if url.startswith(allowed):
                r.continue_()
            else:
                self.blocked.append(url)
                r.abort()
        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: None if ignore is not None and ignore(e)
                     else self.errors.append(f"{e}: {(e.stack or '')[:400]}"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Lab:
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install 'bertlab[notebooks]')")
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(
        "conftest.py", "__pycache__", ".ipynb_checkpoints", ".pytest_cache"))
    settings, workspaces = base / "settings", base / "workspaces"
    for plugin, values in USER_SETTINGS.items():
        package, name = plugin.rsplit("/", 1)
        target = settings / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    workspaces.mkdir()

    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython")):
        env[var] = str(base / sub)
        (base / sub).mkdir()
    # as notebooks/conftest.py does for nbval: one torch thread per kernel
    env.setdefault("OMP_NUM_THREADS", "1")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"

    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip", "127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={workspaces}",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    server = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, pid=proc.pid, log=log)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {proc.returncode}:\n{server.log_tail()}")
            try:
                server.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer /api/status within 90 s:\n{server.log_tail()}")
                time.sleep(0.25)
        yield server
    finally:
        stop_process(proc)


@dataclass
class Network:
    """What the route saw: requests it aborted (anything not 127.0.0.1, data: or blob:), and websockets."""
    allowed_prefixes: tuple[str, ...]
    blocked: list[str] = field(default_factory=list)
    websockets: list[str] = field(default_factory=list)

    def allows(self, url: str) -> bool:
        return url.startswith(self.allowed_prefixes)


@pytest.fixture(scope="module")
def network(lab) -> Network:
    host = lab.url.split("//", 1)[1]
    return Network(allowed_prefixes=(f"http://{host}/", f"ws://{host}/", "data:", "blob:"))


@pytest.fixture(scope="module")
def screenshot_dir(tmp_path_factory) -> Path:
    """Screenshots go to a temporary folder (its path is printed); BERTLAB_SAVE_SCREENSHOTS=1 also copies
    them to docs/screenshots/, where the README's ones live."""
    return tmp_path_factory.mktemp("screenshots")


# ---- the book after nbval -------------------------------------------------------------------------------

def wait_for_nbval(session, executed: Path, timeout_s: float = 1800, lessons: Path = NOTEBOOKS) -> list[str]:
    """Wait until nbval has finished every notebook this session runs (notebooks/conftest.py writes a
    `.ran/NAME` file holding the run's id after a notebook's last cell, passed or not), so the book reuses
    their executed copies instead of running them again. Run alone or serially there is nothing to wait for;
    under pytest-xdist another worker may still be running some. Returns the notebooks it gave up on."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    # the lessons only: nbval also runs other notebooks (the views' gallery in tests/browser/fixtures), which write
    # no mark, so counting them made the book wait its whole timeout (seen in CI: 30 minutes idle at 98 %)
    names = sorted({Path(str(i.fspath)).name for i in session.items if hasattr(i, "cell") and hasattr(i.parent, "nb")
                    and Path(str(i.fspath)).resolve().parent == Path(lessons).resolve()})
    if not run_id or not names:
        return []

    def pending() -> list[str]:
        out = []
        for name in names:
            try:
                done = (executed / ".ran" / name).read_text() == run_id
            except OSError:
                done = False
            if not done:
                out.append(name)
        return out

    deadline = time.monotonic() + timeout_s
    while (left := pending()) and time.monotonic() < deadline:
        time.sleep(2)
    return left


def pytest_collection_modifyitems(config, items):
    """The book's browser test goes last, after nbval has run the notebooks and written their executed copies
    (notebooks/conftest.py), so the book reuses them instead of running every notebook a second time."""
    book = [i for i in items if i.nodeid.startswith("tests/browser/test_book_in_browser.py")]
    if book:
        moved = {id(i) for i in book}
        rest = [i for i in items if id(i) not in moved]
        items[:] = rest + book
