"""`bertlab lab [DIR]`: copy the notebooks into DIR, then open JupyterLab there.

This works after a plain `pip install 'bertlab[notebooks]'`: the notebooks ship inside the package
(`bertlab/notebooks/*.ipynb`, see pyproject.toml). In a source checkout (an editable install) they are read
from the repository's `notebooks/` folder, where they are written.

The reader's copies are theirs: a notebook already in DIR is never overwritten. When the shipped one differs
(a newer bertlab, or the reader's own edits), the shipped version is written beside it as
`NAME.new.ipynb` and a line says so; the reader compares or renames. That copy is the reader's too: if they
worked in it, a later run leaves it as it is and writes the shipped version to `NAME.new-2.ipynb` (and so on).
Identical notebooks are left alone.

`bertlab lab DIR --solutions SOURCE` also copies the instructor pack (the repository's solutions/ folder:
one executable answer per checkable exercise) into DIR/solutions, under the same never-overwrite rule. The
pack is not in the installed package, so a learner's `pip install` does not carry it; a teacher passes
the folder of a repository checkout (or `--solutions` alone, when bertlab runs from a checkout).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import secrets
import subprocess
import sys
from importlib import resources
from pathlib import Path

DEFAULT_DIR = "bertlab-notebooks"
INSTALL_HINT = "pip install 'bertlab[notebooks]'"
_SHIPPED_COPY = re.compile(r"\.new(-\d+)?\.ipynb$")   # NAME.new.ipynb, NAME.new-2.ipynb: copies, not lessons


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
    return sorted(p for p in notebooks_source().glob("*.ipynb") if not _SHIPPED_COPY.search(p.name))


def solutions_source(source=None) -> Path:
    """The instructor pack's folder: `source`, or the checkout's solutions/ when `source` is None or ""."""
    if source in (None, ""):
        checkout = Path(__file__).resolve().parent.parent / "solutions"
        if not checkout.is_dir():
            raise FileNotFoundError("the solutions are not part of the installed package (learners must not get "
                                    "them): clone the bertlab repository and pass its folder, "
                                    "--solutions path/to/bertlab/solutions")
        source = checkout
    source = Path(source).expanduser()
    if not source.is_dir() or not any(source.glob("nb[0-9][0-9].py")):
        raise FileNotFoundError(f"{source} holds no solutions (files nbNN.py): pass the bertlab repository's "
                                "solutions/ folder")
    return source


def copy_solutions(source, dest, quiet: bool = False) -> list[Path]:
    """Copy the instructor pack (`source`'s nbNN.py files and README.md) into `dest`/solutions.

    The same rule as the notebooks: a file already there is never overwritten; if it differs, the pack's
    version goes beside it as NAME.new.py."""
    source = solutions_source(source)
    files = sorted(source.glob("nb[0-9][0-9].py")) + sorted(source.glob("README.md"))
    return _copy_all(files, Path(dest).expanduser() / "solutions", "solutions", quiet)


def copy_notebooks(dest, quiet: bool = False) -> list[Path]:
    """Copy the shipped notebooks into `dest` (created if needed); never overwrite one already there.

    Returns the path of each notebook in `dest`, in order. For each notebook, prints what happened: copied,
    already there and identical, or already there and different (then the shipped version is written as
    `NAME.new.ipynb` beside the reader's, which stays as it is; if an edited `NAME.new.ipynb` is there
    already, it stays too and the shipped version goes to `NAME.new-2.ipynb`).
    """
    return _copy_all(packaged_notebooks(), Path(dest).expanduser(), "bertlab notebooks", quiet)


def _copy_all(sources: list[Path], dest: Path, label: str, quiet: bool) -> list[Path]:
    """Copy each of `sources` into `dest` without overwriting; say what happened; return the paths in dest."""
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} exists and is not a folder")
    dest.mkdir(parents=True, exist_ok=True)
    say = (lambda *a: None) if quiet else print
    copied, same, kept = 0, 0, []
    paths = []
    for src in sources:
        target = dest / src.name
        paths.append(target)
        if not target.exists():
            _copy(src, target)
            copied += 1
        elif target.read_bytes() == src.read_bytes():
            same += 1
        else:
            kept.append((target, _write_beside(src, target)))
    say(f"{label} in {dest}: {copied} copied, {same} already there"
        + (f", {len(kept)} kept as you left them" if kept else ""))
    for target, newer in kept:
        first = _beside(target, 1)
        say(f"  {target.name} differs from this bertlab's version: yours is kept, "
            f"bertlab's is in {newer.name}"
            + (f" ({first.name} differs from it too, so it is kept as well)" if newer != first else ""))
    return paths


def _beside(target: Path, k: int) -> Path:
    """NAME.new.ipynb, then NAME.new-2.ipynb, NAME.new-3.ipynb, ...: where the shipped version of `target` may go
    (NAME.new.py ... for a solution)."""
    return target.with_name(target.stem + (".new" if k == 1 else f".new-{k}") + target.suffix)


def _write_beside(src: Path, target: Path) -> Path:
    """Put the shipped `src` beside the reader's `target` without overwriting anything, and return where.

    The first NAME.new*.ipynb that already holds exactly the shipped version is reused; otherwise the first
    free name is written. One that differs is left alone: the reader may have opened NAME.new.ipynb and
    worked in it, and the next launch must not wipe that out.
    """
    shipped = src.read_bytes()
    for k in itertools.count(1):
        newer = _beside(target, k)
        if not newer.exists():
            _copy(src, newer)
            return newer
        if newer.is_file() and newer.read_bytes() == shipped:
            return newer
    raise AssertionError("unreachable")


def _copy(src: Path, target: Path) -> None:
    """Write through a temporary file, so an interrupted copy never leaves half a notebook.

    The temporary name is random and created exclusively (O_EXCL), so a symlink planted under a guessable
    name cannot redirect the write; os.replace then swaps the file in without following `target`. Mode
    0o666 less the umask, as an ordinary copy gets (mkstemp would make it private, 0o600).
    """
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(src.read_bytes())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def lab_command(dest: Path, no_browser: bool = False, port: int | None = None) -> list[str]:
    """The JupyterLab command line, run with this Python so it sees this bertlab and its kernel.

    `--allow-root` is added only when this process runs as root (`running_as_root()`)."""
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={dest}"]
    if no_browser:
        cmd.append("--no-browser")
    if port is not None:
        cmd.append(f"--port={check_port(port)}")
    if running_as_root():
        cmd.append("--allow-root")      # containers often run as root; JupyterLab refuses root without it
    return cmd


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def check_port(port) -> int:
    """`port` if it is a TCP port number (1 … 65535), else a ValueError that says so."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"--port must be a whole number from 1 to 65535, got {port!r}: "
                         "leave it out to use JupyterLab's default, 8888")
    return port


