"""`bertlab book OUT`: the lessons as a static web site that opens in any browser with no network.

One page per lesson notebook (its prose, code, printed outputs, plotly figures drawn by plotly.js, bertviz's
attention views, and each widget's current picture), a front page with the course map, the glossary when the
course has one, the teacher's notes, search, and on every page the ways to open the lesson live.

Why nbconvert's pieces and a page of our own rather than Jupyter Book or Sphinx + MyST-NB: measured in the
README ("The lab book"). In short, the book must view offline and every output type here needs special
handling anyway (plotly drawn from its JSON by a local plotly.js, widgets as pictures from their stored
state); the site is plain files: `OUT/index.html` opens from the disk (file://) or any static host.

The site's own files are all it loads: plotly.min.js is copied from the plotly package, the attention views
carry their d3 and jQuery inside (bertlab.viz.bertviz_views), nothing needs require.js, and the pages use the
reader's system fonts, so there is no font to fetch. tests/browser/test_book_in_browser.py opens every page in
Chromium with every request outside the site's folder aborted.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import nbformat

from .contents import Lesson, course_map, find_glossary, find_lessons
from .execute import executed_notebooks
from .live import Live
from .render import Renderer, markdown, pygments_css

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
          timeout: int = 900) -> Book:
    """Build the site into `out` (created; a previous book there is replaced, anything else is refused).

    `repo`: the repository (default: the one this bertlab runs from): its notebooks/, README.md, docs/glossary.md
    and solutions/ are what the book shows. `cache`: where the notebooks this build runs are kept for the next
    (default REPO/build/book-cache). `reuse`: folders of executed copies to use when their cells match (default
    REPO/build/executed, where the test suite's nbval run writes them). `execute=False` renders a notebook with
    no executed copy as it is, without outputs, instead of running it.
    """
    t0 = time.perf_counter()
    repo = Path(repo) if repo is not None else default_repo()
    if notebooks is None:
        # from a clone, its notebooks/; from an installed bertlab, the copies shipped inside the package
        notebooks = repo / "notebooks" if repo is not None else Path(str(resources.files("bertlab") / "notebooks"))
    notebooks = Path(notebooks)
    readme = repo / "README.md" if repo is not None and (repo / "README.md").is_file() else None
    live = live or Live()
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise NotADirectoryError(f"{out} is a file: pass a folder for the site")
        if any(out.iterdir()) and not (out / ".bertlab-book").is_file():
            raise FileExistsError(f"{out} is not empty and does not hold a bertlab book: pass a new or empty folder "
                                  "(a book built there before is replaced)")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / ".bertlab-book").write_text("a site built by `bertlab book`; the next build replaces this folder\n")
    if cache is None and repo is not None:
        cache = repo / "build" / "book-cache"
    if not reuse and repo is not None:
        reuse = [repo / "build" / "executed"]

    lessons = course_map(find_lessons(notebooks), readme)
    glossary = find_glossary(repo) if repo is not None else None
    if glossary is not None and glossary.parent == notebooks:
        glossary_nb = glossary
    else:
        glossary_nb = None
    to_run = [l.path for l in lessons] + ([glossary_nb] if glossary_nb else [])
    nbs, how = executed_notebooks(to_run, cache, list(reuse), execute=execute, timeout=timeout)

    static = out / "_static"
    static.mkdir()
    (static / "plotly.min.js").write_bytes(_plotly_js())
    for name in ("book.js", "book.css", "binder.svg"):
        (static / name).write_bytes(_static(name))
    (static / "pygments.css").write_text(pygments_css())

    site = _Site(out, lessons, live, has_glossary=glossary is not None, repo=repo)
    counts: dict[str, dict[str, int]] = {}
    search: list[dict] = []
    for i, lesson in enumerate(lessons):
        nb = nbs[lesson.path]
        renderer = Renderer(nb, site.lesson_pages, site.live_line(lesson))
        body = "".join(renderer.cell(c) for c in nb.cells)
        note = "" if how[lesson.path] != "not run" else (
            '<p class="notice">This page was built without running the notebook: it shows only the outputs saved '
            'in the notebook file.</p>')
        prev_l = lessons[i - 1] if i > 0 else None
        next_l = lessons[i + 1] if i + 1 < len(lessons) else None
        page = site.page(lesson.title, note + site.live_box(lesson) + f'<article class="notebook">{body}</article>',
                         current=lesson.page, prev=prev_l, next=next_l)
        (out / lesson.page).write_text(page, encoding="utf-8")
        counts[lesson.page] = renderer.counts
        search += _search_entries(lesson.page, lesson.title, nb)

    pages = [l.page for l in lessons]
    if glossary is not None:
        title, body, entries, counts["glossary.html"] = _glossary(glossary, nbs.get(glossary), site)
        (out / "glossary.html").write_text(site.page(title, body, current="glossary.html"), encoding="utf-8")
        pages.append("glossary.html")
        search += entries
    (out / "teachers.html").write_text(site.page("Teacher's notes", site.teachers(), current="teachers.html"),
                                       encoding="utf-8")
    (out / "index.html").write_text(site.page("bertlab: the lab book", site.front(), current="index.html"),
                                    encoding="utf-8")
    (out / "search.html").write_text(site.page("Search", site.search_page(), current="search.html"), encoding="utf-8")
    (static / "search-index.js").write_text("window.BOOK_INDEX = " + json.dumps(search, ensure_ascii=False) + ";\n",
                                            encoding="utf-8")
    pages = ["index.html"] + pages + ["teachers.html", "search.html"]
    return Book(out=out, pages=pages, lessons=lessons, executed={p.name: h for p, h in how.items()},
                counts=counts, seconds=time.perf_counter() - t0)


# ---- search ---------------------------------------------------------------------------------------------

def _search_entries(page: str, title: str, nb) -> list[dict]:
    """One entry per markdown section (heading → its prose), so a hit lands on its section."""
    entries, heading, anchor, text = [], title, "", []

    def flush():
        if text:
            entries.append({"page": page, "title": title, "heading": heading, "anchor": anchor,
                            "text": " ".join(" ".join(text).split())[:4000]})
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            h = re.match(r"^#{1,4}\s+(.+)$", line)
            if h:
                flush()
                heading, text = h.group(1).strip(), []
                anchor = "#" + _slug(heading)
            else:
                text.append(re.sub(r"[*_`>#|]", "", line))
    flush()
    return entries


def _slug(heading: str) -> str:
    """The id the page's heading gets: the one nbconvert's Markdown renderer gives it (read from its output,
    so the search's links land on the heading whatever characters it holds)."""
    m = re.search(r'\bid="([^"]*)"', markdown("## " + heading, {}))
    return html.unescape(m.group(1)) if m else ""


# ---- the glossary ---------------------------------------------------------------------------------------

def _glossary(path: Path, nb, site: "_Site") -> tuple[str, str, list[dict], dict[str, int]]:
    """The glossary page: its title, body, search entries and what it drew (as a lesson's counts)."""
    if path.suffix == ".ipynb":
        nb = nb or nbformat.read(path, as_version=4)
        renderer = Renderer(nb, site.lesson_pages, f"A live widget: this is its picture when the notebook ran. "
                                                   f"To use it, open <code>{html.escape(path.name)}</code> with "
                                                   "<code>bertlab lab</code> and run the cells.")
        body = "".join(renderer.cell(c) for c in nb.cells)
        entries = _search_entries("glossary.html", "Glossary", nb)
        return "Glossary", f'<article class="notebook">{body}</article>', entries, renderer.counts
    else:
        source = path.read_text(encoding="utf-8")
        body = f'<div class="cell markdown">{markdown(source, site.lesson_pages)}</div>'
        entries = _search_entries("glossary.html", "Glossary", nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(source)]))
    return "Glossary", f'<article class="notebook">{body}</article>', entries, {}


