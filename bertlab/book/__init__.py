"""`bertlab book OUT`: the lessons as a static web site that opens in any browser with no network.

One page per lesson notebook (its prose, code, printed outputs, plotly figures drawn by plotly.js, bertviz's
attention views, and each widget's current picture), a front page with the course map, the glossary when the
course has one, the teacher's notes, search, and on every page the ways to open the lesson live.

Why nbconvert's pieces and a page of our own rather than Jupyter Book or Sphinx + MyST-NB: measured in the
README ("The lab book"). In short, the book must view offline and every output type here needs special
handling anyway (plotly drawn from its JSON by a local plotly.js, widgets as pictures from their stored
state); the site is plain files: `OUT/index.html` opens from the disk (file://) or any static host.

The site's own files are all it loads: plotly.min.js is copied from the plotly package, the attention views
carry their d3 and jQuery inside (bertlab.viz.bertviz_views), nothing needs require.js, the maths is typeset by
the KaTeX vendored in static/katex/ (with its fonts; the text uses the reader's system fonts), and every page
says so in its Content-Security-Policy. tests/browser/test_book_in_browser.py opens every page in Chromium with
every request outside the site's folder aborted.

The notebooks may be someone else's: everything they bring is sanitized before it goes into a page
(sanitize.py). A build happens in a new folder beside OUT that replaces OUT only when it is complete, so a
failed or interrupted build leaves the last book as it was.

Adding to a page: `_Site.page(..., scripts=("name.js",), styles=("name.css",))` loads files the build put in
OUT/_static/ (write them in `_write_site`), before book.js; the pages' CSP allows the site's own files only.
"""

from __future__ import annotations

import html
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import nbformat

from . import inpage
from .contents import Lesson, course_map, find_glossary, find_lessons, read_notebook, read_text
from .execute import executed_notebooks
from .live import Live
from .render import Renderer, markdown, pygments_css
from .sanitize import script_json

log = logging.getLogger(__name__)

__all__ = ["build", "Book", "Live", "find_lessons", "default_repo"]


@dataclass
class Book:
    """What `build` made: the site's folder, its pages, and how each lesson's outputs were obtained."""
    out: Path
    pages: list[str]
    lessons: list[Lesson]
    executed: dict[str, str]                   # notebook → "reused an executed copy" / "ran in 12.3 s" / "not run"
    counts: dict[str, dict[str, int]] = field(default_factory=dict)   # page → plotly, widgets, attention views
    seconds: float = 0.0
    live_model: dict | None = None             # the in-page model's sizes and parity (inpage.add_to_site), or None

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.out.rglob("*") if p.is_file())

    def summary(self) -> str:
        totals = {k: sum(c.get(k, 0) for c in self.counts.values()) for k in ("plotly", "attention_views", "widgets")}
        return (f"{len(self.pages)} pages, {totals['plotly']} plotly figures, {totals['attention_views']} attention "
                f"views, {totals['widgets']} widget pictures, {self.size_bytes / 1e6:.1f} MB, built in "
                f"{self.seconds:.1f} s → {self.out / 'index.html'}")


