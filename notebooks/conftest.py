"""nbval runs every notebook here (the README's test command). Every notebook runs as a reader runs it (their
training cells are small enough), so the check cells compare what a reader sees. One torch thread per kernel
keeps a 2-core machine responsive.

The outputs nbval reads are also kept: each notebook that runs without a failure is written, executed, to
build/executed/ (or $BERTLAB_EXECUTED_DIR; set it to an empty string to write nothing), where `bertlab book`
and tests/browser/test_book_in_browser.py reuse it instead of running the notebook again (bertlab/book/record.py).

Under pytest-xdist (the README's test command runs two workers) every cell of a notebook runs on one worker, in
order, with one kernel: `--dist loadfile` (pyproject) sends each file whole to one worker."""

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

# bertlab.check keeps every answered attempt in the learner's progress file (bertlab/course/progress.py):
# a test run keeps its own, fresh one, and never touches the learner's
os.environ["BERTLAB_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="bertlab-progress-"), "progress.json")

EXECUTED = os.environ.get("BERTLAB_EXECUTED_DIR", str(Path(__file__).resolve().parents[1] / "build" / "executed"))


def _recorder(notebook_item):
    from bertlab.book.record import Recorder

    rec = getattr(notebook_item, "_bertlab_recorder", None)
    if rec is None:
        rec = notebook_item._bertlab_recorder = Recorder()
        get = notebook_item.get_kernel_message

        def get_kernel_message(*args, **kwargs):          # nbval's one reader of kernel messages: see comms
            msg = get(*args, **kwargs)
            if msg.get("msg_type") in ("comm_open", "comm_msg"):
                rec.comm(msg)
            return msg
        notebook_item.get_kernel_message = get_kernel_message
    return rec


def pytest_itemcollected(item):
    """Every nbval cell is in the slow tier: a notebook starts a kernel and runs for tens of seconds."""
    if hasattr(item, "cell") and hasattr(item.parent, "nb"):
        item.add_marker(pytest.mark.slow)


def _is_nbval_cell(item) -> bool:
    return bool(EXECUTED) and hasattr(item, "cell") and hasattr(item, "test_outputs") and hasattr(item.parent, "nb")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    if hasattr(item, "cell") and hasattr(item.parent, "nb") and not getattr(item.parent, "_fresh_progress", False):
        # before the notebook's kernel starts (it inherits this environment): a progress file of its own, so
        # what tests/ recorded through bertlab.check earlier in the run is not what review.ipynb finds due
        item.parent._fresh_progress = True
        os.environ["BERTLAB_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="bertlab-progress-"), "progress.json")
    if _is_nbval_cell(item):
        _recorder(item.parent)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if not _is_nbval_cell(item) or call.when != "call":
        return
    rec = _recorder(item.parent)
    if outcome.get_result().failed:
        rec.failed = True
    rec.cell(item.cell, item.test_outputs)


def pytest_runtest_teardown(item, nextitem):
    if _is_nbval_cell(item) and (nextitem is None or nextitem.parent is not item.parent):
        name = Path(str(item.parent.fspath)).name
        _recorder(item.parent).write(item.parent.nb, Path(EXECUTED) / name)
        run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
        if run_id:
            # under pytest-xdist the book's browser test may be waiting on another worker for this notebook
            # (tests/browser/conftest.py, wait_for_nbval): it is done, with an executed copy or without one
            ran = Path(EXECUTED) / ".ran"
            ran.mkdir(parents=True, exist_ok=True)
            (ran / name).write_text(run_id)
