"""Execute the notebooks and strip them for committing.

    .venv/bin/python scripts/notebooks.py [NOTEBOOK ...]          # run, then strip
    .venv/bin/python scripts/notebooks.py --strip-only [NOTEBOOK ...]

Notebooks are committed without outputs, except the plain text (stream and text/plain) of cells marked
`# NBVAL_CHECK_OUTPUT`, whose printed text is the lesson and which nbval compares on every test run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
MARK = "# NBVAL_CHECK_OUTPUT"
# a fresh progress file, as under nbval (notebooks/conftest.py): review.ipynb's checked plan is a new learner's
os.environ["BERTLAB_PROGRESS"] = os.path.join(tempfile.mkdtemp(prefix="bertlab-progress-"), "progress.json")


def strip(nb) -> None:
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        if MARK in cell.source:
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--strip-only", action="store_true")
    args = ap.parse_args(argv)
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
