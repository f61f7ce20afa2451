"""Export any figure for a paper or a slide: SVG, PNG or a standalone HTML page, all offline.

    from bertlab.viz import attention_heatmap, export
    fig = attention_heatmap(out, enc.tokens, layer=1, head=0)
    export(fig, "figures/head-1-0.svg")                  # vector, for LaTeX (via svg or inkscape → pdf)
    export(fig, "figures/head-1-0.png", scale=3)         # a bitmap at 3× the figure's pixel size
    export(fig, "figures/head-1-0.html")                 # interactive, opens anywhere without a network

Why kaleido and a local Chrome: plotly draws in a browser, so a faithful SVG or PNG needs one. kaleido 1.x
drives a Chrome or Chromium already installed (found on PATH, or at `BROWSER_PATH`) and renders the plotly.js
that ships inside the plotly package, with MathJax off, so nothing is fetched from the network. bertlab
never downloads a browser: without one, SVG and PNG export fail with a message that says how to install it,
while HTML export needs no browser at all (plotly.js is written into the page, about 4.5 MB).
"""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go

__all__ = ["export", "find_chromium", "FORMATS"]

FORMATS = ("svg", "png", "html")
NO_BROWSER = ("SVG and PNG export need Chrome or Chromium, and none was found on PATH: install one (Debian/Ubuntu: "
              "apt-get install chromium) or set BROWSER_PATH to its executable; bertlab never downloads a "
              "browser. HTML export (a .html path) works without one.")


def find_chromium() -> str | None:
    """The Chrome/Chromium kaleido would use, or None: a copy fetched earlier with kaleido's `get_chrome`,
    else BROWSER_PATH, else PATH and the usual install places. bertlab itself never fetches one.
    """
    from choreographer.browsers.chromium import Chromium
    path = Chromium.find_browser(skip_local=False)       # BROWSER_PATH wins over PATH, even when it names nothing
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def _no_browser() -> str:
    wrong = os.environ.get("BROWSER_PATH")
    if wrong and not (os.path.isfile(wrong) and os.access(wrong, os.X_OK)):
        return f"BROWSER_PATH is {wrong!r}, which is not an executable file. {NO_BROWSER}"
    return NO_BROWSER


def _format(path: Path, format: str | None) -> str:
    if format is None:
        suffix = path.suffix.lower().lstrip(".")
        if not suffix:
            raise ValueError(f"{path} has no suffix to tell the format: end it in .svg, .png or .html, "
                             "or pass format=")
        format = "html" if suffix == "htm" else suffix
    format = str(format).lower().lstrip(".")
    if format not in FORMATS:
        raise ValueError(f"cannot export to {format!r} ({path.name}): use one of .svg (vector, for papers), "
                         ".png (bitmap) or .html (interactive, offline)")
    return format


def _size(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{name} must be a positive number of pixels, got {value!r}")
    return int(value)


def export(fig: go.Figure, path, format: str | None = None, width: int | None = None, height: int | None = None,
           scale: float = 1) -> Path:
    """Write `fig` to `path` as SVG, PNG or standalone HTML, the format taken from the suffix unless given.

    `width` and `height` (pixels) default to the figure's own layout size (plotly's 700 × 500 when it has
    none); `scale` multiplies the pixels of a PNG (3 for print) and is ignored by SVG and HTML. The folder
    must exist: a typo in a path should not quietly create a new tree. Returns the path written.
    """
    if not isinstance(fig, go.Figure):
        raise ValueError(f"export takes a plotly go.Figure (what bertlab.viz's figure functions return), "
                         f"got {type(fig).__name__}")
    path = Path(path)
    format = _format(path, format)
    width, height = _size(width, "width"), _size(height, "height")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"folder {path.parent} does not exist: create it first "
                                f"(Path({str(path.parent)!r}).mkdir(parents=True)) or pick another path")

    if format == "html":
        # plotly.js inlined, so the page opens offline and never asks a CDN; sizes go into the layout
        sized = go.Figure(fig).update_layout(**{k: v for k, v in (("width", width), ("height", height)) if v})
        sized.write_html(path, include_plotlyjs=True, include_mathjax=False, full_html=True,
                         config={"displaylogo": False})
        return path

    import kaleido
    from kaleido.errors import ChromeNotFoundError

    if find_chromium() is None:
        raise RuntimeError(_no_browser())
    opts = dict(format=format, width=width or fig.layout.width, height=height or fig.layout.height,
                scale=scale if format == "png" else 1)
    try:
        data = kaleido.calc_fig_sync(fig, opts=opts, kopts={"mathjax": False})
    except ChromeNotFoundError as err:
        raise RuntimeError(_no_browser()) from err
    path.write_bytes(data)
    return path
