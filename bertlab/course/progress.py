"""Progress: which exercises a learner has answered right, kept in a small local file the learner owns.

    bertlab.progress()            # per notebook: ✓ right, ✗ tried, · not yet (a table in a notebook)
    bertlab.progress("04")        # one notebook

Every answered `bertlab.check` is one attempt in the file (an unanswered `None` is not); quiz questions that
the review notebook asks are kept the same way under ids like "04.q2". The file is plain JSON, so a learner
can read it, copy it between machines or delete it to start over. Nothing leaves the machine.

Where: $BERTLAB_PROGRESS when set (a file path; for tests, and for JupyterHub set-ups that keep the home
folder elsewhere), else the user's data folder (~/.local/share/bertlab/progress.json on Linux, or
$XDG_DATA_HOME/bertlab; ~/Library/Application Support/bertlab on macOS; %APPDATA%\\bertlab on Windows).

Why a check never fails because of this file: the answer matters more than its bookkeeping. A file that
cannot be read (not JSON, another program's, a link, a folder) or written (read-only) leaves the check's
verdict as it was and says once, as a warning, that the attempt was not kept and why; the file itself is
never overwritten then, so no earlier progress is lost. Writes are atomic (a new file renamed over the
old one, bertlab.files.replace_text) and serialised by a lock file, so two kernels checking at once
both count.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..files import LinkRefused, read_text, refuse_link, replace_text

__all__ = ["Progress", "ProgressFileError", "progress", "progress_path", "record", "update", "paused", "load", "FORMAT"]

FORMAT = "bertlab-progress"
VERSION = 1
ITEM = re.compile(r"\d\d\.q?\d+")   # "04.3" (an exercise) or "04.q2" (a quiz question)
MAX_BYTES = 8 * 2**20          # a whole course's progress is a few kB; anything this large is not one


class ProgressFileError(ValueError):
    """The progress file cannot be used as it is (not JSON, another program's file, a link, a folder)."""


def progress_path() -> Path:
    """The progress file: $BERTLAB_PROGRESS, else progress.json in the user's data folder."""
    env = os.environ.get("BERTLAB_PROGRESS", "").strip()
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "bertlab" / "progress.json"


def _empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "items": {}}


