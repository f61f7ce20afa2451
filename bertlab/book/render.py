"""One executed notebook → the HTML of its cells, as a reader sees them in JupyterLab, with no kernel.

- prose: Markdown (nbconvert's renderer); links to another lesson's .ipynb point at its page;
- code: highlighted by Pygments;
- outputs: printed text, errors, images, HTML (bertviz's attention views are self-contained HTML with their
  scripts inside, bertlab.viz.bertviz_views), and plotly figures, which are drawn from their JSON
  (`application/vnd.plotly.v1+json`) by the plotly.js shipped with the site, never from a CDN;
- everything a notebook brought (prose, HTML, SVG, markdown, images, figures, widgets' HTML) is sanitized
  first (sanitize.py): the notebook may be someone else's;
- widgets: ipywidgets need a kernel, so a widget is shown as its current picture, read from the widget state
  the notebook's run stored in its metadata: its controls as they were set, its labels and HTML, and the
  outputs of its Output areas, where bertlab's widgets put their figures (viz.widgets.base.show_figure puts
  a plotly mime bundle there), drawn like any other output; and one line saying how to run it live.
"""

from __future__ import annotations

import html
import re
from itertools import count

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from ..viz.views.page import embed, is_view
from .sanitize import bertviz_view, clean_html, clean_plotly, image_src, script_json, svg_img, trusted_view

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# LaTeX in prose, as JupyterLab finds it: $…$, $$…$$, \(…\), \[…\] (drawn in the page by the vendored KaTeX)
MATHS = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)
# the most widget models one widget's picture draws (bertlab's largest uses about 60)
MAX_WIDGET_MODELS = 2000
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_FORMATTER = HtmlFormatter(nowrap=True)


def pygments_css() -> str:
    return HtmlFormatter().get_style_defs(".code pre")


def _text(value) -> str:
    return "".join(str(v) for v in value) if isinstance(value, list) else str(value or "")


def _attachments(value) -> dict[str, dict[str, str]]:
    """A markdown cell's `attachments` ({name: {mime: base64}}, each payload a string or a list of lines), the
    well-formed ones only: a notebook someone else wrote may hold anything there."""
    if not isinstance(value, dict):
        return {}
    return {name: {mime: _text(data) for mime, data in bundle.items() if isinstance(mime, str)}
            for name, bundle in value.items() if isinstance(name, str) and isinstance(bundle, dict) and bundle}


def markdown(source: str, lesson_pages: dict[str, str], attachments=None) -> str:
    """Markdown → sanitized HTML (mistune passes raw HTML through; nh3 then keeps only what is safe), with
    links to a lesson's notebook pointing at its page. Maths ($…$) stays as text for the page's KaTeX.
    `attachments`: the cell's own (an image pasted into a markdown cell, `![](attachment:name)`); a name the
    cell does not carry is shown as an empty image, as JupyterLab does, not an error that stops the build."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    class Renderer(IPythonRenderer):
        def _embed_image_or_attachment(self, src: str) -> str:
            if src.startswith("attachment:") and src[len("attachment:"):] not in self.attachments:
                return "#missing-attachment"
            return super()._embed_image_or_attachment(src)

    renderer = Renderer(escape=False, attachments=_attachments(attachments))
    out = clean_html(MarkdownWithMath(renderer=renderer).render(_text(source)))

    def link(m):
        target, anchor = m.group(2), m.group(3) or ""
        name = target.rsplit("/", 1)[-1]
        return f'{m.group(1)}"{lesson_pages[name]}{anchor}"' if name in lesson_pages else m.group(0)
    # [04](04_masked_lm.ipynb#section) → the lesson's page in the book
    return re.sub(r'(href=)"([^"#]+\.ipynb)(#[^"]*)?"', link, out)


def code(source: str) -> str:
    return highlight(source, PythonLexer(), _FORMATTER)


# nbval's markers (`# NBVAL_CHECK_OUTPUT`, `# NBVAL_SKIP`, …) are test plumbing, not the lesson
_NBVAL_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*(\n|$)", re.M)


def without_test_markers(source: str) -> str:
    """A code cell's source as the reader sees it: without its nbval marker lines."""
    return _NBVAL_MARKER.sub("", source)


