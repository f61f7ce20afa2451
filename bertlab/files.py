"""Writing files safely: never through a planted link, with the mode every other file gets, and errors that
say which file and why.

Three things go wrong when a program writes into a folder other people can write to, or onto a disk that
fills up, and each has one answer here:
- **links.** `open(path, "a")` follows a symbolic link, so whoever can create `metrics.jsonl` in a shared run
  folder can make the next run append to (or a lock truncate) any file its user can write. `open_for_append`
  opens with O_NOFOLLOW and refuses anything but a regular file (a FIFO would block the run for ever);
  `replace_text` writes a new file under a random name and renames it over the old name, which replaces
  a link rather than writing through it.
- **modes.** Files written with `open` follow the umask (usually 0644); safetensors and `mkstemp` write
  0600, so a colleague could read a shared checkpoint's config but not its weights. `umask_mode` is the mode
  `open` would give, and `match_umask` gives it to every file of a folder.
- **full disks.** torch reports one as `[enforce fail at inline_container.cc…] file write failed` and
  safetensors as an `IoError` without the path. `write_error` turns either (or a plain ENOSPC) into an
  OSError that names the file and says the disk is full.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)     # Windows has none: links there need privileges to make anyway
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)     # open a FIFO without waiting for a writer (Windows has no FIFOs)


class LinkRefused(ValueError):
    """A file bertlab writes is a symbolic link, or not a regular file: it is refused, never written through."""


def refuse_link(path: Path, what: str, folder_ok: bool = False) -> None:
    """Raise LinkRefused when `path` is a symbolic link or exists as something other than a regular file (or,
    with `folder_ok`, a folder)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):    # nothing there (a part of the path is a file): no link
        return
    except ValueError:                                  # os.lstat's own "embedded null byte"
        raise ValueError(f"{str(path)!r} has a NUL character (\\x00) in it, which no file name can hold: "
                         f"{what} needs a path without one") from None
    except OSError as e:                                # a name too long, a folder you may not read, a loop
        raise OSError(e.errno, f"{what} cannot be at {_short(path)}: {e.strerror}; pass another path") from None
    if stat.S_ISLNK(st.st_mode):
        raise LinkRefused(f"{path} is a symbolic link (to {os.readlink(path)}): {what} must be a file of its own, "
                          "never written through a link; remove the link (a copy of a run folder is made with "
                          "`cp -a`, not `cp -s` or `cp -as`)")
    if stat.S_ISDIR(st.st_mode) and not folder_ok:
        raise LinkRefused(f"{path} is a folder: {what} must be a plain file; move the folder away")
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise LinkRefused(f"{path} is not a regular file (a FIFO, a socket or a device?): {what} must be a plain "
                          "file; remove it")


def _short(path) -> str:
    """A path for a message: a name too long to print whole is cut in the middle."""
    text = str(path)
    return text if len(text) <= 120 else f"{text[:60]}…{text[-40:]} ({len(text)} characters)"


def path_to_write(path, what: str) -> Path:
    """`path` as a Path a file may be written to: a str or Path, in a folder that exists, not a link, a folder
    or a special file (`what`, e.g. "an autoencoder file", names the file in the error)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"path must be a file path (str or Path), got {path!r}")
    path = Path(path)
    if not path.parent.is_dir():         # before the link check, whose lstat would raise a bare errno here
        raise FileNotFoundError(f"{path.parent} is not a folder, so {path.name} cannot be written there: create "
                                "the folder first, or pass a path in an existing one")
    refuse_link(path, what)
    return path


def path_to_read(path, what: str, written_by: str) -> Path:
    """`path` as a Path of a plain file to read: a str or Path, not a link, a folder or a special file, and there
    (else a FileNotFoundError that says to pass the path `written_by` wrote)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file path (str or Path), got {type(path).__name__}")
    path = Path(path)
    refuse_link(path, what)
    if not path.is_file():
        raise FileNotFoundError(f"no {what.split(' ', 1)[-1]} at {path}: pass the path {written_by} wrote")
    return path


