"""Executed notebooks for the book: reused when an executed copy of the same cells exists, else run.

The repository keeps its notebooks without outputs, so the book needs executed copies. Running all thirteen
costs minutes (measured in the README), and CI already runs each of them once under nbval; running them a
second time for the book would double that. So an executed copy is looked up first, in each folder of
`reuse` then in the `cache` folder, by the notebook's file name, and is used when its cells' sources equal
the notebook's (the outputs of a changed cell would be wrong). `notebooks/conftest.py` has nbval write such
copies (build/executed/), and every notebook the book runs itself is written to `cache`, so a second build
runs nothing.

Running uses nbclient as JupyterLab runs a notebook (a kernel in the notebook's folder, the widgets' state
stored in the notebook's metadata, which is where the book finds the widgets' current figures).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from .contents import read_notebook

log = logging.getLogger(__name__)


class NotebookFailed(RuntimeError):
    """A notebook the book ran stopped with an error in one of its cells (one line: which notebook, which
    cell, what it raised)."""


def sources(nb) -> list[tuple[str, str]]:
    """What decides whether an executed copy fits: each cell's type and source, in order."""
    return [(c.cell_type, c.source) for c in nb.cells]


def has_outputs(nb) -> bool:
    return any(c.cell_type == "code" and c.get("outputs") for c in nb.cells)


def find_executed(path: Path, folders: list[Path]):
    """An executed copy of the notebook at `path` in one of `folders` whose cells match, else None."""
    original = read_notebook(path)
    for folder in folders:
        candidate = Path(folder) / path.name
        if not candidate.is_file():
            continue
        try:
            copy = read_notebook(candidate, validate=False)
        except ValueError as err:                      # a torn or foreign file: not a copy, run it instead
            log.warning("ignoring %s", err)
            continue
        try:
            if sources(copy) == sources(original) and has_outputs(copy):
                return copy
        except (AttributeError, TypeError):            # cells that are not cells: not a copy either
            log.warning("ignoring %s: its cells are not a notebook's", candidate)
    return None


def run_notebook(path: Path, timeout: int = 900):
    """Run a notebook top to bottom in a copy of its folder (so files it writes stay out of the repository);
    a cell that raises, a kernel that dies or a run past `timeout` is a one-line error naming the notebook
    (and the cell); Ctrl-C stops it as a KeyboardInterrupt.

    `timeout` bounds the whole notebook, not only each cell: nbclient waits without a limit for a cell's
    last output message, and notebook 09 once waited there more than 10 minutes with its kernel idle (the
    next run took 63 s; the cause was not found), so
    a build that runs notebooks unattended stops with a TimeoutError that says which notebook instead."""
    import asyncio

    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    nb = read_notebook(path)
    with tempfile.TemporaryDirectory(prefix="bertlab-book-") as tmp:
        work = Path(tmp) / "notebooks"
        shutil.copytree(path.parent, work, symlinks=True, ignore=shutil.ignore_patterns(
            "*.ipynb", "__pycache__", ".ipynb_checkpoints", "runs"))
        env_threads = os.environ.get("OMP_NUM_THREADS")
        os.environ.setdefault("OMP_NUM_THREADS", "1")        # as nbval runs them (notebooks/conftest.py)
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                                resources={"metadata": {"path": str(work)}})

        async def execute():
            # the kernel process's own stderr (start-up warnings, a traceback when it is stopped mid-reply) is
            # not the lesson's: the cells' outputs come through Jupyter's messages, which are all kept
            return await asyncio.wait_for(client.async_execute(stderr=subprocess.DEVNULL), timeout)

        # Ctrl-C: while a notebook runs, nbclient's own SIGINT handler stops the kernel (and records that in
        # its _async_cleanup_kernel_future), then raises whatever that caused (DeadKernelError, or an
        # AssertionError from its clean-up); before and after, ours does. Either way the build stops as
        # interrupted.
        interrupted: list[bool] = []
        previous = None
        if threading.current_thread() is threading.main_thread():
            def on_sigint(signum, frame):
                interrupted.append(True)
                raise KeyboardInterrupt
            previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            run_sync(execute)()
        except BaseException as e:
            if interrupted or getattr(client, "_async_cleanup_kernel_future", None) is not None:
                raise KeyboardInterrupt from None
            if isinstance(e, asyncio.TimeoutError):
                raise TimeoutError(f"{path.name} did not finish running within {timeout} s: open it in JupyterLab "
                                   "to see which cell stops, or give the book an executed copy (--reuse DIR)") from None
            if isinstance(e, CellExecutionError):
                where = next((f"cell {i}" for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(
                    o.get("output_type") == "error" for o in c.get("outputs", []))), "a cell")
                said = (str(getattr(e, "evalue", "")) or "").splitlines()
                raise NotebookFailed(f"{path.name}: {where} raised {getattr(e, 'ename', 'an error')}"
                                     f"{': ' + said[0][:200] if said else ''}; fix the cell (open the notebook in "
                                     "JupyterLab), or build with --no-execute to show it without outputs") from None
            if isinstance(e, DeadKernelError):
                raise NotebookFailed(f"{path.name}: its kernel died while running "
                                     f"({(str(e).splitlines() or ['no message'])[0][:120]}); a cell may use more "
                                     "memory than the machine has") from None
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            if env_threads is None:
                os.environ.pop("OMP_NUM_THREADS", None)
    return nb


def executed_notebooks(paths: list[Path], cache: Path | None, reuse: list[Path] = (), execute: bool = True,
                       timeout: int = 900) -> tuple[dict[Path, object], dict[Path, str]]:
    """{path: executed notebook} and {path: where it came from ("reused DIR", "ran in 12.3 s", "not run")}.

    With `execute=False` a notebook with no executed copy is rendered from its file as it is (its code and
    prose, no outputs), and the book says so on its page."""
    folders = [Path(f) for f in reuse] + ([Path(cache)] if cache else [])
    out, how = {}, {}
    for path in paths:
        nb = find_executed(path, folders)
        if nb is not None:
            out[path], how[path] = nb, "reused an executed copy"
            continue
        if not execute:
            out[path], how[path] = nbformat.read(path, as_version=4), "not run"
            continue
        t = time.perf_counter()
        log.info("running %s", path.name)
        nb = run_notebook(path, timeout)
        how[path] = f"ran in {time.perf_counter() - t:.1f} s"
        if cache:
            try:
                Path(cache).mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, Path(cache) / path.name)
            except OSError as e:
                raise NotADirectoryError(f"the cache {cache} cannot hold executed notebooks ({e.strerror or e}): "
                                         "pass --cache a folder you can write to") from None
        out[path] = nb
    return out, how