class Renderer:
    """Renders the cells of one notebook; `widgets` is its stored widget state (model id → model)."""

    def __init__(self, nb, lesson_pages: dict[str, str], live_line: str):
        self.lesson_pages = lesson_pages
        self.live_line = live_line
        widgets = nb.metadata.get("widgets")
        state = widgets.get(WIDGET_STATE) if isinstance(widgets, dict) else None
        models = state.get("state") if isinstance(state, dict) else None
        self.widgets = {k: v for k, v in models.items() if isinstance(v, dict)} if isinstance(models, dict) else {}
        self._ids = count()
        self.counts = {"plotly": 0, "widgets": 0, "widgets_without_state": 0, "attention_views": 0, "maths": 0}

    # ---- cells ------------------------------------------------------------------------------------------

    def cell(self, cell) -> str:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags:
            return ""
        if cell.cell_type == "markdown":
            if MATHS.search(_text(cell.source)):
                self.counts["maths"] += 1
            return f'<div class="cell markdown">{markdown(cell.source, self.lesson_pages, cell.get("attachments"))}</div>'
        if cell.cell_type != "code":
            return ""
        parts = []
        source = without_test_markers(_text(cell.source))
        if "remove-input" not in tags and source.strip():
            n = cell.get("execution_count")
            n = n if isinstance(n, int) and not isinstance(n, bool) else " "
            prompt = f'<span class="prompt">[{n}]</span>'
            parts.append(f'<div class="code">{prompt}<pre>{code(source)}</pre></div>')
        outs = "".join(self.output(o) for o in cell.get("outputs", []) if "remove-output" not in tags)
        if outs:
            parts.append(f'<div class="outputs">{outs}</div>')
        return f'<div class="cell code-cell">{"".join(parts)}</div>' if parts else ""

    # ---- outputs ----------------------------------------------------------------------------------------

    def output(self, out) -> str:
        if not isinstance(out, dict):
            return ""
        kind = out.get("output_type")
        if kind == "stream":
            text = ANSI.sub("", _text(out.get("text")))
            name = out.get("name") if out.get("name") in ("stdout", "stderr") else ""
            return f'<pre class="output stream {name}">{html.escape(text)}</pre>'
        if kind == "error":
            tb = out.get("traceback")
            tb = "\n".join(str(t) for t in tb) if isinstance(tb, list) else ""
            tb = ANSI.sub("", tb or f"{out.get('ename')}: {out.get('evalue')}")
            return f'<pre class="output error">{html.escape(tb)}</pre>'
        if kind in ("display_data", "execute_result") and isinstance(out.get("data"), dict):
            return self.bundle(out["data"])
        return ""

    def bundle(self, data) -> str:
        if isinstance(data.get(WIDGET_MIME), dict):
            model_id = data[WIDGET_MIME].get("model_id")
            return self.widget(model_id if isinstance(model_id, str) else None, data)
        if PLOTLY_MIME in data:
            return self.plotly(data[PLOTLY_MIME])
        if "text/html" in data:
            markup = _text(data["text/html"])
            view = bertviz_view(markup)
            if view is not None:                   # bertlab's own attention view: its script checked, kept
                self.counts["attention_views"] += 1
                return f'<div class="output html">{view}</div>'
            return f'<div class="output html">{clean_html(markup)}</div>'
        for mime in ("image/png", "image/jpeg"):
            if mime in data:
                src = image_src(mime, data[mime])
                if src is None:
                    return '<p class="output notice">(an image output whose data is not base64 is left out)</p>'
                return f'<div class="output image"><img alt="figure" src="{src}"></div>'
        if "image/svg+xml" in data:
            return f'<div class="output image">{svg_img(data["image/svg+xml"])}</div>'
        if "text/markdown" in data:
            if MATHS.search(_text(data["text/markdown"])):
                self.counts["maths"] += 1
            return f'<div class="output markdown">{markdown(_text(data["text/markdown"]), self.lesson_pages)}</div>'
        if "text/plain" in data:
            return f'<pre class="output text">{html.escape(ANSI.sub("", _text(data["text/plain"])))}</pre>'
        return ""

    def plotly(self, figure) -> str:
        """A placeholder the site's script draws with Plotly.newPlot, the figure's JSON beside it."""
        figure, notes = clean_plotly(figure)
        try:
            payload = script_json(figure)
        except (TypeError, ValueError):                  # NaN / Infinity, or not JSON at all: plotly.js cannot draw it
            return '<p class="output notice">(a plotly figure whose data is not valid JSON is left out)</p>'
        self.counts["plotly"] += 1
        fid = f"plotly-{next(self._ids)}"
        title = html.escape(_plotly_title(figure), quote=True)
        note = "".join(f'<p class="small">({html.escape(n)})</p>' for n in notes)
        return (f'<div class="output plotly-output"><div class="plotly-figure" id="{fid}" aria-label="{title}"></div>'
                f'<script type="application/json" class="plotly-data" data-for="{fid}">{payload}</script>{note}</div>')

    # ---- widgets ----------------------------------------------------------------------------------------

    def widget(self, model_id: str | None, data) -> str:
        self.counts["widgets"] += 1
        if not model_id or model_id not in self.widgets:
            self.counts["widgets_without_state"] += 1
            plain = html.escape(_text(data.get("text/plain", "")))
            body = f'<pre class="output text">{plain}</pre>' if plain.strip() else ""
            return (f'<div class="output widget-snapshot">{body}<p class="live-note">{self.live_line} '
                    "(this widget's state was not saved when the notebook ran, so there is no picture of it)</p></div>")
        self._budget = MAX_WIDGET_MODELS
        inner = self.model(model_id, depth=0)
        return (f'<div class="output widget-snapshot"><div class="widget-picture">{inner}</div>'
                f'<p class="live-note">{self.live_line}</p></div>')

    def model(self, model_id: str, depth: int) -> str:
        """A widget model as a static picture: boxes lay their children out, Output areas show their outputs,
        controls show their description and value, labels and HTML their text."""
        self._budget -= 1                           # a state whose boxes hold themselves draws once, not forever
        if depth > 30 or self._budget < 0 or model_id not in self.widgets:
            return ""
        entry = self.widgets[model_id]
        s = entry.get("state") if isinstance(entry.get("state"), dict) else {}
        name = entry.get("model_name", "")
        if is_view(entry):                  # a bertlab view: live on the page over its saved state, no kernel
            view = trusted_view(entry)      # the package's own module and cleaned HTML, never the notebook's code
            if view is None:
                return ('<p class="w-note">A view whose module this bertlab does not have: it is shown only when '
                        'the lesson runs live.</p>')
            self._views = getattr(self, "_views", 0) + 1
            return embed(view, first=self._views == 1)
        if s.get("layout") and self._hidden(s["layout"]):
            return ""
        children = s.get("children") if isinstance(s.get("children"), list) else []
        children = [c[len("IPY_MODEL_"):] for c in children if isinstance(c, str)]
        if name in ("HBoxModel", "GridBoxModel"):
            return '<div class="w-hbox">' + "".join(self.model(c, depth + 1) for c in children) + "</div>"
        if name in ("VBoxModel", "BoxModel", "AccordionModel", "TabModel", "StackModel"):
            titles = _list(s.get("titles") or s.get("_titles"))
            shown = children
            if name in ("TabModel", "StackModel", "AccordionModel") and isinstance(s.get("selected_index"), int):
                shown = children[s["selected_index"]: s["selected_index"] + 1]
            head = ""
            if titles and name == "TabModel":
                sel = s.get("selected_index")
                head = '<div class="w-tabs">' + "".join(
                    f'<span class="w-tab{" on" if i == sel else ""}">{html.escape(str(t))}</span>'
                    for i, t in enumerate(titles)) + "</div>"
            return f'<div class="w-vbox">{head}' + "".join(self.model(c, depth + 1) for c in shown) + "</div>"
        if name == "OutputModel":
            outputs = s.get("outputs") if isinstance(s.get("outputs"), list) else []
            return '<div class="w-output">' + "".join(self.output(o) for o in outputs) + "</div>"
        if name in ("HTMLModel", "HTMLMathModel"):
            return f'<div class="w-html">{clean_html(_text(s.get("value", "")))}</div>'
        if name == "LabelModel":
            return f'<span class="w-label">{html.escape(str(s.get("value", "")))}</span>'
        if name in ("ImageModel",):
            return ""
        desc = html.escape(str(s.get("description", "")))
        label = f'<span class="w-desc">{desc}</span>' if desc and name not in ("ButtonModel", "ToggleButtonModel") else ""
        if name in ("ButtonModel",):
            return f'<span class="w-button">{desc or html.escape(str(s.get("icon", "")))}</span>'
        if name in ("ToggleButtonModel", "CheckboxModel"):
            on = "on" if s.get("value") else ""
            return f'<span class="w-button {on}">{desc}{" ✓" if name == "CheckboxModel" and on else ""}</span>'
        if name in ("ToggleButtonsModel", "RadioButtonsModel"):
            labels, index = _list(s.get("_options_labels")), s.get("index")
            opts = "".join(f'<span class="w-button{" on" if i == index else ""}">{html.escape(str(t))}</span>'
                           for i, t in enumerate(labels))
            return f'<span class="w-control">{label}{opts}</span>'
        if name in ("DropdownModel", "SelectModel"):
            labels, index = _list(s.get("_options_labels")), s.get("index")
            value = labels[index] if isinstance(index, int) and 0 <= index < len(labels) else ""
            return f'<span class="w-control">{label}<span class="w-value">{html.escape(str(value))} ▾</span></span>'
        if name in ("SelectMultipleModel", "SelectionRangeSliderModel", "SelectionSliderModel"):
            labels, index = _list(s.get("_options_labels")), s.get("index")
            idx = index if isinstance(index, (list, tuple)) else [index]
            value = ", ".join(str(labels[i]) for i in idx if isinstance(i, int) and 0 <= i < len(labels))
            return f'<span class="w-control">{label}<span class="w-value">{html.escape(value)}</span></span>'
        if "value" in s:
            value = s["value"]
            if isinstance(value, list):
                value = " – ".join(str(v) for v in value)
            cls = "w-text" if name in ("TextModel", "TextareaModel") else "w-value"
            return f'<span class="w-control">{label}<span class="{cls}">{html.escape(str(value))}</span></span>'
        return ""

    def _hidden(self, layout_ref) -> bool:
        if not isinstance(layout_ref, str) or not layout_ref.startswith("IPY_MODEL_"):
            return False
        layout = self.widgets.get(layout_ref[len("IPY_MODEL_"):], {}).get("state")
        if not isinstance(layout, dict):
            return False
        return layout.get("display") == "none" or layout.get("visibility") == "hidden"


def _plotly_title(figure) -> str:
    title = (figure.get("layout") or {}).get("title")
    if isinstance(title, dict):
        title = title.get("text")
    return re.sub(r"<[^>]+>", " ", str(title or "plotly figure"))


def _list(value) -> list:
    return value if isinstance(value, list) else []
