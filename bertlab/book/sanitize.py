"""What the book did not write is made safe before it goes into a page.

The book renders notebooks that may come from anyone (`--repo`, `--reuse`, `--no-execute` on a folder someone
sent): their prose, and the HTML, SVG, markdown, images and figures their outputs hold. A page of the book is
opened by readers who trust it, so nothing from a notebook may run a script there, load anything from outside
the site, or break out of the element it is put in. As JupyterLab does for untrusted notebooks:

- HTML (markdown cells after mistune, `text/html` and `text/markdown` outputs, widgets' HTML) goes through
  nh3, the Python binding of Ammonia (a maintained Rust sanitizer: an allowlist of tags and attributes, URLs
  limited to safe schemes, comments dropped). No `<script>`, `<style>`, `<iframe>`, `<object>`, `<form>`,
  `on*` handler or `javascript:` link survives; `style` keeps its declarations minus any that could load
  something (`url(`, `image-set(`, `@import`, `expression(`); an `<img>` may show only inline data or a file
  beside the page, never a URL elsewhere; ids that the book's own scripts use are dropped.
- SVG (`image/svg+xml`) is shown as `<img src="data:image/svg+xml;base64,…">`: an SVG in an image runs no
  script and loads nothing, by the browsers' own rules.
- PNG and JPEG payloads must be base64 and nothing else, so they cannot leave `src="…"`.
- JSON put inside `<script type="application/json">` (plotly figures) escapes every `<`, `>` and `&`, so no
  `</script>`, `<!--` or `<script` in a string can end or change the script element.
- plotly figures keep their data and layout; their `config` keeps only display switches (no URLs: plotly's
  `topojsonURL` and friends fetch), layout images must be inline data, and trace types that fetch map tiles
  or topojson from a CDN are left out with a note.
- bertviz's attention views carry a script, which is the point of them. One is kept only when its code is
  exactly the code bertlab's own `head_view_html`, `model_view_html` or `neuron_view_html` writes (compared
  with views bertlab draws now, on bertlab-tiny); its data is parsed and written again by the book, its
  container sanitized like any HTML. Any other script is dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import re
from functools import lru_cache
from urllib.parse import unquote

import nh3

__all__ = ["clean_html", "image_src", "svg_img", "script_json", "clean_plotly", "bertviz_view"]

# HTML that prose and outputs may use: nh3's defaults (Ammonia's list) plus what notebooks and bertlab's
# own outputs write (a menu in a bertviz view's container, <details>)
TAGS = set(nh3.ALLOWED_TAGS) | {"select", "option", "label", "section"}
GENERIC = {"id", "class", "title", "style", "align", "lang", "dir", "role", "aria-label", "aria-hidden",
           "colspan", "rowspan", "width", "height"}
ATTRIBUTES = {tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()}
ATTRIBUTES["*"] = GENERIC
ATTRIBUTES.setdefault("a", set()).update({"href", "name"})
ATTRIBUTES.setdefault("img", set()).update({"src", "alt"})
ATTRIBUTES["option"] = {"value", "selected"}
ATTRIBUTES["details"] = {"open"}
ATTRIBUTES["ol"] = {"start", "type"}
URL_SCHEMES = {"http", "https", "mailto", "data"}      # data: for inline images only (see _attribute)

# ids the book's own pages and scripts look up: a notebook's element with one of them would take its place
RESERVED_ID = re.compile(r"^(plotly-|run-live$|search-|book-|BOOK_)", re.I)
# CSS that can make a request or run code: dropped from style attributes, declaration by declaration
CSS_FETCH = re.compile(r"url\s*\(|image-set\s*\(|@import|expression\s*\(|javascript:|behavior\s*:|-moz-binding",
                       re.I)
IMAGE_DATA = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]*={0,2})$")
B64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def _style(value: str) -> str | None:
    kept = [d.strip() for d in value.split(";") if d.strip() and not CSS_FETCH.search(d)]
    return "; ".join(kept) or None


def _relative_file(url: str) -> bool:
    """A path beside the page (figures/x.png), not a URL elsewhere: no scheme, no //host, no backslash, and
    not above the site's folder (../../etc/passwd: a request outside the site when the book opens from disk;
    %2e%2e is .. to a browser too)."""
    if re.match(r"^\s*([a-z][a-z0-9+.-]*:|//|/)", url, re.I) or "\\" in url:
        return False
    path = posixpath.normpath(unquote(re.split(r"[?#]", url.strip(), maxsplit=1)[0]) or ".")
    return path != ".." and not path.startswith("../")


def _attribute(element: str, attribute: str, value: str) -> str | None:
    """nh3's per-attribute filter: what its allowlist cannot say by tag and attribute name alone."""
    if attribute == "style":
        return _style(value)
    if attribute == "id" and RESERVED_ID.match(value):
        return None
    if element == "img" and attribute == "src":
        # an image loads its src as the page opens: inline data (valid base64) or a file of the site only
        src = "".join(value.split())
        if src.lower().startswith("data:"):
            return src if IMAGE_DATA.match(src) else None
        return value if _relative_file(value) else None
    if attribute == "href" and value.strip().lower().startswith("data:"):
        return None                                   # a link to a data: page is a page the book did not check
    return value


