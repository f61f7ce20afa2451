"""Views live in the book, without a kernel: the saved state of a view, embedded with the in-page runtime.

The book (bertlab.book.render) calls `embed(entry)` for each bertlab view in an executed notebook's widget
state. The page runs the view's own ES module (saved in its state as `_esm`) over a small in-page model
(js/page.js): every control whose answer was saved or can be computed from saved data stays live (the
attention view recomputes layer, head, combine, words, [CLS]/[SEP] and threshold from the attention it saved,
in js/attention.js's `offline`); a change that needs the model (a new text) says so.
"""

from __future__ import annotations

import html
import json

from .base import JS_DIR

__all__ = ["embed", "is_view", "page_script"]


def is_view(entry: dict) -> bool:
    """Whether a saved widget model is a bertlab view (an anywidget with the view base's state)."""
    s = entry.get("state", {}) if isinstance(entry, dict) else {}
    return entry.get("model_name") == "AnyModel" and isinstance(s.get("nodes"), dict) and "_esm" in s


def page_script() -> str:
    """The in-page runtime (js/page.js), once per page."""
    return (JS_DIR / "page.js").read_text()


def embed(entry: dict, first: bool = True) -> str:
    """HTML for one saved view: its state as JSON (buffers base64, as the notebook saved them) and, for the first
    view of a page, the runtime that mounts every view on it. Text is escaped for a <script> element."""
    payload = {"state": entry.get("state", {}), "buffers": entry.get("buffers", [])}
    data = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")
    module = html.escape(str(payload["state"].get("module", "view")))
    out = (f'<div class="bl-embed" data-module="{module}">'
           f'<script type="application/json" class="bl-embed-state">{data}</script></div>')
    if first:
        out += f"<script>{page_script()}</script>"
    return out
