"""`bertlab lab`: the notebooks ship in the package, are copied without ever overwriting the reader's own,
and JupyterLab starts on them (or a clear message says how to install it)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bertlab import lab
from bertlab.cli import main as cli_main

REPO = Path(__file__).resolve().parents[1]
REPO_NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))


def test_the_shipped_notebooks_are_the_repositorys():
    names = [p.name for p in lab.packaged_notebooks()]
    assert names == REPO_NOTEBOOKS and names, names
    assert all(not n.startswith("conftest") for n in names)


def test_copy_then_copy_again_keeps_the_readers_edit(tmp_path, capsys):
    dest = tmp_path / "my notebooks"
    paths = lab.copy_notebooks(dest)
    assert [p.name for p in paths] == REPO_NOTEBOOKS
    for p in paths:
        assert p.read_bytes() == (REPO / "notebooks" / p.name).read_bytes()
    assert f"{len(paths)} copied" in capsys.readouterr().out

    edited = paths[0]
    mine = edited.read_text(encoding="utf-8").replace('"cells": [', '"cells": [  ', 1) + "\n"
    edited.write_text(mine, encoding="utf-8")
    (dest / "scratch.ipynb").write_text("{}")                # the reader's own notebook
    lab.copy_notebooks(dest)
    out = capsys.readouterr().out
    assert edited.read_text(encoding="utf-8") == mine       # the edit survives
    assert (dest / "scratch.ipynb").read_text() == "{}"
    newer = dest / (edited.stem + ".new.ipynb")
    assert newer.read_bytes() == (REPO / "notebooks" / edited.name).read_bytes()
    assert edited.name in out and newer.name in out and f"{len(paths) - 1} already there" in out
    # the untouched ones got no .new copy
    assert sorted(p.name for p in dest.glob("*.new.ipynb")) == [newer.name]


def test_copy_into_a_file_is_an_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError):
        lab.copy_notebooks(f, quiet=True)


def test_lab_help(capsys):
    with pytest.raises(SystemExit) as exit:
        cli_main(["lab", "--help"])
    assert exit.value.code == 0
    text = capsys.readouterr().out
    for word in ("DIR", "--no-browser", "--port", "bertlab-notebooks", "never overwritten"):
        assert word in text


def test_without_jupyterlab_a_clear_message(tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jupyterlab" else real(name, *a))
    monkeypatch.setattr(os, "execv", lambda *a: pytest.fail("must not start anything"))
    assert cli_main(["lab", str(tmp_path / "nb")]) == 1
    err = capsys.readouterr().err
    assert "JupyterLab is not installed" in err and "pip install 'bertlab[notebooks]'" in err
    assert not (tmp_path / "nb").exists()


def test_lab_copies_then_starts_jupyterlab_there(tmp_path, monkeypatch, capsys):
    pytest.importorskip("jupyterlab")
    started = []
    monkeypatch.setattr(os, "execv", lambda path, args: started.append((path, args, os.getcwd())))   # POSIX
    monkeypatch.setattr(subprocess, "call", lambda args, cwd: started.append((args[0], args, str(cwd))) or 0)  # Windows
    monkeypatch.chdir(tmp_path)
    assert cli_main(["lab", "nb", "--no-browser", "--port", "8899"]) == 0
    path, args, cwd = started[0]
    dest = (tmp_path / "nb").resolve()
    assert path == sys.executable and args[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={dest}" in args and "--no-browser" in args and "--port=8899" in args
    assert cwd == str(dest) and sorted(p.name for p in dest.glob("*.ipynb")) == REPO_NOTEBOOKS


def offline_wheel_build_missing() -> str | None:
    """What this Python lacks to build bertlab's wheel offline, or None when nothing is missing.

    The build runs `pip wheel --no-build-isolation --no-index`: nothing is downloaded, so pip (the frontend)
    and the build backend pyproject.toml names (setuptools; before 70.1 it also needs the `wheel` package for
    bdist_wheel) must already be installed here. Without them the build cannot even start, and that alone is
    a reason to skip; once it can start, a failed build is a broken package, and fails the test.
    """
    if importlib.util.find_spec("pip") is None:
        return "pip (the build frontend) is not installed in this Python"
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools (the build backend pyproject.toml names) is not installed in this Python"
    installed = importlib.metadata.version("setuptools")
    major_minor = tuple(int(n) for n in re.findall(r"\d+", installed)[:2])
    if major_minor < (70, 1) and importlib.util.find_spec("wheel") is None:
        return f"setuptools {installed} builds wheels with the `wheel` package, which is not installed"
    return None


@pytest.mark.slow
def test_the_wheel_contains_the_notebooks(tmp_path):
    """Build a wheel from a copy of the sources (the checkout is left alone) and look inside."""
    missing = offline_wheel_build_missing()
    if missing:
        pytest.skip(f"cannot build a wheel without network access: {missing}")
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints", ".pytest_cache")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "bertlab", src / "bertlab", symlinks=True, ignore=ignore)
    shutil.copytree(REPO / "notebooks", src / "notebooks", ignore=ignore)
    shutil.copytree(REPO / "solutions", src / "solutions", ignore=ignore)     # as in a checkout: beside the package
    assert (src / "bertlab" / "notebooks").is_symlink()
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                             "--no-index", "-q", "-w", str(tmp_path / "dist"), str(src)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"the wheel did not build:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    wheel, = (tmp_path / "dist").glob("bertlab-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("bertlab/notebooks/"))
    assert shipped == REPO_NOTEBOOKS            # every notebook, and nothing else (no conftest.py)
    assert "bertlab/lab.py" in names and "bertlab/course/registry.py" in names
    # the instructor pack stays out: a learner's pip install must not carry the answers
    assert not [n for n in names if "solutions" in n.lower()], [n for n in names if "solutions" in n.lower()]
    pack = {p.read_bytes() for p in (REPO / "solutions").glob("nb*.py")}
    with zipfile.ZipFile(wheel) as z:
        assert pack and not [n for n in names if z.read(n) in pack], "a solution file is inside the wheel"


# ---- the instructor pack: `bertlab lab DIR --solutions SOURCE` -------------------------------------------

SOLUTIONS = sorted(p.name for p in (REPO / "solutions").glob("nb[0-9][0-9].py"))


def test_the_solutions_are_copied_beside_the_notebooks_and_never_over_a_teachers_edit(tmp_path, capsys):
    dest = tmp_path / "class"
    paths = lab.copy_solutions(REPO / "solutions", dest)
    assert SOLUTIONS and [p.name for p in paths] == SOLUTIONS + ["README.md"]
    assert all(p.parent == dest / "solutions" for p in paths)
    assert (dest / "solutions" / SOLUTIONS[0]).read_bytes() == (REPO / "solutions" / SOLUTIONS[0]).read_bytes()
    assert "solutions in" in capsys.readouterr().out
    mine = dest / "solutions" / SOLUTIONS[0]
    mine.write_text("# my own answers\n")
    lab.copy_solutions(REPO / "solutions", dest)
    assert mine.read_text() == "# my own answers\n"
    newer = mine.with_name(mine.stem + ".new.py")
    assert newer.read_bytes() == (REPO / "solutions" / SOLUTIONS[0]).read_bytes()


def test_a_folder_without_solutions_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no solutions"):
        lab.copy_solutions(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert lab.solutions_source("") == REPO / "solutions"          # a checkout: --solutions alone finds its own


def test_lab_with_solutions_copies_both_then_starts(tmp_path, monkeypatch, capsys):
    pytest.importorskip("jupyterlab")
    started = []
    monkeypatch.setattr(os, "execv", lambda path, args: started.append(args))
    monkeypatch.setattr(subprocess, "call", lambda args, cwd: started.append(args) or 0)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["lab", "nb", "--no-browser", "--solutions", str(REPO / "solutions")]) == 0
    assert started and sorted(p.name for p in (tmp_path / "nb" / "solutions").glob("nb*.py")) == SOLUTIONS
    started.clear()
    assert cli_main(["lab", "other", "--solutions", str(tmp_path / "nowhere")]) == 2
    assert not started and not (tmp_path / "other").exists() and "holds no solutions" in capsys.readouterr().err


def test_lab_help_names_the_solutions_option(capsys):
    with pytest.raises(SystemExit):
        cli_main(["lab", "--help"])
    text = capsys.readouterr().out
    assert "--solutions" in text and "SRC" in text and "installed package" in text
