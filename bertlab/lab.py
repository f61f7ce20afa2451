"""`bertlab lab [DIR]`: copy the notebooks into DIR, then open JupyterLab there.

This works after a plain `pip install 'bertlab[notebooks]'`: the notebooks ship inside the package
(`bertlab/notebooks/*.ipynb`, see pyproject.toml). In a source checkout (an editable install) they are read
from the repository's `notebooks/` folder, where they are written.

The reader's copies are theirs: a notebook already in DIR is never overwritten. When the shipped one differs
(a newer bertlab, or the reader's own edits), the shipped version is written beside it as
`NAME.new.ipynb` (itself replaced on the next run, so it always holds the shipped version) and a line says so;
the reader compares or renames. Identical notebooks are left alone.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

DEFAULT_DIR = "bertlab-notebooks"
INSTALL_HINT = "pip install 'bertlab[notebooks]'"


def notebooks_source() -> Path:
    """The folder holding the shipped notebooks: inside the package, or the checkout's notebooks/."""
    packaged = Path(str(resources.files("bertlab"))) / "notebooks"
    if packaged.is_dir() and any(packaged.glob("*.ipynb")):
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "notebooks"     # an editable install without the link
    if checkout.is_dir() and any(checkout.glob("*.ipynb")):
        return checkout
    raise FileNotFoundError("bertlab's notebooks are missing from this installation "
                            f"(looked in {packaged} and {checkout}); reinstall bertlab")


def packaged_notebooks() -> list[Path]:
    """Every shipped notebook, in order (their names start with the lesson number)."""
    return sorted(p for p in notebooks_source().glob("*.ipynb") if not p.name.endswith(".new.ipynb"))


def copy_notebooks(dest, quiet: bool = False) -> list[Path]:
    """Copy the shipped notebooks into `dest` (created if needed); never overwrite one already there.

    Returns the path of each notebook in `dest`, in order. For each notebook, prints what happened: copied,
    already there and identical, or already there and different (then the shipped version is written as
    `NAME.new.ipynb` beside the reader's, which stays as it is).
    """
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} exists and is not a folder")
    dest.mkdir(parents=True, exist_ok=True)
    say = (lambda *a: None) if quiet else print
    copied, same, kept = 0, 0, []
    paths = []
    for src in packaged_notebooks():
        target = dest / src.name
        paths.append(target)
        if not target.exists():
            _copy(src, target)
            copied += 1
        elif target.read_bytes() == src.read_bytes():
            same += 1
        else:
            newer = target.with_name(target.name[: -len(".ipynb")] + ".new.ipynb")
            _copy(src, newer)
            kept.append((target, newer))
    say(f"bertlab notebooks in {dest}: {copied} copied, {same} already there"
        + (f", {len(kept)} kept as you left them" if kept else ""))
    for target, newer in kept:
        say(f"  {target.name} differs from this bertlab's version: yours is kept, "
            f"bertlab's is in {newer.name}")
    return paths


def _copy(src: Path, target: Path) -> None:
    """Write through a temporary file, so an interrupted copy never leaves half a notebook."""
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.replace(tmp, target)


def lab_command(dest: Path, no_browser: bool = False, port: int | None = None) -> list[str]:
    """The JupyterLab command line, run with this Python so it sees this bertlab and its kernel."""
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={dest}"]
    if no_browser:
        cmd.append("--no-browser")
    if port is not None:
        cmd.append(f"--port={port}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")      # containers often run as root; JupyterLab refuses root without it
    return cmd


def main(dest=None, no_browser: bool = False, port: int | None = None) -> int:
    """Copy the notebooks into `dest` (default ./bertlab-notebooks), then replace this process with JupyterLab.

    Returns (without copying anything) 1 with a message naming the install command when JupyterLab is not
    installed; otherwise it does not return.
    """
    if importlib.util.find_spec("jupyterlab") is None:
        print(f"bertlab lab: JupyterLab is not installed. Install it with the notebook extras:\n"
              f"    {INSTALL_HINT}", file=sys.stderr)
        return 1
    dest = Path(dest if dest is not None else DEFAULT_DIR).expanduser().resolve()
    try:
        paths = copy_notebooks(dest)
    except (OSError, FileNotFoundError) as e:
        print(f"bertlab lab: error: {e}", file=sys.stderr)
        return 2
    cmd = lab_command(dest, no_browser=no_browser, port=port)
    print(f"opening JupyterLab in {dest} (start with {paths[0].name if paths else 'any notebook'})", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":      # Windows has no real exec: run it as a child and pass its exit code on
        return subprocess.call(cmd, cwd=dest)
    os.chdir(dest)
    os.execv(cmd[0], cmd)     # JupyterLab takes over this process: Ctrl-C stops it as usual
    return 0                  # not reached (a test may stub os.execv)