def default_repo() -> Path | None:
    """The repository this bertlab runs from (its notebooks/ and README.md), or None for an installed copy."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "notebooks").is_dir() and (root / "README.md").is_file() else None


def _static(name: str) -> bytes:
    return resources.files("bertlab.book").joinpath("static", name).read_bytes()


def _plotly_js() -> bytes:
    try:
        import plotly
    except ImportError as err:
        raise ImportError("the book draws its figures with plotly.js from the plotly package: "
                          "pip install 'bertlab[notebooks]'") from err
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly {plotly.__version__} has no package_data/plotly.min.js to ship with the "
                                "book; reinstall plotly (pip install --force-reinstall plotly)")
    return path.read_bytes()


def build(out, repo=None, *, notebooks=None, cache=None, reuse=(), execute: bool = True, live: Live | None = None,
          timeout: int = 900, live_model: bool = True) -> Book:
    """Build the site into `out` (created; a previous book there is replaced, anything else is refused).

    `repo`: the repository (default: the one this bertlab runs from): its notebooks/, README.md, docs/glossary.md
    and solutions/ are what the book shows. `cache`: where the notebooks this build runs are kept for the next
    (default REPO/build/book-cache). `reuse`: folders of executed copies to use when their cells match (default
    REPO/build/executed, where the test suite's nbval run writes them). `execute=False` renders a notebook with
    no executed copy as it is, without outputs, instead of running it.

    The site is built in a new folder beside `out` and put in its place only when every page is written: a
    build that fails (a bad argument, a notebook that is not one, a cell that raises, Ctrl-C) leaves the book
    already in `out` exactly as it was.
    """
    t0 = time.perf_counter()
    if repo is not None:
        repo = Path(repo)
        if not repo.is_dir():
            raise FileNotFoundError(f"--repo {repo} is not a folder: pass the repository that holds notebooks/ "
                                    "(or leave --repo out for the one bertlab runs from)")
    else:
        repo = default_repo()
    if notebooks is None:
        # from a clone, its notebooks/; from an installed bertlab, the copies shipped inside the package
        notebooks = repo / "notebooks" if repo is not None else Path(str(resources.files("bertlab") / "notebooks"))
    notebooks = Path(notebooks)
    readme = repo / "README.md" if repo is not None and (repo / "README.md").is_file() else None
    live = live if live is not None else Live.from_git(repo)
    out = _check_out(Path(out))
    if cache is None and repo is not None:
        cache = repo / "build" / "book-cache"
    if not reuse and repo is not None:
        reuse = [repo / "build" / "executed"]

    lessons = course_map(find_lessons(notebooks), readme)      # every input is read before anything is written
    glossary = find_glossary(repo) if repo is not None else None
    glossary_nb = glossary if glossary is not None and glossary.parent == notebooks else None
    to_run = [l.path for l in lessons] + ([glossary_nb] if glossary_nb else [])

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    except OSError as e:
        raise PermissionError(f"cannot write the site beside {out} (the build makes its new folder in "
                              f"{out.parent}, then renames it): {e.strerror or e}; pass a folder you can write "
                              "to") from None
    if live.hub is not None and live.repo is None:
        log.warning("the JupyterHub link needs the repository students pull: pass --repo-url (it is left out)")
    try:
        nbs, how = executed_notebooks(to_run, cache, list(reuse), execute=execute, timeout=timeout)
        pages, counts, live_sizes = _write_site(work, lessons, nbs, how, glossary, live, repo, live_model, cache)
        _swap(work, out)
    except BaseException:                       # an error or Ctrl-C: the half-built site goes, the old one stays
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Book(out=out, pages=pages, lessons=lessons, executed={p.name: h for p, h in how.items()},
                counts=counts, seconds=time.perf_counter() - t0, live_model=live_sizes)


MARKER = ".bertlab-book"


def _check_out(out: Path) -> Path:
    """`out` if the site may go there: a new or empty folder, or one that holds a book built before."""
    if out.is_symlink():
        raise NotADirectoryError(f"{out} is a link: pass the folder itself (the build replaces the folder, "
                                 "not what a link points at)")
    if out.exists():
        if not out.is_dir():
            raise NotADirectoryError(f"{out} is a file: pass a folder for the site")
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise FileExistsError(f"{out} is not empty and does not hold a bertlab book: pass a new or empty folder "
                                  "(a book built there before is replaced)")
    if out.resolve() in (Path.cwd().resolve(), Path(os.path.expanduser("~")).resolve(), Path(out.resolve().anchor)):
        raise FileExistsError(f"{out} is the current, home or root folder: pass a folder of its own for the site")
    return out


def _swap(work: Path, out: Path) -> None:
    """Put the finished site `work` where `out` is: the old book is moved aside, the new one renamed into its
    place (one rename each, on the same file system), then the old one deleted."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
    try:
        work.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_site(out: Path, lessons, nbs, how, glossary, live: Live, repo, live_model: bool = True,
                cache=None) -> tuple[list[str], dict, dict | None]:
    """Every page and file of the site, written into `out` (the build's own new folder)."""
    (out / MARKER).write_text("a site built by `bertlab book`; the next build replaces this folder\n")
    static = out / "_static"
    static.mkdir()
    (static / "plotly.min.js").write_bytes(_plotly_js())
    for name in ("book.js", "book.css", "binder.svg"):
        (static / name).write_bytes(_static(name))
    katex = resources.files("bertlab.book").joinpath("static", "katex")     # vendored, VENDOR.md says from where
    (static / "katex" / "fonts").mkdir(parents=True)
    for name in ("katex.min.js", "auto-render.min.js", "katex.min.css", "LICENSE"):
        (static / "katex" / name).write_bytes(katex.joinpath(name).read_bytes())
    for font in katex.joinpath("fonts").iterdir():
        if font.name.endswith(".woff2"):
            (static / "katex" / "fonts" / font.name).write_bytes(font.read_bytes())
    (static / "pygments.css").write_text(pygments_css())
    # the in-page model (bertlab/book/inpage): its runtime, views and bertlab-mini exported into _static/live,
    # when a lesson has a live view
    wanted = live_model and any(inpage.LESSON_VIEWS.get(lesson.notebook) for lesson in lessons)
    live_sizes = inpage.add_to_site(static, cache=cache) if wanted else None

    site = _Site(out, lessons, live, has_glossary=glossary is not None, repo=repo)
    site.extra_nav = [(inpage.PAGE, "What runs where")] if live_sizes else []
    counts: dict[str, dict[str, int]] = {}
    search: list[dict] = []
    for i, lesson in enumerate(lessons):
        nb = nbs[lesson.path]
        renderer = Renderer(nb, site.lesson_pages, site.live_line(lesson))
        body = _render_cells(renderer, nb, lesson.notebook)
        note = "" if how[lesson.path] != "not run" else (
            '<p class="notice">This page was built without running the notebook: it shows only the outputs saved '
            'in the notebook file.</p>')
        prev_l = lessons[i - 1] if i > 0 else None
        next_l = lessons[i + 1] if i + 1 < len(lessons) else None
        scripts, styles = MATHS if renderer.counts["maths"] else ((), ())
        typed = inpage.panel(lesson.notebook) if live_sizes else ""
        page = site.page(lesson.title, note + site.live_box(lesson) + typed + f'<article class="notebook">{body}</article>',
                         current=lesson.page, prev=prev_l, next=next_l, scripts=scripts, styles=styles)
        (out / lesson.page).write_text(page, encoding="utf-8")
        counts[lesson.page] = renderer.counts
        search += _search_entries(lesson.page, lesson.title, nb)

    pages = [l.page for l in lessons]
    if glossary is not None:
        title, body, entries, counts["glossary.html"] = _glossary(glossary, nbs.get(glossary), site)
        scripts, styles = MATHS if counts["glossary.html"].get("maths") else ((), ())
        (out / "glossary.html").write_text(site.page(title, body, current="glossary.html", scripts=scripts,
                                                     styles=styles), encoding="utf-8")
        pages.append("glossary.html")
        search += entries
    (out / "teachers.html").write_text(site.page("Teacher's notes", site.teachers(), current="teachers.html"),
                                       encoding="utf-8")
    (out / "index.html").write_text(site.page("bertlab: the lab book", site.front(), current="index.html"),
                                    encoding="utf-8")
    if live_sizes:
        (out / inpage.PAGE).write_text(site.page("What runs where", inpage.what_runs_where(live_sizes),
                                                 current=inpage.PAGE), encoding="utf-8")
        pages.append(inpage.PAGE)
    (out / "search.html").write_text(site.page("Search", site.search_page(), current="search.html"), encoding="utf-8")
    (static / "search-index.js").write_text("window.BOOK_INDEX = " + script_json(search) + ";\n", encoding="utf-8")
    return ["index.html"] + pages + ["teachers.html", "search.html"], counts, live_sizes


def _render_cells(renderer: Renderer, nb, name: str) -> str:
    """The notebook's cells as HTML; a cell the renderer cannot read (an executed copy whose JSON has the
    wrong shapes) is a one-line error naming the notebook and the cell."""
    parts = []
    for i, cell in enumerate(nb.cells):
        try:
            parts.append(renderer.cell(cell))
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as e:
            raise ValueError(f"{name}: cell {i} cannot be shown ({type(e).__name__}: {str(e)[:120]}): run the "
                             "notebook again, or build with --no-execute") from None
    return "".join(parts)


# ---- search ---------------------------------------------------------------------------------------------

def _search_entries(page: str, title: str, nb) -> list[dict]:
    """One entry per markdown section (heading → its prose, as plain text), so a hit lands on its section."""
    entries, heading, anchor, text = [], title, "", []

    def flush():
        plain = _plain_text("\n".join(text))
        if plain:
            entries.append({"page": page, "title": title, "heading": _plain_text(heading) or heading,
                            "anchor": anchor, "text": plain[:4000]})
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in str(cell.source).splitlines():
            h = re.match(r"^#{1,4}\s+(.+)$", line)
            if h:
                flush()
                heading, text = h.group(1).strip(), []
                anchor = "#" + _slug(heading)
            else:
                text.append(line)
        text.append("")                          # a cell ends its paragraph
    flush()
    return entries


def _plain_text(source: str) -> str:
    """Markdown as the reader sees it, in one line of plain text: rendered, tags dropped, entities read
    (a snippet shows "the [MASK] token", not "the `[MASK]` **token**" or "&lt;")."""
    rendered = markdown(source, {})
    rendered = re.sub(r"<(br|/p|/li|/h\d|/tr|/td|/th|/div|/blockquote)\b[^>]*>", " ", rendered)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", rendered)).split())


def _slug(heading: str) -> str:
    """The id the page's heading gets: the one nbconvert's Markdown renderer gives it (read from its output,
    so the search's links land on the heading whatever characters it holds)."""
    m = re.search(r'\bid="([^"]*)"', markdown("## " + heading, {}))
    return html.unescape(m.group(1)) if m else ""


# ---- the glossary ---------------------------------------------------------------------------------------

def _glossary(path: Path, nb, site: "_Site") -> tuple[str, str, list[dict], dict[str, int]]:
    """The glossary page: its title, body, search entries and what it drew (as a lesson's counts)."""
    if path.suffix == ".ipynb":
        nb = nb or read_notebook(path)
        renderer = Renderer(nb, site.lesson_pages, f"A live widget: this is its picture when the notebook ran. "
                                                   f"To use it, open <code>{html.escape(path.name)}</code> with "
                                                   "<code>bertlab lab</code> and run the cells.")
        body = _render_cells(renderer, nb, path.name)
        entries = _search_entries("glossary.html", "Glossary", nb)
        return "Glossary", f'<article class="notebook">{body}</article>', entries, renderer.counts
    else:
        source = read_text(path)
        body = f'<div class="cell markdown">{markdown(source, site.lesson_pages)}</div>'
        entries = _search_entries("glossary.html", "Glossary", nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(source)]))
    return "Glossary", f'<article class="notebook">{body}</article>', entries, {}