def open_for_append(path: Path, what: str):
    """`open(path, "a")` that never follows a link nor blocks on a FIFO: a link or a special file is LinkRefused."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK, umask_mode())
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):  # a link (EMLINK on BSD), a FIFO
            refuse_link(path, what)
        raise
    try:
        refuse_shared(fd, path, what)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def refuse_shared(fd: int, path: Path, what: str) -> None:
    """Refuse an open file that is not a regular file, or that has other names (hard links, as `cp -al` makes):
    writing in place would change every copy."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise LinkRefused(f"{path} is not a regular file (a FIFO, a socket or a device?): {what} must be a plain "
                          "file; remove it")
    if st.st_nlink > 1:
        raise LinkRefused(f"{path} has {st.st_nlink - 1} other name(s) (a hard link, as `cp -al` makes): {what} "
                          "is written in place, which would change the other copies too; replace it with a copy "
                          f"of its own (cp {path.name} x && mv x {path.name})")


def read_text(path: Path, what: str) -> str:
    """A small text file's contents, refusing a link or a FIFO (reading a FIFO would wait for ever)."""
    refuse_link(path, what)
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LinkRefused(f"{path} is not a regular file: {what} must be a plain file; remove it")
        return f.read().decode("utf-8", errors="replace")


def replace_text(path: Path, text: str) -> None:
    """Put `text` in `path` atomically: a new file under a random name, then renamed over `path` (a link at
    `path` is replaced, never written through), with the umask's mode."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise write_error(e, path, f"{path.name} is as it was") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, umask_mode())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        error = write_error(e, path, f"{path.name} is as it was") if isinstance(e, Exception) else None
        if error is None:
            raise
        raise error from e


def append_line(path: Path, line: str, what: str) -> None:
    """Append one line to a log through `open_for_append`; a failed write (a full disk) names the file."""
    try:
        with open_for_append(path, what) as f:
            f.write(line + "\n")
    except OSError as e:
        raise write_error(e, path, "the lines before it are intact") from e


def umask_mode() -> int:
    """The mode `open(path, "w")` gives a new file here: 0o666 less the umask (0o644 with the usual 022).

    Linux says the umask in /proc/self/status; elsewhere it can only be read by setting it, which for a moment
    applies 022 to any file another thread creates."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            mask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def match_umask(folder: Path) -> None:
    """Give every file directly in `folder` the mode `open` would (safetensors writes 0600, `open` 0644)."""
    mode = umask_mode()
    for f in Path(folder).iterdir():
        if f.is_file() and not f.is_symlink():
            os.chmod(f, mode)


# ---- a full disk, said so --------------------------------------------------------------------------------

def _disk_full(e: BaseException) -> bool:
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(e)
    return any(s in text for s in ("No space left", "StorageFull", "code: 28", "Disk quota exceeded"))


def _written_short(e: BaseException) -> bool:
    """torch's stream writer on a full disk: it never says why, only that a write fell short."""
    text = str(e)
    return "inline_container" in text or "file write failed" in text or "unexpected pos" in text


class WriteFailed(OSError):
    """A file could not be written (a full disk, a read-only mount, …): which file, why, and what is intact."""

    def __init__(self, code: int, file, why: str, intact: str = ""):
        advice = ("free some space (or write elsewhere) and try again" if code in (errno.ENOSPC, errno.EDQUOT)
                  else "fix that and try again")
        intact = intact[:1].upper() + intact[1:]
        super().__init__(code, f"could not write {file}: {why}. " + (f"{intact}; " if intact else "") + advice)
        self.file, self.why = file, why


def write_error(e: BaseException, file, intact: str = "") -> WriteFailed | None:
    """A WriteFailed saying that `file` could not be written because the disk is full (or another system error)
    and what is still `intact`; None when `e` is not a failed write (a bug: let it show as it is)."""
    if isinstance(e, WriteFailed):                  # from deeper down (bertlab.save): keep its file and reason
        return WriteFailed(e.errno, e.file, e.why, intact)
    full = _disk_full(e)
    if not (full or _written_short(e) or isinstance(e, OSError)):
        return None
    try:
        free = shutil.disk_usage(_existing(Path(file))).free
    except OSError:
        free = None
    room = f" ({free / 2**20:.1f} MiB free there)" if free is not None else ""
    if isinstance(e, OSError) and e.errno == errno.EDQUOT:
        return WriteFailed(errno.EDQUOT, file, "your disk quota is used up", intact)
    if full or (_written_short(e) and free is not None and free < 64 * 2**20):
        return WriteFailed(errno.ENOSPC, file, f"the disk is full{room}", intact)
    if isinstance(e, OSError):
        return WriteFailed(e.errno or errno.EIO, file, e.strerror or str(e), intact)
    first = (str(e).strip().splitlines() or [""])[0][:120]
    return WriteFailed(errno.EIO, file, f"the write fell short ({first}): is the disk full?{room}", intact)


def _existing(path: Path) -> Path:
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path(".")