def clean_html(markup: str) -> str:
    """HTML from a notebook, sanitized: what JupyterLab would show of an untrusted notebook's HTML."""
    return nh3.clean(str(markup), tags=TAGS, clean_content_tags={"script", "style", "template", "noscript"},
                     attributes=ATTRIBUTES, attribute_filter=_attribute, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer")


def image_src(mime: str, payload) -> str | None:
    """`data:MIME;base64,…` for a PNG or JPEG output, or None when the payload is not base64 (it would
    otherwise be written into the page's HTML as it stands)."""
    text = "".join(payload) if isinstance(payload, list) else payload
    if not isinstance(text, str):
        return None
    text = "".join(text.split())
    if not text or not B64.match(text) or len(text) % 4:
        return None
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return f"data:{mime};base64,{text}"


def svg_img(svg) -> str:
    """An SVG output as an <img>: drawn by the browser as an image, so it runs no script and loads nothing."""
    text = "".join(svg) if isinstance(svg, list) else str(svg)
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f'<img alt="figure" src="data:image/svg+xml;base64,{data}">'


def script_json(value) -> str:
    """JSON to put inside a <script> element: `<`, `>` and `&` as \\u escapes (JSON.parse reads them back), so
    no string can close the element (`</script>`), open a comment (`<!--`) or a nested script (`<script`);
    U+2028/2029 escaped too, for older JavaScript parsers."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


# ---- plotly -------------------------------------------------------------------------------------------------

# config keys that only change how the figure is shown; anything else (topojsonURL, plotlyServerURL, locales,
# setBackground functions) is dropped
PLOTLY_CONFIG = {"displayModeBar", "displaylogo", "responsive", "scrollZoom", "staticPlot", "showTips",
                 "doubleClick", "modeBarButtonsToRemove", "showAxisDragHandles", "editable", "autosizable"}
# trace types that fetch from the internet as they draw (map tiles, topojson from plotly's CDN)
FETCHING_TRACES = {"scattergeo", "choropleth", "scattermapbox", "choroplethmapbox", "densitymapbox",
                   "scattermap", "choroplethmap", "densitymap"}


def clean_plotly(figure) -> tuple[dict, list[str]]:
    """A plotly figure as the book may draw it, and notes on what was left out (empty for bertlab's own)."""
    notes = []
    if not isinstance(figure, dict):
        return {"data": [], "layout": {}}, ["the figure's data is not a plotly figure (not a JSON object)"]
    data = [t for t in figure.get("data") or [] if isinstance(t, dict)]
    kept = [t for t in data if str(t.get("type", "")).lower() not in FETCHING_TRACES]
    if len(kept) < len(data):
        notes.append(f"{len(data) - len(kept)} map trace(s) left out: they fetch map data from the internet")
    layout = figure.get("layout") if isinstance(figure.get("layout"), dict) else {}
    layout = dict(layout)
    for key in ("mapbox", "map", "geo"):
        layout.pop(key, None)
    images = layout.get("images")
    if isinstance(images, list):
        safe = [im for im in images if isinstance(im, dict) and isinstance(im.get("source"), str)
                and IMAGE_DATA.match("".join(im["source"].split()))]
        if len(safe) < len(images):
            notes.append(f"{len(images) - len(safe)} layout image(s) left out: only inline image data is shown")
        layout["images"] = safe
    elif images is not None:
        layout.pop("images")
    config = figure.get("config") if isinstance(figure.get("config"), dict) else {}
    config = {k: v for k, v in config.items() if k in PLOTLY_CONFIG and isinstance(v, (bool, int, float, str, list))}
    return {"data": kept, "layout": layout, "config": config}, notes


# ---- bertviz's views ------------------------------------------------------------------------------------

_SCRIPT_OPEN = '\n<script type="text/javascript">\n'
_PARAMS = "const params = "
_ROOT = re.compile(r"bertviz-[0-9a-f]{32}")


def _split_view(markup: str):
    """(container, code before the data, data, code after) of a bertlab bertviz view, or None."""
    at = markup.find(_SCRIPT_OPEN)
    if at < 0 or not markup.endswith("\n</script>\n"):
        return None
    container, script = markup[:at], markup[at + len(_SCRIPT_OPEN): -len("\n</script>\n")]
    start = script.find(_PARAMS)
    if start < 0 or script.count(_PARAMS) != 1:
        return None
    start += len(_PARAMS)
    try:
        params, stop = json.JSONDecoder().raw_decode(script, start)
    except ValueError:
        return None
    return container, script[:start], params, script[stop:]


def _skeleton(code: str, root: str) -> str:
    return code.replace(json.dumps(root), '"@ROOT@"')


@lru_cache(maxsize=1)
def _trusted_code() -> frozenset:
    """The code of each kind of view bertlab writes (the data left out), drawn now on bertlab-tiny."""
    try:
        from ..checkpoint import load
        from ..viz.bertviz_views import head_view_html, model_view_html
        from ..viz.neuron_view import neuron_view_html

        model, tokenizer = load("bertlab-tiny", device="cpu")
        views = [head_view_html(model, tokenizer, "a b", "c d"), model_view_html(model, tokenizer, "a b"),
                 neuron_view_html(model, tokenizer, "a b"), neuron_view_html(model, tokenizer, "a b", text_pair="c")]
    except Exception:       # noqa: BLE001 -- no bertviz (or no model): no view is trusted, each is sanitized
        return frozenset()
    known = set()
    for markup in views:
        parts = _split_view(markup)
        if parts:
            known.add((_skeleton(parts[1], parts[2]["root_div_id"]), _skeleton(parts[3], parts[2]["root_div_id"])))
    return frozenset(known)


def bertviz_view(markup: str) -> str | None:
    """A bertviz view bertlab wrote, rebuilt from its parts (code checked, data re-serialized, container
    sanitized), or None when the HTML is not one: the caller then sanitizes it like any HTML."""
    if "bertviz-" not in markup:
        return None
    parts = _split_view(markup)
    if parts is None:
        return None
    container, before, params, after = parts
    root = params.get("root_div_id") if isinstance(params, dict) else None
    if not isinstance(root, str) or not _ROOT.fullmatch(root):
        return None
    if (_skeleton(before, root), _skeleton(after, root)) not in _trusted_code():
        return None
    if f'id="{root}"' not in container:
        return None
    try:
        data = script_json(params)
    except ValueError:                                   # NaN or Infinity in the data: not bertlab's
        return None
    safe_container = nh3.clean(container, tags={"div", "span", "select", "option"},
                               attributes={"div": {"id", "style"}, "span": {"style", "class"},
                                           "select": {"id"}, "option": {"value"}},
                               attribute_filter=_view_attribute, url_schemes=set())
    return safe_container + _SCRIPT_OPEN + before + data + after + "\n</script>\n"


def _view_attribute(element: str, attribute: str, value: str) -> str | None:
    if attribute == "style":
        return _style(value)
    return value



# ---- bertlab's views (viz.views), saved in a notebook's widget state --------------------------------------

def _clean_pane(pane):
    """A view's pane as saved: its HTML through the allowlist (a bertviz frame stays sandboxed), its figure
    through clean_plotly."""
    if not isinstance(pane, dict):
        return pane
    pane = dict(pane)
    if isinstance(pane.get("html"), str) and not pane.get("frame"):
        pane["html"] = clean_html(pane["html"])
    if "figure" in pane:
        pane["figure"] = clean_plotly(pane["figure"])[0]
    return pane


def trusted_view(entry: dict) -> dict | None:
    """A saved bertlab view as the book may run it, or None for a view module this bertlab does not have.

    The saved state carries the view's ES module (`_esm`) and whatever HTML and figures the notebook left in it:
    all of that came from the notebook, so none of it is trusted. The page runs the module this package ships
    under the view's name instead, HTML nodes and panes go through the same allowlist as the notebooks' HTML,
    figures through `clean_plotly`, and a plotly.js the state might carry is dropped (the page loads the book's).
    A bertviz pane stays in its sandboxed frame (scripts run in an opaque origin, under the page's policy)."""
    from ..viz.views.base import esm

    state = entry.get("state") if isinstance(entry.get("state"), dict) else {}
    module = state.get("module", "view")
    if not isinstance(module, str) or module in ("runtime", "page"):
        return None
    try:
        code = esm(module)
    except ValueError:
        return None
    nodes = {}
    for key, node in (state.get("nodes") or {}).items():
        if isinstance(node, dict) and isinstance(node.get("value"), str) and node.get("kind") == "html":
            node = dict(node, value=clean_html(node["value"]))
        nodes[key] = node
    content = {key: _clean_pane(pane) for key, pane in (state.get("content") or {}).items()}
    data = state.get("data")
    if isinstance(data, dict) and isinstance(data.get("answers"), dict):
        # interact's saved answers (viz/views/interact.py) are panes and HTML nodes too: cleaned the same way
        answers = {}
        for key, answer in data["answers"].items():
            if isinstance(answer, dict):
                panes = answer.get("content") if isinstance(answer.get("content"), dict) else {}
                patches = answer.get("nodes") if isinstance(answer.get("nodes"), dict) else {}
                answers[key] = {"content": {k: _clean_pane(p) for k, p in panes.items()},
                                "nodes": {k: {"value": clean_html(p["value"])} for k, p in patches.items()
                                          if isinstance(p, dict) and isinstance(p.get("value"), str)
                                          and nodes.get(k, {}).get("kind") == "html"}}
        data = dict(data, answers=answers)
    state = dict(state, _esm=code, nodes=nodes, content=content, plotly_js="", module=module,
                 **({"data": data} if data is not None else {}))
    buffers = [b for b in entry.get("buffers") or []
               if isinstance(b, dict) and isinstance(b.get("path"), list) and b["path"][:1] != ["plotly_js"]]
    return dict(entry, state=state, buffers=buffers)
