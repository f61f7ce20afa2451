"""The view base: every bertlab view is one anywidget, drawn by an ES module shipped in this package.

Why anywidget: it is an ipywidgets `DOMWidget` on the same comm protocol, so JupyterLab and Notebook 7 take it,
and the same module also runs in VS Code, Colab (anywidget enables Colab's widget manager itself), marimo
(`mo.ui.anywidget`) and, without any kernel, in the lab book (`views.page`: an in-page model over the state
an executed notebook saved). Plotly inside an ipywidgets `Output` shows nothing in VS Code and breaks in Colab;
a module that draws its own figure does not depend on any front end's renderer.

What travels, and how
- `_esm`: `js/runtime.js` (controls, panes, plotly.js loading, figure drawing) followed by the view's own module
  (`js/<module>.js`), plain text, no `import` of anything: no URL, no CDN, no require.js. About 20 KB a widget.
- `nodes`: the controls and rows as small specs (`controls.py`: ipywidgets' names and manners).
- `content`: each `Output` pane's figure (plotly JSON) or HTML, with a revision number so the module redraws
  only what changed. Every numeric array in a figure (a heatmap's `z`, an attention row) goes as a binary
  buffer, in plotly.js's own typed-array form `{dtype, shape, bdata}` with `bdata` a buffer, not JSON numbers.
- `patch`: what a person's change altered, and nothing else: `{n, panes: {id: {rev, ...} | {rev, gone}}}`.
  While Python answers an `event`, `content` is not sent (`_should_send_property`); the page merges the
  patch into the `content` it has, by revision (runtime.js `currentContent`, one store a view, keyed by
  `uid`, the widget's model id). A change made from Python (a cell, or nbclient executing a notebook for the
  book) sends the whole `content`, so a saved widget state is always complete.
- `event`: the browser's only message back: `{id, value}` (or `{id, click}`) when a person moves a control.
  Python applies it exactly as `control.value = value` (or `button.click()`), so a test that sets a value
  from Python drives the view the way a person does, and reads the result back synchronously. It is not
  echoed back to the page. A module may also answer a change itself from what it already has (the
  attention view's `offline`, passed to `renderView` as `local`): drawn at once, while Python computes the
  same answer for Python's readers.
- `done`: the number of the last event handled, so the module (and the bench) knows when its redraw is the
  answer to a person's change. `View.timings` keeps the last events' handling times (bench/widgets.py).
- plotly.js (4.8 MB, from the installed plotly package: `plotly/package_data/plotly.min.js`, MIT, its version
  in `PLOTLY_VERSION`) goes **once per page**, not once per widget: the first view on a page that finds no
  `globalThis.__bertlab.Plotly` sets `plotly_wanted`; Python answers on that one view with `plotly_js`
  (a binary buffer), the module evaluates it and every other view on the page awaits the same promise. The
  module then clears `plotly_wanted` and Python empties `plotly_js`, so a saved notebook does not carry it.
  A page that already has this plotly.js as `window.Plotly` (the book loads its copy as one file beside its
  pages) is used as it is; nothing is asked for.

How to move a widget onto the view base
1. Import the controls from here instead of ipywidgets: `from ..views import controls as W` (Text, IntSlider,
   Dropdown, ToggleButton(s), Checkbox, Button, HTML, Output, HBox, VBox, Layout keep ipywidgets' arguments,
   `.value`, `.observe(fn, names="value")`, `.on_click`, `.click()`, `.layout.display`).
2. Figures and HTML go into `W.Output()` panes with `show_figure(out, fig)` / `show_html(out, markup)` (from
   `bertlab.viz.views`); read them back as `out.figure` (the go.Figure) and `out.html`; `out.empty` says
   nothing is shown.
3. Build the layout as before (rows of controls and panes) and hand its root to `View(root, module=...)`:
   `Widget._start(rows, watch)` in `widgets/base.py` does this for every model widget. `module="view"` (the
   default) draws any figure; a view that draws something plotly cannot (or computes in the browser) adds
   `js/<name>.js` exporting `panes` (pane kind → draw function) and passes `module="<name>"`.
4. Keep the maths in `bertlab.probe`: the module draws what Python (or, in the book, a JS data source)
   computed. In tests, replace `out.outputs[...]` with `out.figure` / `out.content`, `ipywidgets.Output` with
   `views.controls.Output`; the interactions stay the same lines.

Data from a JS source instead of traits (the book, and the in-page model of issue 29): `render({model, el})`
uses only `model.get(name)`, `model.set(name, value)`, `model.save_changes()`, `model.on("change:name", fn)`
and `model.off`. `js/page.js` implements that over a saved state and routes each `event` to a handler the
page supplies (a JS function that computes new `content`, or a lookup in precomputed states), so the same
module draws it. Each module also exports `drawFigure(el, figure)`, which draws a plotly figure (typed arrays
allowed) into an element with no model at all.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections import deque
from functools import lru_cache
from importlib import resources
from pathlib import Path

import anywidget
import numpy as np
import traitlets as t

from . import controls as C

logger = logging.getLogger(__name__)

__all__ = ["View", "show_figure", "show_html", "pack_figure", "typed_array", "unpack", "same_figure", "esm", "plotly_source", "PLOTLY_VERSION",
           "JS_DIR"]

JS_DIR = Path(__file__).parent / "js"


@lru_cache(maxsize=1)
def plotly_source() -> bytes:
    """plotly.min.js as the installed plotly package ships it (the same version plotly's Python side writes for)."""
    return resources.files("plotly").joinpath("package_data/plotly.min.js").read_bytes()


def _plotly_version() -> str:
    head = plotly_source()[:200].decode("utf-8", "replace")
    marker = "plotly.js v"
    return head[head.index(marker) + len(marker):].split()[0] if marker in head else "unknown"


PLOTLY_VERSION = _plotly_version()


@lru_cache(maxsize=None)
def esm(module: str = "view") -> str:
    """The ES module a view runs: the shared runtime, then the view's own module (both in js/)."""
    path = JS_DIR / f"{module}.js"
    if not module.isidentifier() or not path.is_file():
        known = sorted(p.stem for p in JS_DIR.glob("*.js") if p.stem not in ("runtime", "page"))
        raise ValueError(f"no view module {module!r}: the modules are {', '.join(known)}")
    runtime = (JS_DIR / "runtime.js").read_text().replace("__PLOTLY_VERSION__", PLOTLY_VERSION)
    return f"{runtime}\n// ---- {module}.js\n{path.read_text()}"


# ---- figures as the module gets them -----------------------------------------------------------------

_DTYPES = {"float32": "f4", "float64": "f4", "float16": "f4", "int8": "i1", "uint8": "u1", "int16": "i2",
           "uint16": "u2", "int32": "i4", "uint32": "u4", "int64": "i4", "bool": "u1"}
_MIN_TYPED = 8                              # shorter numeric lists stay JSON (axis ranges, tick values)


def _typed(arr: np.ndarray):
    """A numeric array as plotly.js's typed-array spec, its bytes a binary buffer (not JSON numbers).

    Floats go as float32 (hover text shows at most 4 digits); int64 as int32 when it fits."""
    kind = _DTYPES.get(arr.dtype.name)
    if kind is None or arr.ndim not in (1, 2, 3) or arr.size == 0:
        return None
    if arr.dtype.name == "int64" and arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
        return None
    target = {"f4": np.float32, "i1": np.int8, "u1": np.uint8, "i2": np.int16, "u2": np.uint16, "i4": np.int32,
              "u4": np.uint32}[kind]
    data = np.ascontiguousarray(arr, dtype=target)
    return {"dtype": kind, "shape": ",".join(map(str, data.shape)), "bdata": memoryview(data.tobytes())}


def _numeric_list(value) -> np.ndarray | None:
    if len(value) < _MIN_TYPED:
        return None
    first = value[0]
    if isinstance(first, (list, tuple)):
        if not first or not all(isinstance(r, (list, tuple)) and len(r) == len(first) for r in value):
            return None
        flat = [x for r in value for x in r]
    else:
        flat = value
    if not all(isinstance(x, (int, float, np.number)) and not isinstance(x, bool) for x in flat):
        return None
    return np.asarray(value, dtype=np.float64 if any(isinstance(x, float) for x in flat) else np.int64)


def _pack(obj):
    if isinstance(obj, dict):
        return {k: _pack(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fiub":
            spec = _typed(obj)
            if spec is not None:
                return spec
        return _pack(obj.tolist())
    if isinstance(obj, (list, tuple)):
        arr = _numeric_list(obj) if obj else None
        if arr is not None:
            spec = _typed(arr)
            if spec is not None:
                return spec
        return [_pack(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def pack_figure(fig) -> dict:
    """A go.Figure as the module draws it: `{data, layout}`, numeric arrays as binary typed arrays."""
    # the figure's own data and layout (plotly's validated dicts), not to_dict(): that deep-copies everything and
    # turns numpy arrays into base64 text, where the views send binary buffers. _pack builds new containers.
    return _pack({"data": list(fig._data), "layout": fig._layout})


_PACK_MS = [0.0]                                # time spent in pack_figure by show_figure (View.timings)


def show_figure(out: C.Output, fig) -> None:
    """Show `fig` in the pane `out` (None empties it). `out.figure` is then `fig`, as the browser draws it."""
    object.__setattr__(out, "figure", fig)
    object.__setattr__(out, "html", None)
    t0 = time.perf_counter()
    packed = None if fig is None else {"figure": pack_figure(fig)}
    _PACK_MS[0] += (time.perf_counter() - t0) * 1e3
    out._set_content(packed)


def show_html(out: C.Output, markup: str | None, plain: str = "") -> None:
    """Show `markup` (bertlab's own HTML, user text escaped) in `out`, or empty it for None.

    Markup with a script (bertviz's views) is drawn in a sandboxed frame of its own, which runs it offline."""
    object.__setattr__(out, "figure", None)
    object.__setattr__(out, "html", markup)
    out._set_content(None if markup is None else
                     {"html": markup, "frame": "<script" in markup.lower(), "plain": plain})


def _jsonable(obj) -> str:
    """How a state dict looks without its buffers (for sizes and for the book's saved state)."""
    def default(o):
        if isinstance(o, (memoryview, bytes)):
            return f"<{len(o)} bytes>"
        raise TypeError(type(o).__name__)
    return json.dumps(obj, default=default)


# ---- the widget ---------------------------------------------------------------------------------------

class View(anywidget.AnyWidget):
    """One bertlab view: a tree of controls and panes (`controls.py`) drawn by one ES module.

    `View(root, module="view")`: `root` is a VBox/HBox (or one element); `module` names `js/<module>.js`.
    `view.elements[id]` is every piece by id. Python reads everything back synchronously: a control's
    `.value`, a pane's `.figure` / `.html`.
    """

    nodes = t.Dict({}).tag(sync=True)          # id → spec of every control, pane and row
    root = t.Unicode("").tag(sync=True)        # the id of the outermost row
    content = t.Dict({}).tag(sync=True)        # pane id → {"rev", "figure" | "html"}
    # the browser → Python: {"id", "value" | "click", "n"}; not echoed back (ipywidgets' echo_update would send
    # every change straight back to the page that sent it: one message more per change, for nothing)
    event = t.Dict({}).tag(sync=True, echo_update=False)
    done = t.Int(0).tag(sync=True)             # the n of the last event handled
    plotly_wanted = t.Bool(False).tag(sync=True)
    plotly_js = t.Bytes(b"").tag(sync=True)
    plotly_version = t.Unicode(PLOTLY_VERSION).tag(sync=True)
    # the panes a person's change altered, sent instead of the whole `content` (see _should_send_property)
    patch = t.Dict({}).tag(sync=True)
    uid = t.Unicode("").tag(sync=True)         # this view, for the page's store of its panes (runtime.js)
    module = t.Unicode("view").tag(sync=True)  # which js/<module>.js draws it (for the book's runtime)
    data = t.Dict({}).tag(sync=True)           # what the module may compute from without a kernel (the book)

    def __init__(self, root: C.Element, module: str = "view", **kwargs):
        if not isinstance(root, C.Element):
            raise ValueError(f"a view's root is a row or control from bertlab.viz.views.controls, "
                             f"got {type(root).__name__}")
        super().__init__(_esm=esm(module), module=module, **kwargs)
        self.elements: dict[str, C.Element] = {}
        self._rev = 0
        self._batch: dict | None = None
        self._patching = False                  # True while Python answers a person's change (see _handle)
        self._patch: dict = {}
        with self.hold_sync():
            self._adopt(root)
            self.root = root.id
            # the widget's own model id (unique on a page, and already in any saved state): no new randomness
            self.uid = self.model_id or ""
        self.observe(self._on_event, names="event")
        self.observe(self._on_plotly_wanted, names="plotly_wanted")

    # -- the tree
    def _adopt(self, el: C.Element) -> None:
        """Make `el` and everything under it part of this view (ids, specs and pane content synced)."""
        stack, nodes, content = [el], dict(self.nodes), dict(self.content)
        while stack:
            e = stack.pop()
            if e._view is not self:
                object.__setattr__(e, "_view", self)
            self.elements[e.id] = e
            nodes[e.id] = e.spec()
            if isinstance(e, C.Output) and e.content is not None:
                self._rev += 1
                content[e.id] = {"rev": self._rev, **e.content}
                if self._patching:
                    self._patch[e.id] = content[e.id]
            stack.extend(e.children_of())
        self.nodes, self.content = nodes, content

    def _update_node(self, el: C.Element) -> None:
        self.nodes = {**self.nodes, el.id: el.spec()}

    def _update_content(self, out: C.Output) -> None:
        self._rev += 1
        new = dict(self.content)
        if out.content is None:
            new.pop(out.id, None)
        else:
            new[out.id] = {"rev": self._rev, **out.content}
        if self._patching:                      # only this pane travels: {"rev", "gone"} for an emptied one
            self._patch[out.id] = new.get(out.id) or {"rev": self._rev, "gone": True}
        self.content = new

    def _should_send_property(self, key, value):
        """While Python answers a person's change, `content` stays here: the panes that changed go as `patch`.

        `content` holds every pane (a bertviz view is 0.5-1.3 MB of HTML); resending it all for one changed
        heatmap cost the kernel, the Jupyter server and the page a JSON encode, a relay and a parse each time.
        A change made from Python (a cell, or nbclient running a notebook for the book) still sends the whole
        `content`, so a saved widget state is always complete; the page merges patches into it by revision."""
        if key == "content" and getattr(self, "_patching", False):
            return False
        return super()._should_send_property(key, value)

    # -- the browser's events
    timings: deque = deque(maxlen=2000)        # the last events handled: {view, n, handle_ms, pack_ms, send_ms}

    def _on_event(self, change) -> None:
        t0, pack0 = time.perf_counter(), _PACK_MS[0]
        self._send_ms = 0.0
        try:
            self._handle(change["new"] or {})
        finally:
            # the answer leaves when hold_sync ends (inside _handle): handle_ms is Python's part of a change
            # as the page feels it, send_ms the serialising and sending within it
            View.timings.append({"view": self.module, "n": int((change["new"] or {}).get("n") or 0),
                                 "handle_ms": (time.perf_counter() - t0) * 1e3, "pack_ms": _PACK_MS[0] - pack0,
                                 "send_ms": getattr(self, "_send_ms", 0.0)})
            self._send_ms = 0.0

    def send_state(self, key=None):
        t0 = time.perf_counter()
        try:
            super().send_state(key)
        finally:
            self._send_ms = getattr(self, "_send_ms", 0.0) + (time.perf_counter() - t0) * 1e3

    def _handle(self, ev: dict) -> None:
        el = self.elements.get(ev.get("id"))
        try:
            if el is None:
                raise ValueError(f"no control {ev.get('id')!r} in this view")
            with self.hold_sync():
                self._patching, self._patch = True, {}
                try:
                    if ev.get("click"):
                        el.click()
                    else:
                        el._from_front(ev.get("value"))
                finally:
                    self._patching = False
                    if self._patch:
                        self.patch = {"n": int(ev.get("n") or 0), "panes": self._patch}
                    self._patch = {}
                self.done = int(ev.get("n") or 0)
        except Exception:                       # the widget's own callbacks turn errors into messages
            logger.debug("event %r failed", ev, exc_info=True)
            self.done = int(ev.get("n") or 0)

    def _on_plotly_wanted(self, change) -> None:
        """The first view on a page asks for plotly.js; it goes once, then leaves the state."""
        self.plotly_js = plotly_source() if change["new"] else b""

    # -- sizes, for the bench and the README
    def state_size(self) -> dict:
        """Bytes of this view's synced state: the module, the JSON and the binary buffers."""
        state = self.get_state()
        buffers = 0

        def walk(o):
            nonlocal buffers
            if isinstance(o, (memoryview, bytes)):
                buffers += len(o)
            elif isinstance(o, dict):
                for v in o.values():
                    walk(v)
            elif isinstance(o, (list, tuple)):
                for v in o:
                    walk(v)
        walk(state)
        return {"esm": len(state.get("_esm", "")), "json": len(_jsonable(state)), "buffers": buffers}


def typed_array(arr) -> dict:
    """Any numeric array as `{dtype, shape, bdata}` with a binary buffer (any number of dimensions: for a
    module's own data, such as the attention view's (L, H, T, T) in `View.data`)."""
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float32))
    return {"dtype": "f4", "shape": ",".join(map(str, a.shape)), "bdata": memoryview(a.tobytes())}


def unpack(obj):
    """The inverse of `pack_figure`'s array packing: typed-array specs back to numpy arrays (float32 as sent).

    Tests use it to read a pane exactly as the module receives it."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            raw = obj["bdata"]
            raw = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)   # plotly's own form is base64
            arr = np.frombuffer(raw, dtype=np.dtype(obj["dtype"]))
            return arr.reshape(tuple(int(s) for s in str(obj["shape"]).split(","))) if obj.get("shape") else arr
        return {k: unpack(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unpack(v) for v in obj]
    return obj


def same_figure(sent: dict, fig, atol: float = 1e-6) -> bool:
    """Whether a pane's figure as sent (`out.content["figure"]`) draws `fig`: the same data and layout, arrays
    equal to float32 precision (`atol` relative to their scale)."""
    want = _pack({"data": [dict(t) for t in fig.to_dict().get("data", [])], "layout": fig.to_dict().get("layout", {})})

    def eq(a, b) -> bool:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            scale = max(1.0, float(np.nanmax(np.abs(b))) if b.size else 1.0)
            return a.shape == b.shape and bool(np.allclose(a, b, atol=atol * scale, equal_nan=True))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))
        return a == b
    return eq(unpack(sent), unpack(want))
