"""A course someone else wrote, made to attack the book's readers: a notebook whose prose and stored outputs try
every way the last adversarial round found (issue 27, item 9) to run a script in the page or make the page ask
for something outside the site, beside the things the book must still show (a plotly figure, a widget's
picture, a bertviz view bertlab drew, maths).

Every attack that succeeds either sets `window.__pwned` (to a name saying which one), opens a dialog, or asks
for a URL at evil.example; tests/test_book_hostile.py checks the built HTML and
tests/browser/test_book_hostile_in_browser.py opens it in Chromium with the network cut.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

EVIL = "http://evil.example"


def pwn(name: str) -> str:
    return f"window.__pwned='{name}'"


MARKDOWN = [
    "# 00 · A lesson <img src=x onerror=\"" + pwn("title") + "\">\n\nProse with maths: $x_i^2 + \\frac{a}{b}$ and\n\n"
    "$$\\sum_{i=1}^{n} w_i$$\n\nand a link to [the next lesson](01_plain.ipynb).",
    "## Scripts\n\n<script>" + pwn("md-script") + "</script>\n\n<img src=x onerror=\"" + pwn("md-onerror") + "\">\n\n"
    "<svg><script>" + pwn("md-svg-script") + "</script></svg> <svg onload=\"" + pwn("md-svg-onload") + "\"></svg>\n\n"
    "<details open ontoggle=\"" + pwn("ontoggle") + "\"><summary>s</summary>d</details>\n\n"
    "<body onload=\"" + pwn("body-onload") + "\"> <div onmouseover=\"" + pwn("mouseover") + "\">hover me</div>",
    "## Links\n\n[click](javascript:" + pwn("md-js-link") + ") <a href=\"javascript:alert(1)\">a</a> "
    "<a href=\"JaVaScRiPt:alert(2)\">b</a> <a href=\"java&#x09;script:alert(3)\">c</a> "
    "<a href=\"data:text/html,<script>alert(4)</script>\">d</a> "
    "[ok](https://example.com/fine) [lesson](01_plain.ipynb#x\" onmouseover=\"" + pwn("href-break") + ")",
    "## Requests\n\n<iframe src=\"" + EVIL + "/iframe\"></iframe> <img src=\"" + EVIL + "/md.png\"> "
    "<img src=\"//evil.example/proto.png\"> <img srcset=\"" + EVIL + "/srcset.png 2x\"> "
    "<video src=\"" + EVIL + "/v.mp4\" autoplay></video> <audio src=\"" + EVIL + "/a.mp3\" autoplay></audio> "
    "<object data=\"" + EVIL + "/o\"></object> <embed src=\"" + EVIL + "/e\"> "
    "<link rel=stylesheet href=\"" + EVIL + "/l.css\"> <style>@import '" + EVIL + "/i.css'; "
    "body { background: url(" + EVIL + "/css.png) }</style> "
    "<div style=\"color: red; background-image: url(" + EVIL + "/style.png)\">styled</div> "
    "<meta http-equiv=\"refresh\" content=\"0;url=" + EVIL + "/refresh\"> <base href=\"" + EVIL + "/\"> "
    "<form action=\"" + EVIL + "/form\"><input name=q><button>go</button></form>\n\n"
    "![md image](" + EVIL + "/bang.png)",
    "## Mutation XSS\n\n<math><mtext><table><mglyph><style><img src=x onerror=\"" + pwn("mxss-math") + "\">"
    "</style></mglyph></table></mtext></math>\n\n<noscript><p title=\"</noscript><img src=x onerror="
    + pwn("mxss-noscript") + ">\"></p></noscript>\n\n<!-- <img src=x onerror=\"" + pwn("comment") + "\"> -->\n\n"
    "<h2 id=\"plotly-0\">a heading that takes a figure's id</h2> <p id=\"BOOK_INDEX\">clobber</p>",
    "## Maths that would fetch or link\n\n$\\href{javascript:alert(5)}{x}$ and $\\url{" + EVIL + "/katex}$ and "
    "$\\includegraphics{" + EVIL + "/katex.png}$",
]

# a figure bertlab would draw, then one built to break the page
FIGURE = {"data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2]}], "layout": {"title": {"text": "two bars"}}}
# laid out wider than any column: the page draws it at the column's width
WIDE_FIGURE = {"data": [{"type": "scatter", "x": [0, 1, 2], "y": [2, 0, 1]}],
               "layout": {"title": {"text": "wide"}, "width": 2400, "height": 300}}
HOSTILE_FIGURE = {
    "data": [{"type": "bar", "x": ["</script><script>" + pwn("plotly-close") + "</script>", "<!--<script>"],
              "y": [1, 2], "text": ["<img src=x onerror=" + pwn("plotly-text") + ">", "b"]},
             {"type": "scattergeo", "lat": [0], "lon": [0]}],
    "layout": {"title": {"text": "<!--<script> swallowed"},
               "images": [{"source": EVIL + "/layout.png", "x": 0, "y": 0, "sizex": 1, "sizey": 1}]},
    "config": {"topojsonURL": EVIL + "/topo/", "plotlyServerURL": EVIL},
}


def fake_bertviz() -> str:
    root = "bertviz-" + "0" * 32
    return (f'<div id="{root}"><span>Layer: <select id="layer"></select></span><div id=\'vis\'></div></div>\n'
            '<script type="text/javascript">\n(function () {\nconst params = {"root_div_id": "' + root + '"};\n'
            + pwn("fake-bertviz") + ";\n})();\n</script>\n")


def outputs(real_view: str | None) -> list:
    html = {"text/html": "<b>bold</b><script>" + pwn("html-output") + "</script><img src=x onerror=\""
            + pwn("html-onerror") + "\"><iframe src=\"" + EVIL + "/html-iframe\"></iframe>",
            "text/plain": "html"}
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" onload="' + pwn("svg-onload") + '">'
           '<script>' + pwn("svg-script") + '</script><image href="' + EVIL + '/svg-image.png" width="20" '
           'height="20"/><circle cx="10" cy="10" r="8" fill="teal"/></svg>')
    outs = [
        new_output("display_data", data=html),
        new_output("display_data", data={"image/svg+xml": svg, "text/plain": "svg"}),
        new_output("display_data", data={"text/markdown": "<img src=x onerror=\"" + pwn("markdown-output") + "\">",
                                         "text/plain": "md"}),
        new_output("display_data", data={"image/png": "AAAA\" onerror=\"" + pwn("png") + "\" x=\"",
                                         "text/plain": "png"}),
        new_output("display_data", data={"image/jpeg": "/9j/4AAQ", "text/plain": "jpeg"}),   # valid base64
        new_output("display_data", data={"application/vnd.plotly.v1+json": FIGURE, "text/plain": "fig"}),
        new_output("display_data", data={"application/vnd.plotly.v1+json": HOSTILE_FIGURE, "text/plain": "fig"}),
        new_output("display_data", data={"application/vnd.plotly.v1+json": WIDE_FIGURE, "text/plain": "wide"}),
        new_output("display_data", data={"text/html": fake_bertviz(), "text/plain": "view"}),
        new_output("stream", name="stdout", text="</pre><script>" + pwn("stream") + "</script>"),
        new_output("error", ename="E", evalue="v", traceback=["<img src=x onerror=\"" + pwn("traceback") + "\">"]),
        new_output("execute_result", data={"text/plain": "</pre><script>" + pwn("plain") + "</script>"},
                   execution_count=1),
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "w-box",
                                                                                       "version_major": 2,
                                                                                       "version_minor": 0},
                                         "text/plain": "VBox()"}),
    ]
    if real_view is not None:
        outs.append(new_output("display_data", data={"text/html": real_view, "text/plain": "head view"}))
    return outs


def widget_state() -> dict:
    """A VBox holding an HTML widget, a label, a slider with a hostile description and an Output area that
    holds a plotly figure (a widget's picture, as bertlab's widgets leave it) and a script."""
    def model(name: str, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
                "state": {"_model_name": name, **state}}
    return {"state": {
        "w-box": model("VBoxModel", children=["IPY_MODEL_w-html", "IPY_MODEL_w-label", "IPY_MODEL_w-slider",
                                              "IPY_MODEL_w-out"]),
        "w-html": model("HTMLModel", value="<i>kept</i><img src=x onerror=\"" + pwn("widget-html") + "\">"
                                           "<script>" + pwn("widget-script") + "</script>"),
        "w-label": model("LabelModel", value="<script>" + pwn("widget-label") + "</script>"),
        "w-slider": model("IntSliderModel", value=3, description="\"><script>" + pwn("widget-desc") + "</script>"),
        "w-out": {"model_name": "OutputModel", "model_module": "@jupyter-widgets/output",
                  "model_module_version": "1.0.0", "state": {"_model_name": "OutputModel", "outputs": [
                      {"output_type": "display_data", "metadata": {},
                       "data": {"application/vnd.plotly.v1+json": FIGURE, "text/plain": "fig"}},
                      {"output_type": "display_data", "metadata": {},
                       "data": {"text/html": "<script>" + pwn("widget-output") + "</script>"}}]}},
    }, "version_major": 2, "version_minor": 0}


def real_head_view() -> str | None:
    """A head view as bertlab draws it (on bertlab-tiny), or None without bertviz."""
    try:
        from bertlab import load
        from bertlab.viz.bertviz_views import head_view_html
    except ImportError:
        return None
    model, tokenizer = load("bertlab-tiny", device="cpu")
    try:
        return head_view_html(model, tokenizer, "The </script><!--<script> bank", "It rained.")
    except ImportError:
        return None


def make_hostile_course(root: Path) -> Path:
    """notebooks/00_hostile.ipynb (everything above) and 01_plain.ipynb (a lesson to link to) under `root`."""
    (root / "notebooks").mkdir(parents=True)
    cells = [new_markdown_cell(m) for m in MARKDOWN]
    cells.append(new_code_cell("# NBVAL_CHECK_OUTPUT\nshow_everything()", execution_count=1,
                               outputs=outputs(real_head_view())))
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "widgets": {"application/vnd.jupyter.widget-state+json": widget_state()}})
    nbformat.write(nb, root / "notebooks" / "00_hostile.ipynb")
    plain = new_notebook(cells=[new_markdown_cell("# 01 · Plain\n\n## x\n\nNothing here.")])
    nbformat.write(plain, root / "notebooks" / "01_plain.ipynb")
    (root / "README.md").write_text("# hostile\n")
    return root


# the name of every attack that would set window.__pwned
ATTACKS = sorted({part.split("'")[1] for part in json.dumps([MARKDOWN, outputs(None), widget_state()])
                  .split("window.__pwned=")[1:]})