def load(path: Path | None = None) -> dict:
    """The progress file's contents ({"format", "version", "items"}); an empty record when there is no file."""
    path = progress_path() if path is None else Path(path)
    fix = "it is left as it is; move it away, or set BERTLAB_PROGRESS to another file"
    try:
        refuse_link(path, "the progress file")
        try:
            size = path.stat().st_size
        except FileNotFoundError:        # no file yet (a part of the path that is a file is an OSError below)
            return _empty()
        if size > MAX_BYTES:
            raise ProgressFileError(f"{path} is {size:,} bytes, too large to be a bertlab progress "
                                    f"file (a course's is a few kB): {fix}")
        text = read_text(path, "the progress file")
    except LinkRefused as e:
        raise ProgressFileError(f"{e} (the progress file: {fix})") from None
    except OSError as e:
        raise ProgressFileError(f"{path} cannot be read ({e.strerror or e}): {fix}") from None
    try:
        data = json.loads(text.removeprefix("\ufeff"))    # a byte-order mark, as some Windows editors save one
    except ValueError as e:
        raise ProgressFileError(f"{path} is not a bertlab progress file (not JSON: {e}): {fix}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("items"), dict):
        raise ProgressFileError(f"{path} is not a bertlab progress file (no \"format\": \"{FORMAT}\" in it; "
                                f"another program's?): {fix}")
    if isinstance(data.get("version"), bool) or not isinstance(data.get("version"), int):
        raise ProgressFileError(f"{path} is damaged (its \"version\" is {data.get('version')!r}, not a whole number): "
                                f"{fix}")
    if data["version"] > VERSION:
        raise ProgressFileError(f"{path} was written by a newer bertlab (progress format version "
                                f"{data.get('version')!r}, this one reads {VERSION}): upgrade bertlab; {fix}")
    for key, item in list(data["items"].items()):
        if not (isinstance(item, dict) and isinstance(item.get("tries"), int) and not isinstance(item["tries"], bool)
                and item["tries"] >= 0 and isinstance(item.get("right"), bool)):
            raise ProgressFileError(f"{path}: the entry for {key!r} is damaged (each entry has \"tries\", a count "
                                    f"of 0 or more, and \"right\", true or false): {fix}")
    return data


@contextlib.contextmanager
def _locked(path: Path):
    """Serialise read-modify-write between processes (POSIX flock on a lock file beside it; none elsewhere)."""
    try:
        import fcntl
    except ImportError:                                   # Windows: last writer wins, still atomically
        yield
        return
    lock = path.with_name(path.name + ".lock")
    refuse_link(lock, "the progress file's lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def update(item: str, right: bool, path: Path | None = None, when: str | None = None) -> dict:
    """Add one attempt at `item` ("04.3" or "04.q2") to the file and return the new entry; raises on a bad file."""
    if not isinstance(item, str) or not ITEM.fullmatch(item):
        raise ValueError(f"item must be an exercise id such as '04.3' or a quiz question id such as '04.q2', "
                         f"got {item!r}")
    if not isinstance(right, bool):
        raise ValueError(f"right must be True or False (was the answer right?), got {right!r}")
    path = progress_path() if path is None else Path(path)
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise ProgressFileError(f"{path} cannot be written: {above} is a file, not a folder; set "
                                "BERTLAB_PROGRESS to a path in a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        data = load(path)
        now = when or _now()
        entry = data["items"].get(item) or {"tries": 0, "right": False, "streak": 0}
        entry["tries"] += 1
        entry["last_try"] = now
        if right:
            entry["right"] = True            # once right, right: a later slip does not erase it (the streak drops)
            entry.setdefault("first_right", now)
            entry["last_right"] = now
            entry["streak"] = int(entry.get("streak", 0)) + 1
        else:
            entry["streak"] = 0
            entry["last_wrong"] = now
        data["items"][item] = entry
        replace_text(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return entry


_WARNED: set[str] = set()
_PAUSED = [0]


@contextlib.contextmanager
def paused():
    """Keep no attempt inside this block: a grader's checks of a submission are not the grader's progress."""
    _PAUSED[0] += 1
    try:
        yield
    finally:
        _PAUSED[0] -= 1


def record(item: str, right: bool) -> None:
    """`update`, for `check`: never raises; a file that cannot be used is a warning, once per reason."""
    if _PAUSED[0]:
        return
    try:
        update(item, bool(right))
    except (ProgressFileError, LinkRefused, OSError) as e:
        reason = str(e) if isinstance(e, (ProgressFileError, LinkRefused)) else (
            f"{progress_path()} cannot be written ({e.strerror or e}); set BERTLAB_PROGRESS to a file you can write")
        if reason not in _WARNED:
            _WARNED.add(reason)
            warnings.warn(f"your answer was checked but not kept in your progress: {reason}", stacklevel=3)


# ---- the view ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One exercise in the view: its id and title, whether answered right, and how many tries."""

    id: str
    title: str
    right: bool
    tries: int

    @property
    def mark(self) -> str:
        return "✓" if self.right else ("✗" if self.tries else "·")


class Progress:
    """Per notebook, which exercises are answered right. Prints as text; a table in a notebook."""

    def __init__(self, rows: dict[str, list[Row]], path: Path, quiz: tuple[int, int] = (0, 0)):
        self.rows, self.path = rows, path            # rows: notebook "04" → its exercises in order
        self.quiz = quiz                             # review quiz questions: (answered right, answered)

    def right(self, notebook: str | None = None) -> list[str]:
        """The ids of the exercises answered right (of one notebook, or all)."""
        return [r.id for nb, rows in self.rows.items() if notebook in (None, nb) for r in rows if r.right]

    def counts(self) -> dict[str, tuple[int, int]]:
        """notebook → (answered right, checkable exercises)."""
        return {nb: (sum(r.right for r in rows), len(rows)) for nb, rows in self.rows.items()}

    def __str__(self) -> str:
        done = sum(r for r, _ in self.counts().values())
        total = sum(n for _, n in self.counts().values())
        lines = [f"progress: {done} of {total} exercises right (✓ right, ✗ tried, · not yet)"]
        for nb, rows in self.rows.items():
            right, n = self.counts()[nb]
            marks = " ".join(f"{r.mark}{r.id.split('.')[1]}" for r in rows)
            lines.append(f"  {nb}  {right}/{n}  {marks}")
        if self.quiz[1]:
            lines.append(f"review quiz: {self.quiz[0]} of the {self.quiz[1]} questions answered right")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = {"✓": "#1a7f37", "✗": "#cf222e", "·": "#6e7781"}
        out = [f"<div style='font-size:13px'><b>{html.escape(str(self).splitlines()[0])}</b>"
               "<table style='border-collapse:collapse'>"]
        for nb, rows in self.rows.items():
            right, n = self.counts()[nb]
            cells = "".join(
                f"<span title='{html.escape(r.id)}: {html.escape(r.title)} ({r.tries} tries)' "
                f"style='display:inline-block;min-width:34px;color:{colour[r.mark]}'>{r.mark} {html.escape(r.id)}</span>"
                for r in rows)
            out.append(f"<tr><td style='padding:1px 8px 1px 0'><b>{nb}</b></td>"
                       f"<td style='padding:1px 8px;color:#57606a'>{right}/{n}</td><td>{cells}</td></tr>")
        if self.quiz[1]:
            out.append(f"<tr><td colspan=3>{html.escape(str(self).splitlines()[-1])}</td></tr>")
        out.append(f"</table><div style='color:#57606a'>kept in {html.escape(str(self.path))}</div></div>")
        return "".join(out)


def progress(notebook: str | int | None = None) -> Progress:
    """Per notebook, which exercises are answered right (`notebook`: "04" or 4 for one notebook)."""
    from .registry import exercises

    items = load()["items"]
    key_nb = ""
    if notebook is not None:
        if isinstance(notebook, bool) or not isinstance(notebook, (str, int)):
            raise TypeError(f"progress takes a notebook such as '04' or 4, got {type(notebook).__name__}")
        key = f"{notebook:02d}" if isinstance(notebook, int) else notebook.strip()
        key = key.zfill(2) if key.isascii() and key.isdigit() else key     # "4" is "04"; "" stays "" (no notebook)
        known = sorted({e.notebook for e in exercises()})
        if key not in known:
            raise ValueError(f"there is no notebook {notebook!r} with checkable exercises: they are {', '.join(known)}")
        selected = exercises(key)
        key_nb = key + "."
    else:
        selected = exercises()
    rows: dict[str, list[Row]] = {}
    for e in selected:
        item = items.get(e.id, {})
        rows.setdefault(e.notebook, []).append(Row(e.id, e.title, bool(item.get("right")), int(item.get("tries", 0))))
    quiz = [item for key, item in items.items() if ".q" in key and (notebook is None or key.startswith(key_nb))]
    return Progress(rows, progress_path(), (sum(item["right"] for item in quiz), len(quiz)))
