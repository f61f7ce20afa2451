"""One JupyterLab server for the browser tests (tests/browser); the browser itself is in the test module.

Module-scoped, so the server and the browser are gone before the rest of the suite (nbval) runs.

The server runs from this Python (`python -m jupyterlab`) on 127.0.0.1 with a random token, a free port and
every Jupyter/IPython directory inside a temporary folder, so nobody's own settings or extensions leak in.
Its root is a temporary copy of `notebooks/`: running the notebooks never modifies the repository, and a
notebook that only works beside the repository's other folders fails here (as it would after `bertlab lab`).

`network` records what the browser's route let through and aborted: only 127.0.0.1 (this server), data: and
blob: may load; anything else is aborted and listed, and the test asserts the list is empty.

Stopping: the server by its PID (SIGINT twice, which also shuts its kernels down, then SIGTERM, SIGKILL).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testkit import free_port

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"

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


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT twice (Jupyter's "shut down? y" prompt is skipped by the second), then SIGTERM, then SIGKILL."""
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
        _stop(proc)


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


# ---- a summary line per notebook at the end of the run -------------------------------------------------

_REPORT = pytest.StashKey[list]()


class _Lines(list):
    def __repr__(self) -> str:            # pytest prints fixture values in tracebacks: keep it short
        return f"<{len(self)} summary lines>"


@pytest.fixture(scope="session")
def report(request) -> list[str]:
    """Lines for the terminal summary: each notebook's timings, the widget it drove, its screenshots."""
    return request.config.stash.setdefault(_REPORT, _Lines())


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(_REPORT, [])
    if lines:
        terminalreporter.section("notebooks in the browser")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(config, items):
    """The book's browser test goes last, after nbval has run the notebooks and written their executed copies
    (notebooks/conftest.py), so the book reuses them instead of running every notebook a second time."""
    book = [i for i in items if i.nodeid.startswith("tests/browser/test_book_in_browser.py")]
    if book:
        moved = {id(i) for i in book}
        rest = [i for i in items if id(i) not in moved]
        items[:] = rest + book
