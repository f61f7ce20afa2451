"""The two test tiers: CI runs the README's command, which runs everything; `-m "not slow"` is the edit loop."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_the_readme_test_command_with_durations():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(bash scripts/setup\.sh test && [^\n]+)\n```", readme).group(1)
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command.endswith("python -m pytest -n 2 --durations=25")      # everything (no -m), slowest listed


def test_the_slow_marker_is_registered_and_bertlab_deprecations_are_errors():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")       # tomllib is 3.11+; bertlab runs on 3.10
    assert re.search(r'^markers = \[\n  "slow: ', pyproject, re.M)
    assert 'filterwarnings = ["ignore::DeprecationWarning", "error::DeprecationWarning:bertlab"]' in pyproject


def test_no_test_imports_from_scripts():
    folder = "scripts"
    reach = re.compile(rf"""(/ ["']{folder}["']|sys\.path.*{folder}|from {folder}\b|import {folder}\b)""")
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name != Path(__file__).name:
            assert not reach.search(path.read_text(encoding="utf-8")), f"{path.name} reaches into scripts/"


def test_the_readme_fast_tier_runs_on_the_ci_commands_workers():
    """The edit loop runs as CI does (two xdist workers, loadfile from pyproject), so a test that only breaks
    beside another worker shows up there first."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert '.venv/bin/python -m pytest -n 2 -m "not slow"' in readme
    assert "--dist loadfile" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"pytest-xdist==' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_book_waits_only_for_this_runs_notebooks(tmp_path, monkeypatch):
    """tests/browser/test_book_in_browser.py reuses nbval's executed copies; under xdist nbval may still run a
    notebook on the other worker, so the book waits for each one's `.ran` mark from this very run."""
    from types import SimpleNamespace

    from browser.conftest import wait_for_nbval

    notebook = SimpleNamespace(nb=object())
    cells = [SimpleNamespace(cell={}, parent=notebook, fspath=tmp_path / name) for name in ("a.ipynb", "b.ipynb")]
    # a notebook nbval runs outside the lessons' folder (the views' gallery) writes no mark: never waited for
    (tmp_path / "fixtures").mkdir()
    gallery = SimpleNamespace(cell={}, parent=notebook, fspath=tmp_path / "fixtures" / "gallery.ipynb")
    session = SimpleNamespace(items=[*cells, gallery, SimpleNamespace(fspath=tmp_path / "test_x.py")])
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    assert wait_for_nbval(session, tmp_path, timeout_s=0, lessons=tmp_path) == []          # one process: nbval ran first
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "this-run")
    assert wait_for_nbval(session, tmp_path, timeout_s=0, lessons=tmp_path) == ["a.ipynb", "b.ipynb"]
    (tmp_path / ".ran").mkdir()
    (tmp_path / ".ran" / "a.ipynb").write_text("this-run")
    (tmp_path / ".ran" / "b.ipynb").write_text("an-earlier-run")
    assert wait_for_nbval(session, tmp_path, timeout_s=0, lessons=tmp_path) == ["b.ipynb"]
    (tmp_path / ".ran" / "b.ipynb").write_text("this-run")
    assert wait_for_nbval(session, tmp_path, timeout_s=0, lessons=tmp_path) == []
