"""The book's in-page model: bertlab-mini running in the reader's browser, so a typed sentence gets its
attention, guesses by layer, embedding parts and next-sentence probability with nothing installed.

What travels with the site (`add_to_site`), all of it files of the book's own `_static/live/`:
- `model/`: the model exported at build time by `bertlab.export_onnx` (fp16 weights: bertlab-mini was saved
  in bfloat16, so nothing is lost), its tokenizer.json and manifest;
- `vendor/`: ONNX Runtime Web's WebAssembly backend and the tokenizers library's JavaScript port, shipped
  inside this package (pinned versions, checksums and licences in `vendor/VENDOR.json`), so a fresh clone
  builds and views the book with no network;
- `views/`: the notebooks' own view modules (`bertlab.viz.views.esm`: the same ES module a widget runs in
  JupyterLab) and each live view's starting state, the notebook's widget built on bertlab-mini at build time
  (`view_state`): its controls, panes and figures;
- `bertlab-live.mjs` (the model and the page API `window.bertlab`), `live-views.mjs` (the glue: the in-page
  model's numbers put into each view's state, which the view module draws; no drawing code of its own) and
  `live.css`.

Why vendored rather than fetched at build time: the book must build from a fresh clone with no network; a
fetch-and-cache step would need the network once per machine and a second code path to test. The price is
14.4 MB in the repository (the .wasm is 14.2 MB of it).
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import shutil
from importlib import resources
from pathlib import Path

__all__ = ["add_to_site", "panel", "LESSON_VIEWS", "what_runs_where", "PAGE", "LIVE_DIR", "MODEL_NAME"]

logger = logging.getLogger(__name__)

LIVE_DIR = "_static/live"           # where the site keeps the in-page model, relative to its root
PAGE = "what-runs-where.html"
MODEL_NAME = "bertlab-mini"
DTYPE = "fp16"

# which live views a lesson's page gets (by notebook name), in the order they are drawn. "fill" is
# MaskPlayground (type a text, click a word to hide it: the guesses and every layer's guess, the logit lens),
# so it is also the masking lab of notebook 04.
LESSON_VIEWS: dict[str, tuple[str, ...]] = {
    "00_tour.ipynb": ("fill", "attention"),
    "02_input_embeddings.ipynb": ("embeddings",),
    "03_self_attention.ipynb": ("attention",),
    "04_masked_lm.ipynb": ("fill",),
    "05_next_sentence.ipynb": ("nsp",),
    "07_contextual_embeddings.ipynb": ("context",),
    "10_inside_the_model.ipynb": ("fill",),
}


def _static() -> Path:
    return Path(str(resources.files("bertlab.book.inpage") / "static"))


def _cache_key(dtype: str) -> str:
    """What the bundled model's export depends on: the exporter's source, the dtype, the model's files."""
    from ... import export

    h = hashlib.sha256(Path(export.__file__).read_bytes() + dtype.encode())
    src = Path(str(resources.files("bertlab") / "assets" / MODEL_NAME))
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        h.update((src / name).read_bytes())
    return h.hexdigest()[:20]


