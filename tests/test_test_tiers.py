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