# ---- the pages --------------------------------------------------------------------------------------------

# The pages' Content-Security-Policy: a second wall behind the sanitizer. Everything a page loads comes from
# the site's folder (served, or file:// from the disk) or is inline data; no frame, plugin, <base> or form
# elsewhere. Inline scripts stay allowed: bertviz's views are one (their code is checked, sanitize.py).
CSP = ("default-src 'self' file: data: blob:; script-src 'self' file: 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'self' file: 'unsafe-inline'; img-src 'self' file: data: blob:; font-src 'self' file: data:; "
       "connect-src 'self' file: data: blob:; worker-src 'self' file: blob:; frame-src 'none'; object-src 'none'; "
       "base-uri 'none'; "
       "form-action 'self' file:")

MATHS = (("katex/katex.min.js", "katex/auto-render.min.js"), ("katex/katex.min.css",))


class _Site:
    def __init__(self, out: Path, lessons: list[Lesson], live: Live, has_glossary: bool, repo: Path | None):
        self.out, self.lessons, self.live, self.has_glossary, self.repo = out, lessons, live, has_glossary, repo
        self.lesson_pages = {l.notebook: l.page for l in lessons}
        if has_glossary:                           # the lessons link terms to glossary.ipynb#Term
            self.lesson_pages.update({"glossary.ipynb": "glossary.html", "00_glossary.ipynb": "glossary.html"})

    def live_line(self, lesson: Lesson) -> str:
        return (f"A live widget: this is its picture when the notebook ran. To use it, open "
                f'<code>{html.escape(lesson.notebook)}</code> live (<a href="#run-live">how</a>) and run the cells.')

    def nav(self, current: str) -> str:
        items = [("index.html", "Course map")]
        items += [(l.page, l.title) for l in self.lessons]
        if self.has_glossary:
            items.append(("glossary.html", "Glossary"))
        items.append(("teachers.html", "Teacher's notes"))
        items += getattr(self, "extra_nav", [])
        links = "".join(f'<li><a href="{p}"{" aria-current=page class=current" if p == current else ""}>'
                        f"{html.escape(t)}</a></li>" for p, t in items)
        return (f'<nav class="sidebar" aria-label="lessons"><a class="home" href="index.html">bertlab lab book</a>'
                f'<form class="search" action="search.html" method="get" role="search">'
                f'<input name="q" type="search" placeholder="Search the lessons" aria-label="search"></form>'
                f'<ol class="toc">{links}</ol></nav>')

    def page(self, title: str, body: str, current: str, prev: Lesson | None = None, next: Lesson | None = None,
             scripts: tuple[str, ...] = (), styles: tuple[str, ...] = ()) -> str:
        """One page of the site. `scripts` and `styles`: files under _static/ this page needs beyond the
        site's own (loaded in this order, before book.js), e.g. ("katex/katex.min.js",); plotly.js and the
        search index are added where the body needs them. Pages that need more (an in-page model, live
        views) add their files to _static/ and name them here."""
        pager = ""
        if current.endswith(".html") and any(l.page == current for l in self.lessons):
            left = f'<a class="prev" rel="prev" href="{prev.page}">← {html.escape(prev.title)}</a>' if prev else \
                '<a class="prev" rel="prev" href="index.html">← Course map</a>'
            right = f'<a class="next" rel="next" href="{next.page}">{html.escape(next.title)} →</a>' if next else \
                '<a class="next" rel="next" href="teachers.html">Teacher\'s notes →</a>'
            pager = f'<nav class="pager" aria-label="previous and next lesson">{left}{right}</nav>'
        # bl-embed: a bertlab view, live on the page over its saved state (viz.views.page)
        names = (["plotly.min.js"] if "plotly-figure" in body or "bl-embed" in body else []) + list(scripts)
        if current == "search.html":
            names.append("search-index.js")
        head_scripts = "".join(f'<script src="_static/{html.escape(n)}"></script>' for n in dict.fromkeys(names))
        head_styles = "".join(f'<link rel="stylesheet" href="_static/{html.escape(n)}">' for n in dict.fromkeys(styles))
        live_tags = inpage.scripts() if "data-bertlab-view" in body else ""
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · bertlab</title>
<link rel="stylesheet" href="_static/book.css"><link rel="stylesheet" href="_static/pygments.css">{head_styles}
{head_scripts}{live_tags}<script src="_static/book.js" defer></script>
</head><body>
{self.nav(current)}
<main>{pager}{body}{pager}</main>
</body></html>
"""

    # -- how to run a lesson live
    def live_box(self, lesson: Lesson) -> str:
        """"Run this lesson live": on one's own computer always; the hub, Binder and Colab only when the book
        knows where they lead (a repository URL, and a hub for the hub link)."""
        nb = html.escape(lesson.notebook)
        items = [f"""<li><b>On your computer</b>: <code>pip install 'bertlab[notebooks]'</code> then <code>bertlab lab</code>, and open