def main(dest=None, no_browser: bool = False, port: int | None = None, solutions=None) -> int:
    """Copy the notebooks into `dest` (default ./bertlab-notebooks), then replace this process with JupyterLab.

    With `solutions` (a folder, or "" for the checkout's solutions/), the instructor pack is copied into
    `dest`/solutions too; a missing pack is an error (2) before anything is copied.

    Returns (without copying anything) 1 with a message naming the install command when JupyterLab is not
    installed, 2 with a message for a bad `port`; otherwise it does not return.
    """
    if port is not None:
        try:
            check_port(port)
        except ValueError as e:
            print(f"bertlab lab: error: {e}", file=sys.stderr)
            return 2
    if importlib.util.find_spec("jupyterlab") is None:
        print(f"bertlab lab: JupyterLab is not installed. Install it with the notebook extras:\n"
              f"    {INSTALL_HINT}", file=sys.stderr)
        return 1
    dest = Path(dest if dest is not None else DEFAULT_DIR).expanduser().resolve()
    try:
        if solutions is not None:
            solutions_source(solutions)             # a wrong folder fails before anything is copied
        paths = copy_notebooks(dest)
        if solutions is not None:
            copy_solutions(solutions, dest)
    except (OSError, FileNotFoundError) as e:
        print(f"bertlab lab: error: {e}", file=sys.stderr)
        return 2
    cmd = lab_command(dest, no_browser=no_browser, port=port)
    if "--allow-root" in cmd:
        print("note: running as root, so JupyterLab is started with --allow-root (it refuses root otherwise); "
              "code in the notebooks runs with root's rights: outside a container, run as an ordinary user")
    print(f"opening JupyterLab in {dest} (start with {paths[0].name if paths else 'any notebook'})", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":      # Windows has no real exec: run it as a child and pass its exit code on
        return subprocess.call(cmd, cwd=dest)
    os.chdir(dest)
    os.execv(cmd[0], cmd)     # JupyterLab takes over this process: Ctrl-C stops it as usual
    return 0                  # not reached (a test may stub os.execv)
