"""Executed copies of the notebooks from the nbval run the test suite makes anyway, for the book.

nbval runs every notebook top to bottom (the README's test command) and reads every output each cell sends,
then throws them away. notebooks/conftest.py hands them to `Recorder`, which puts them back into the
notebook's cells, rebuilds the widgets' state from the comm messages the kernel sent (as nbclient and
JupyterLab keep it: model id → its current state, in `metadata.widgets`), and writes the executed notebook to
a folder (default build/executed/). `bertlab book` reuses a copy whose cells' sources equal the notebook's,
so CI builds the book without running the notebooks a second time.

A notebook with a failed cell, or of which only some cells ran, is not written (its outputs would be
incomplete): the book runs it itself.
Outputs nbval's reader does not keep (clear_output, update_display_data) are missing from the copy; the
lessons use neither outside widgets, whose figures live in the widget state.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import nbformat

from .render import WIDGET_STATE

log = logging.getLogger(__name__)


class Recorder:
    """One notebook's outputs and widget state, gathered cell by cell while nbval runs it."""

    def __init__(self):
        self.widgets: dict[str, dict] = {}
        self.buffers: dict[str, dict[tuple, bytes]] = {}     # model id → path in its state → binary buffer
        self.failed = False
        self.count = 0

    def comm(self, msg) -> None:
        """A comm_open or comm_msg from the kernel: the widget's full state, or an update to it."""
        content = msg.get("content", {})
        data, comm_id = content.get("data", {}), content.get("comm_id")
        if not comm_id or not isinstance(data, dict) or "state" not in data:
            return
        if msg["msg_type"] == "comm_open" or data.get("method") in ("update", "echo_update"):
            self.widgets.setdefault(comm_id, {}).update(data["state"])
            # binary buffers (a view's figure arrays) travel beside the JSON, each at a path into the state: a
            # trait sent again replaces the buffers it had
            kept = self.buffers.setdefault(comm_id, {})
            for path in [p for p in kept if p[0] in data["state"]]:
                del kept[path]
            for path, buf in zip(data.get("buffer_paths") or [], msg.get("buffers") or []):
                kept[tuple(path)] = bytes(buf)

    def cell(self, cell, outputs) -> None:
        """Put the outputs nbval read for `cell` into it, with an execution count as a kernel would give."""
        self.count += 1
        cell.outputs = [nbformat.from_dict(dict(o)) for o in (outputs or [])]
        for o in cell.outputs:
            if o.get("output_type") == "execute_result":
                o["execution_count"] = self.count
                o.setdefault("metadata", {})
        cell.execution_count = self.count

    def widget_metadata(self) -> dict:
        state = {mid: {"model_name": s.get("_model_name", ""), "model_module": s.get("_model_module", ""),
                       "model_module_version": s.get("_model_module_version", ""), "state": s,
                       **({"buffers": [{"encoding": "base64", "path": list(p), "data": base64.b64encode(b).decode()}
                                       for p, b in self.buffers[mid].items()]} if self.buffers.get(mid) else {})}
                 for mid, s in self.widgets.items() if "_model_name" in s}
        return {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": state}}

    def write(self, nb, dest: Path) -> Path | None:
        """Write the executed notebook to `dest`, unless a cell failed or not every code cell ran (a run of
        some cells only, `-k` or `::Cell 3`, is not the notebook run top to bottom)."""
        if self.failed:
            log.info("not writing an executed copy of %s: a cell failed", dest.name)
            return None
        if self.count != sum(1 for c in nb.cells if c.cell_type == "code"):
            log.info("not writing an executed copy of %s: only %d code cells ran", dest.name, self.count)
            return None
        if self.widgets:
            nb.metadata["widgets"] = self.widget_metadata()
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".ipynb.tmp")
        nbformat.write(nb, tmp)
        tmp.replace(dest)                       # a reader never sees half a notebook
        return dest