<code>{nb}</code>; or, in a clone of the repository, <code>bash scripts/setup.sh lab &amp;&amp; .venv/bin/jupyter lab notebooks/</code>.</li>"""]
        hub = self.live.nbgitpuller(lesson.notebook)
        if hub:
            items.append(f"""<li><b>Your class's JupyterHub</b>: <a class="hub-link" href="{html.escape(hub)}">open
{nb} on the hub</a> (nbgitpuller clones or updates the repository in your home folder, keeping your changes).</li>""")
        binder = self.live.binder(lesson.notebook)
        if binder:
            items.append(f"""<li><b>Binder</b>: <a class="binder-link" href="{html.escape(binder)}"><img src="_static/binder.svg"
alt="launch binder" height="20"></a> (a temporary session; nothing is saved).</li>""")
        colab = self.live.colab(lesson.notebook)
        if colab:
            items.append(f'<li><b>Colab</b>: <a class="colab-link" href="{html.escape(colab)}">open in Colab</a>, then run '
                         f"this first cell (it installs bertlab; Colab keeps its own torch):"
                         f"<pre>{html.escape(self.live.colab_cell())}</pre></li>")
        return ('<details class="run-live" id="run-live"><summary>Run this lesson live</summary>\n<ul>\n'
                + "\n".join(items) + "\n</ul></details>")

    # -- the front page: the course map
    def front(self) -> str:
        rows = []
        for l in self.lessons:
            pre = ", ".join(f'<a href="{self._page_of(n)}">{n}</a>' if self._page_of(n) else n for n in l.prerequisites)
            rows.append(f'<tr class="{l.path_kind or ""}"><td><a href="{l.page}">{html.escape(l.title)}</a>'
                        f'<div class="what">{html.escape(l.summary)}</div></td>'
                        f'<td>{pre or "—"}</td><td>{l.minutes if l.minutes is not None else "—"}</td>'
                        f'<td>{l.path_kind or "—"}</td></tr>')
        core = [l for l in self.lessons if l.path_kind == "core"]
        optional = [l for l in self.lessons if l.path_kind == "optional"]
        paths = ""
        if core:
            mins = sum(l.minutes or 0 for l in core)
            paths += ('<p><b>Core path</b>: ' + " → ".join(f'<a href="{l.page}">{l.number}</a>' for l in core)
                      + (f" (about {mins} minutes)" if mins else "") + "</p>")
        if optional:
            paths += '<p><b>Optional</b>: ' + ", ".join(f'<a href="{l.page}">{l.number}</a>' for l in optional) + "</p>"
        glossary = '<p>Terms the lessons use: <a href="glossary.html">the glossary</a>.</p>' if self.has_glossary else ""
        return f"""<h1>bertlab: BERT, taken apart in your browser</h1>