# ---- the pages --------------------------------------------------------------------------------------------

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
        links = "".join(f'<li><a href="{p}"{" aria-current=page class=current" if p == current else ""}>'
                        f"{html.escape(t)}</a></li>" for p, t in items)
        return (f'<nav class="sidebar" aria-label="lessons"><a class="home" href="index.html">bertlab lab book</a>'
                f'<form class="search" action="search.html" method="get" role="search">'
                f'<input name="q" type="search" placeholder="Search the lessons" aria-label="search"></form>'
                f'<ol class="toc">{links}</ol></nav>')

    def page(self, title: str, body: str, current: str, prev: Lesson | None = None, next: Lesson | None = None) -> str:
        pager = ""
        if current.endswith(".html") and any(l.page == current for l in self.lessons):
            left = f'<a class="prev" rel="prev" href="{prev.page}">← {html.escape(prev.title)}</a>' if prev else \
                '<a class="prev" rel="prev" href="index.html">← Course map</a>'
            right = f'<a class="next" rel="next" href="{next.page}">{html.escape(next.title)} →</a>' if next else \
                '<a class="next" rel="next" href="teachers.html">Teacher\'s notes →</a>'
            pager = f'<nav class="pager" aria-label="previous and next lesson">{left}{right}</nav>'
        scripts = '<script src="_static/plotly.min.js"></script>' if "plotly-figure" in body else ""
        if current == "search.html":
            scripts += '<script src="_static/search-index.js"></script>'
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · bertlab</title>
<link rel="stylesheet" href="_static/book.css"><link rel="stylesheet" href="_static/pygments.css">
{scripts}<script src="_static/book.js" defer></script>
</head><body>
{self.nav(current)}
<main>{pager}{body}{pager}</main>
</body></html>
"""

    # -- how to run a lesson live
    def live_box(self, lesson: Lesson) -> str:
        nb = html.escape(lesson.notebook)
        placeholder = ""
        if self.live.placeholders:
            placeholder = ('<p class="placeholder"><strong>Placeholder:</strong> the '
                           + " and the ".join(html.escape(p) for p in self.live.placeholders)
                           + " below are not set yet; whoever builds the book passes them to <code>bertlab book</code>.</p>")
        colab = self.live.colab(lesson.notebook)
        colab_item = (f'<li><b>Colab</b>: <a href="{html.escape(colab)}">open in Colab</a>, then run this first cell '
                      f"(it installs bertlab; Colab keeps its own torch):<pre>{html.escape(self.live.colab_cell())}</pre></li>"
                      if colab else "<li><b>Colab</b>: only for a GitHub repository (pass a github.com --repo-url).</li>")
        return f"""<details class="run-live" id="run-live"><summary>Run this lesson live</summary>
{placeholder}<ul>
<li><b>On your computer</b>: <code>pip install 'bertlab[notebooks]'</code> then <code>bertlab lab</code>, and open
<code>{nb}</code>; or, in a clone of the repository, <code>bash scripts/setup.sh lab &amp;&amp; .venv/bin/jupyter lab notebooks/</code>.</li>
<li><b>Your class's JupyterHub</b>: <a class="hub-link" href="{html.escape(self.live.nbgitpuller(lesson.notebook))}">open
{nb} on the hub</a> (nbgitpuller clones or updates the repository in your home folder, keeping your changes).</li>
<li><b>Binder</b>: <a class="binder-link" href="{html.escape(self.live.binder(lesson.notebook))}"><img src="_static/binder.svg"
alt="launch binder" height="20"></a> (a temporary session; nothing is saved).</li>
{colab_item}
</ul></details>"""

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
solutions are. A class starts from one link: <a href="{html.escape(self.live.nbgitpuller(self.lessons[0].notebook))}">the
JupyterHub link</a> opens the first lesson for every student.</p>
<p class="small">The lessons read here as they ran when the book was built. Widgets are pictures of their state
then; run the notebook to use them.</p>"""

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
        hub = html.escape(self.live.nbgitpuller(self.lessons[0].notebook))
        return f"""<h1>Teacher's notes</h1>
<h2>Which lesson for which hour</h2>
<p>A course on transformers that uses BERT as its worked example: the lessons in order, packed into hours by
{"each lesson's measured minutes" if timed else "each lesson's minutes where it states them, else 30"}; add time for
discussion and the exercises. Each lesson's page opens with what it covers; its summary is below its title here.</p>
<table class="schedule"><thead><tr><th></th><th>lessons</th><th>minutes</th></tr></thead><tbody>{schedule}</tbody></table>
<h2>Starting a class from one link</h2>
<p>Give students <a href="{hub}">this JupyterHub link</a> (nbgitpuller: the first click clones the repository into
each student's home folder, later clicks update it without overwriting their edits); each lesson's page has the
same link to its own notebook under “Run this lesson live”. Without a hub, the Binder badge on each page starts a
temporary session (nothing is saved), and Colab works for a GitHub repository.</p>
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