def add_to_site(static_dir, model=MODEL_NAME, dtype: str = DTYPE, cache=None) -> dict:
    """Copy the runtime and views into `static_dir`/live and export `model` beside them.

    `cache`: a folder where the bundled model's export is kept for the next build (the book's build cache);
    it is used again while the exporter, the dtype and the model's files are unchanged.
    Returns {"files": bytes of the runtime and views, "model": bytes of the exported model folder,
    "max_abs_diff": the export's measured parity}. Raises ImportError (with what to install) when the ONNX
    exporter is missing.
    """
    try:
        import onnx  # noqa: F401  (torch's exporter writes through it)
    except ImportError as err:
        raise ImportError("the book's in-page model is exported with torch's ONNX exporter, which needs the onnx "
                          "package: pip install 'bertlab[book]' (or pass live_model=False)") from err
    from ...checkpoint import load
    from ...export import MANIFEST, export_onnx, read_manifest

    live = Path(static_dir) / "live"
    shutil.copytree(_static(), live, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    _write_views(live)
    runtime = sum(p.stat().st_size for p in live.rglob("*") if p.is_file())
    target = live / "model"
    kept = Path(cache) / "live-model" / _cache_key(dtype) if cache is not None and model == MODEL_NAME else None
    if kept is not None and (kept / MANIFEST).is_file():
        shutil.copytree(kept, target)
        diff = read_manifest(target)["parity"]["max_abs_diff"]
    else:
        if isinstance(model, str):
            model, tokenizer = load(model, device="cpu")
            name = MODEL_NAME
        else:
            model, tokenizer = model
            name = type(model).__name__
        diff = export_onnx(model, tokenizer, target, dtype, name=name).max_abs_diff
        if kept is not None:                   # one export kept: an older one is replaced
            shutil.rmtree(kept.parent, ignore_errors=True)
            shutil.copytree(target, kept)
    size = sum(p.stat().st_size for p in target.iterdir())
    return {"files": runtime, "model": size, "max_abs_diff": diff}


# ---- what a lesson page gets ------------------------------------------------------------------------------

_TITLES = {
    "fill": "Hide a word: the model's guesses, layer by layer",
    "attention": "Every head's attention",
    "embeddings": "The embedding sum, part by part",
    "nsp": "Does B follow A? (next-sentence prediction)",
    "context": "The same word across sentences, layer by layer",
}
_DEFAULTS = {
    "fill": {"text": "The capital of France is [MASK]."},
    "attention": {"text": "The cat sat on the mat because it was tired."},
    "embeddings": {"text": "The bank of the river was muddy."},
    "nsp": {"a": "It rained all day.", "b": "The river rose over its banks."},
    "context": {"word": "bank", "sentences": ["She sat on the bank of the river. | river",
                                              "He paid the money into the bank. | money",
                                              "The ducks rested on the grassy bank. | river"]},
}


# ---- the views' saved state: the notebook's own widgets, built once at build time ---------------------------
#
# A live view on a page is the same view module (bertlab/viz/views/js) the notebook's widget runs, over a state
# the in-page model fills: the widget is built here with bertlab-mini on the default text, so its controls,
# panes and figures (their traces, colours and layout: bertlab.viz's figure functions) are the notebook's; in
# the page, live-views.mjs answers each control with the in-page model's numbers put into those figures.

def _widget(kind: str):
    """The notebook's widget for a live view, on bertlab-mini and the view's default text, and what names its
    controls and panes (name → the element the live glue reads or fills)."""
    from ...viz import AttentionExplorer, ContextExplorer, EmbeddingSumExplorer, MaskPlayground, NSPExplorer

    if not isinstance(kind, str) or kind not in _TITLES:
        raise ValueError(f"no live view {kind!r}: the live views are {', '.join(_TITLES)}")
    d = _DEFAULTS[kind]
    if kind == "fill":
        w = MaskPlayground(d["text"], model=MODEL_NAME, mask=None)
        names = ("text", "tokens", "top_k", "out", "layers_out")
    elif kind == "attention":
        w = AttentionExplorer(d["text"], model=MODEL_NAME)
        w.show_grid.value = True                 # the grid's figure is built, so the page has its traces ...
        w.show_head_view.layout.display = "none"  # bertviz's own page: drawn from Python's HTML, not live here
        names = ("text", "text_pair", "layer", "head", "combine", "words", "hide_special", "threshold", "show_grid",
                 "out", "grid_out", "guesses_out")
    elif kind == "embeddings":
        w = EmbeddingSumExplorer(d["text"], "", model=MODEL_NAME)
        w.show_positions.layout.display = "none"  # the position table's similarity: a picture in the lesson below
        names = ("text", "text_pair", "out")
    elif kind == "nsp":
        w = NSPExplorer(d["a"], d["b"], model=MODEL_NAME)
        names = ("a", "b", "swap", "out")
    else:                                        # "context"
        w = ContextExplorer(d["word"], d["sentences"], model=MODEL_NAME)
        names = ("word", "sentences", "show", "layer", "out")
    if w.error:
        raise RuntimeError(f"the {kind} view failed on its default text: {w.error}")
    w.model_select.disabled = True               # the page has one model
    return w, {n: getattr(w, n).id for n in names} | {"message": w.message.id, "model": w.model_select.id}


def _drift_colors(n: int = 12) -> list[str]:
    """The line colours drift_by_layer gives its traces, in order (read off the public function's figure, so the
    page colours a fourth sentence as the notebook does)."""
    import torch

    from ...viz import drift_by_layer

    fig = drift_by_layer(torch.randn(n + 1, 2, 4), [f"{i}" for i in range(n + 1)])
    return [t.line.color for t in fig.data]


def view_state(kind: str) -> dict:
    """One live view's saved state as the page reads it: the view's state (its module named, not included:
    the page imports the module file), binary buffers base64 beside their paths, and its controls by name."""
    import base64

    from ipywidgets.widgets.widget import _remove_buffers

    w, controls = _widget(kind)
    state = w.view.get_state()
    if kind == "attention":                      # ... and kept as the page's template while the grid starts off,
        grid = state["content"][controls["grid_out"]]   # as in the notebook (72 heatmaps: the slowest draw)
        w.show_grid.value = False
        state = w.view.get_state()
        state["content"][controls["grid_out"]] = grid
    if kind == "context":                        # the drift figure's traces too, for "drift by layer"
        w.show.value = "drift by layer"
        drift = w.view.get_state()["content"][controls["out"]]
        w.show.value = w.VIEWS[0]
        state = w.view.get_state()
        state["templates"] = {"drift": drift["figure"], "colors": _drift_colors()}
    for key in ("_esm", "_css", "plotly_js", "plotly_wanted", "_anywidget_id", "layout", "tabbable", "tooltip"):
        state.pop(key, None)
    state = {k: v for k, v in state.items() if not k.startswith("_")}
    state, paths, buffers = _remove_buffers(state)
    return {"kind": kind, "module": w.module, "state": state, "controls": controls, "model": MODEL_NAME,
            "buffers": [{"path": p, "data": base64.b64encode(bytes(b)).decode()} for p, b in zip(paths, buffers)]}


def _write_views(live: Path) -> int:
    """The view modules and every live view's state, into `live`/views; returns their bytes."""
    from ...viz.views import esm

    folder = live / "views"
    folder.mkdir(exist_ok=True)
    modules = set()
    for kind in _TITLES:
        entry = view_state(kind)
        modules.add(entry["module"])
        (folder / f"{kind}.json").write_text(json.dumps(entry, separators=(",", ":")), encoding="utf-8")
    for module in sorted(modules):
        (folder / f"{module}.mjs").write_text(esm(module), encoding="utf-8")
    return sum(p.stat().st_size for p in folder.iterdir())


def panel(notebook: str, lesson_pages=None) -> str:
    """The live panel a lesson's page shows at its top ("type your own sentence here"), or "" for none.

    Each `data-bertlab-view` element becomes the notebook's view (its module, `views/<module>.mjs`) fed by the
    in-page model (`live-views.mjs`); without JavaScript, or opened as a file, the panel says why nothing
    runs."""
    views = LESSON_VIEWS.get(notebook, ())
    if not views:
        return ""
    items = "".join(
        f'<div class="live-view" data-bertlab-view="{v}" data-defaults="{html.escape(json.dumps(_DEFAULTS[v]))}">'
        f'<h3>{html.escape(_TITLES[v])}</h3><p class="live-status">Loading the model … (if this stays, the page '
        f'was opened as a file: the model needs the site served over http, see <a href="{PAGE}#hosting">what runs '
        f'where</a>)</p></div>' for v in views)
    return (f'<section class="live-model" aria-label="the model in this page"><h2>Type your own sentence here</h2>'
            f'<p>{MODEL_NAME} runs in this page: what you type is computed by your browser and never leaves your '
            f'machine (<a href="{PAGE}">what runs where</a>). The lesson below shows the same views on its own '
            f'examples.</p><noscript><p class="notice">The live model needs JavaScript.</p></noscript>{items}'
            f'</section>')


def scripts() -> str:
    """The tags a page with a live panel loads (module scripts: they run after the page is parsed)."""
    return (f'<link rel="stylesheet" href="{LIVE_DIR}/live.css">'
            f'<script type="module" src="{LIVE_DIR}/live-views.mjs"></script>')


def what_runs_where(sizes: dict | None = None) -> str:
    """The body of the book's page that says what runs where and how to host the site."""
    vendor = json.loads((_static() / "vendor" / "VENDOR.json").read_text(encoding="utf-8"))["packages"]
    ort, tok = vendor["onnxruntime-web"], vendor["@huggingface/tokenizers"]
    if sizes:
        size = (f"<p>In this build the model folder is {sizes['model'] / 1e6:.1f} MB and the runtime, tokenizer "
                f"and views {sizes['files'] / 1e6:.1f} MB, {(sizes['model'] + sizes['files']) / 1e6:.1f} MB "
                f"together.</p>")
    else:
        size = ""
    return f"""<article class="notebook"><div class="cell markdown">
<h1 id="what-runs-where">What runs where</h1>
<p>Every lesson page of this book is a plain file. The pages marked <b>Type your own sentence here</b> also
carry a small BERT, <code>{MODEL_NAME}</code>, which your browser runs itself.</p>
<h2 id="on-your-machine">On your machine, in this page</h2>
<ul>
<li><b>The tokenizer</b>: the model's own <code>tokenizer.json</code>, read by the tokenizers library's JavaScript
port (<code>@huggingface/tokenizers</code> {html.escape(tok['version'])}, {html.escape(tok['license'])}); the
test suite checks it gives bertlab's token ids on thousands of lines (English, Korean, accents, digits, odd
Unicode).</li>
<li><b>The model</b>: bertlab-mini exported to ONNX by <code>bertlab export --onnx</code> (weights stored as
float16, computed in float32), run by ONNX Runtime Web {html.escape(ort['version'])}
({html.escape(ort['license'])}) on its WebAssembly backend: one thread on a plain web server, several where
the host sends the cross-origin isolation headers.</li>
<li><b>The views</b>: the same view modules the lessons' notebooks use (controls and plotly figures, drawn by
the plotly.js shipped with this site), with the model in this page as their data source instead of a Python
kernel.</li>
</ul>
<p><b>Nothing you type leaves your machine.</b> The page loads only files of this site; there is no server-side
code, no analytics and no call to any other address. The test suite opens the pages with every request outside
the site refused.</p>
<h2 id="saved">Saved when the book was built</h2>
<p>Everything else on a lesson page (printed outputs, figures, attention views, pictures of widgets) was computed
when the lesson's notebook ran, and is shown as saved. To change those, run the lesson live (the box on each
page says how).</p>
{size}
<h2 id="hosting">Putting the book on a static host</h2>
<p>Copy the whole site folder as it is (for example to GitHub Pages, Netlify, an S3 bucket, or any web server).
The live model needs the pages served over <code>http://</code> or <code>https://</code>: a page opened as a
file (<code>file://</code>) shows everything else but cannot load the model, because browsers do not let a file
page fetch other files. On your own machine, <code>python -m http.server</code> in the site's folder is enough.</p>
<p>The server must send these types (most do by default; <code>.mjs</code> and <code>.wasm</code> are the ones
older servers miss):</p>
<table><thead><tr><th>files</th><th>Content-Type</th></tr></thead><tbody>
<tr><td><code>*.html</code></td><td><code>text/html</code></td></tr>
<tr><td><code>*.js</code>, <code>*.mjs</code></td><td><code>text/javascript</code> (module scripts are refused
with any other type)</td></tr>
<tr><td><code>*.wasm</code></td><td><code>application/wasm</code> (otherwise the runtime falls back to a slower
load, or fails)</td></tr>
<tr><td><code>*.json</code></td><td><code>application/json</code></td></tr>
<tr><td><code>*.onnx</code></td><td><code>application/octet-stream</code></td></tr>
<tr><td><code>*.css</code></td><td><code>text/css</code></td></tr>
</tbody></table>
<p>Optional: sending <code>Cross-Origin-Opener-Policy: same-origin</code> and
<code>Cross-Origin-Embedder-Policy: require-corp</code> lets the runtime use several threads.</p>
</div></article>"""