<p class="lead">{len(self.lessons)} short lessons on BERT (Devlin et al., 2018), each a notebook you can read here with its
figures and attention views, and open live with one click to change things and watch what happens.</p>
{paths}{glossary}
<table class="course-map"><thead><tr><th>lesson</th><th>needs</th><th>minutes</th><th>path</th></tr></thead>
<tbody>{''.join(rows)}</tbody></table>
<p>Teaching a class? <a href="teachers.html">The teacher's notes</a> say which lesson fits which hour and where the
solutions are.{self._hub_sentence("A class starts from one link: ", "the JupyterHub link", " opens the first lesson for every student.")}</p>
<p class="small">The lessons read here as they ran when the book was built. Widgets are pictures of their state
then; run the notebook to use them.</p>"""

    def _hub_sentence(self, before: str, link: str, after: str) -> str:
        hub = self.live.nbgitpuller(self.lessons[0].notebook)
        return f' {before}<a href="{html.escape(hub)}">{link}</a>{after}' if hub else ""

    def _page_of(self, number: str) -> str | None:
        return next((l.page for l in self.lessons if l.number == number), None)

    # -- the teacher's notes
    def teachers(self) -> str:
        hours, used, plan = [], 0, []
        for l in self.lessons:
            m = l.minutes or 30
            if used and used + m > 60:
                hours.append(plan)
                plan, used = [], 0
            plan.append(l)
            used += m
        if plan:
            hours.append(plan)
        schedule = "".join(
            f"<tr><td>hour {i}</td><td>" + "".join(f'<div><a href="{l.page}">{html.escape(l.title)}</a>'
                                                  f'<div class="what">{html.escape(l.summary)}</div></div>' for l in ls)
            + f"</td><td>{sum(l.minutes or 30 for l in ls)}</td></tr>" for i, ls in enumerate(hours, 1))
        timed = all(l.minutes is not None for l in self.lessons)
        exercises = []
        for l in self.lessons:
            if not l.exercises:
                continue
            items = "".join(f'<li><b>{html.escape(e.id)}</b>{" ✔" if e.checked else ""}'
                            f'{" · " + html.escape(e.tags) if e.tags else ""}: {html.escape(e.text)}</li>'
                            for e in l.exercises)
            n_checked = sum(e.checked for e in l.exercises)
            widgets = f" Live widgets: {html.escape(', '.join(l.widgets))}." if l.widgets else ""
            exercises.append(f'<h3><a href="{l.page}">{html.escape(l.title)}</a></h3><p>{len(l.exercises)} exercises, '
                             f'{n_checked} checked by <code>bertlab.check</code>.{widgets}</p>'
                             f'<ul class="exercises">{items}</ul>')
        solutions = self.repo is not None and (self.repo / "solutions").is_dir()
        hub = self.live.nbgitpuller(self.lessons[0].notebook)
        start = (f"""<p>Give students <a href="{html.escape(hub)}">this JupyterHub link</a> (nbgitpuller: the first click clones the repository into
each student's home folder, later clicks update it without overwriting their edits); each lesson's page has the
same link to its own notebook under “Run this lesson live”.""" if hub else
                 """<p>This book was built without a JupyterHub address, so its pages have no hub link: build it with
<code>--hub-url https://hub.example.edu</code> (and <code>--repo-url</code>, unless the repository's <code>origin</code>
remote is the one students pull) to give each lesson a link that opens it on the class's hub.""")
        return f"""<h1>Teacher's notes</h1>
<h2>Which lesson for which hour</h2>
<p>A course on transformers that uses BERT as its worked example: the lessons in order, packed into hours by
{"each lesson's measured minutes" if timed else "each lesson's minutes where it states them, else 30"}; add time for
discussion and the exercises. Each lesson's page opens with what it covers; its summary is below its title here.</p>
<table class="schedule"><thead><tr><th></th><th>lessons</th><th>minutes</th></tr></thead><tbody>{schedule}</tbody></table>
<h2>Starting a class from one link</h2>
{start} Without a hub, the Binder badge on each page starts a
temporary session (nothing is saved), and Colab works for a GitHub repository (both shown when the book knows the
repository's URL).</p>
<h2>What each exercise checks</h2>
<p>Exercises marked ✔ have a check: in the notebook, <code>bertlab.check("04.3", answer)</code> says right or
wrong, and what kind of wrong, without ever showing the answer; <code>bertlab.hint("04.3")</code> gives hints in
tiers. The others are open questions, for discussion.</p>
{''.join(exercises) or "<p>(The notebooks have no exercise sections yet.)</p>"}
<h2>The instructor pack</h2>
<p>The solutions are not in the book and not in the installed package (a student's <code>pip install</code> does not
carry them). They live in the repository's <code>solutions/</code> folder{"" if solutions else " (not in this build's repository yet)"},
one executable answer per exercise, each checked by the test suite against <code>bertlab.check</code>.
To hand them out, copy them beside the notebooks when you want students to have them:
<code>bertlab lab DIR --solutions SOURCE</code> (SOURCE: the repository's <code>solutions/</code>), or share the
folder after the deadline. Keep them out of the repository students pull from if they should not see them early
(a private fork with <code>solutions/</code>, and a public one without, both building this book).</p>"""

    def search_page(self) -> str:
        return """<h1>Search</h1>
<form class="search big" action="search.html" method="get" role="search">
<input id="search-q" name="q" type="search" placeholder="attention, [MASK], WordPiece…" aria-label="search"></form>
<ol id="search-results"></ol>"""
