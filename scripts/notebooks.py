"""Execute the notebooks and strip them for committing.

    .venv/bin/python scripts/notebooks.py [NOTEBOOK ...]          # run, then strip
    .venv/bin/python scripts/notebooks.py --strip-only [NOTEBOOK ...]
    .venv/bin/python scripts/notebooks.py --lessons               # rewrite README table, 00's map, openings
    .venv/bin/python scripts/notebooks.py --measure [NOTEBOOK ...] # run each, write its run time, then --lessons

Each lesson's facts live in its metadata["bertlab"] (bertlab/course/lessons.py); --lessons writes every place
that shows them. --measure runs one notebook at a time as a reader does (one kernel, every cell), records the
wall time, the kernel's CPU time and the machine's load average before and after, and writes them there.

Notebooks are committed without outputs, except the plain text (stream and text/plain) of checked cells (cell
tag `nbval-check-output`), whose printed text is the lesson and which nbval compares on every test run. A cell
written with an old `# NBVAL_CHECK_OUTPUT` line gets the tag instead when the notebook is stripped.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# a fresh progress file, as under nbval (notebooks/conftest.py): review.ipynb's checked plan is a new learner's
os.environ["BERTLAB_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="bertlab-progress-"), "progress.json")


def strip(nb) -> None:
    sys.path.insert(0, str(ROOT))               # the repository's bertlab, not an installed one
    from bertlab.course.lessons import is_checked, tag_markers

    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        tag_markers(cell)                       # test plumbing as a cell tag, out of the code a learner reads
        if is_checked(cell):
            kept = []
            for o in cell.outputs:
                if o.output_type == "stream":
                    kept.append(o)
                elif o.output_type == "execute_result" and "text/plain" in o.get("data", {}):
                    o.data = {"text/plain": o.data["text/plain"]}
                    o.metadata = {}
                    kept.append(o)
            cell.outputs = kept
        else:
            cell.outputs = []
            cell.execution_count = None


def _kernel_cpu_seconds(client, nb) -> float:
    """The kernel's own CPU time so far (user + system), printed by one more cell run in it."""
    cell = nbformat.v4.new_code_cell("import os as _os; print(sum(_os.times()[:2]))")
    nb.cells.append(cell)
    client.execute_cell(cell, len(nb.cells) - 1)
    return float("".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))


def measure(path: Path) -> dict:
    """Run `path` top to bottom in a fresh kernel; its wall time, the kernel's CPU time and the load around it."""
    import platform

    nb = nbformat.read(path, as_version=4)
    load_before = os.getloadavg()[0]
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    with client.setup_kernel():
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        wall = time.perf_counter() - start
        cpu = _kernel_cpu_seconds(client, nb)
    load_after = os.getloadavg()[0]
    return {"wall_s": round(wall), "cpu_s": round(cpu), "how": "scripts/notebooks.py --measure (nbclient)",
            "machine": f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), shared",
            "load": f"{load_before:.1f} before, {load_after:.1f} after", "when": time.strftime("%Y-%m-%d")}


def lessons(write: bool) -> int:
    sys.path.insert(0, str(ROOT))
    from bertlab.course.lessons import sync

    stale = sync(ROOT / "notebooks", ROOT / "README.md", write=write)
    for line in stale:
        print(("rewrote " if write else "") + line)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--strip-only", action="store_true")
    ap.add_argument("--lessons", action="store_true", help="rewrite what the lessons' metadata generates")
    ap.add_argument("--measure", action="store_true", help="measure run times into the metadata, then --lessons")
    args = ap.parse_args(argv)
    if args.lessons:
        return lessons(write=True)
    if args.measure:
        paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + [
            ROOT / "notebooks" / "glossary.ipynb"]
        for path in paths:
            run = measure(path)
            nb = nbformat.read(path, as_version=4)          # the committed file, unexecuted
            nb.metadata.setdefault("bertlab", {})["run"] = run
            nbformat.write(nb, path)
            print(f"{path.name}: {run['wall_s']} s wall, {run['cpu_s']} s CPU, load {run['load']}")
        return lessons(write=True)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if not args.strip_only:
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        strip(nb)
        nbformat.write(nb, path)
        print(f"{path.name}: {'stripped' if args.strip_only else 'executed and stripped'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
