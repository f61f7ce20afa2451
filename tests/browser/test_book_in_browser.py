"""The lab book, opened in a real browser with the network cut: every page opens, every plotly figure and
every attention view draws, the navigation works, and not one request leaves the site's folder.

The book is built once per session from the repository's notebooks into a temporary folder. The notebooks'
executed copies come from the nbval run of the same test command (notebooks/conftest.py writes them to
build/executed/, or $BERTLAB_EXECUTED_DIR), so in CI nothing runs twice: this module is moved to the end of
the session (tests/browser/conftest.py) to run after nbval. Run alone, it runs the notebooks that have no
executed copy first (minutes; kept in build/book-cache/ for the next time).

The site is served by a static file server on 127.0.0.1 (so the route sees every request, as in
test_notebooks_in_browser); one test also opens it from the disk (file://), as a reader who downloaded it would.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser.conftest import OfflinePage, serve_folder, wait_for_nbval
from browser.test_notebooks_in_browser import _check_bertviz

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXECUTED = os.environ.get("BERTLAB_EXECUTED_DIR", str(REPO / "build" / "executed"))

# what each page shows once book.js is done: figures drawn, attention views with their text
SEEN = """() => ({
  ready: window.BOOK_READY === true, error: window.BOOK_ERROR || null,
  figures: document.querySelectorAll('.plotly-figure').length,
  drawn: [...document.querySelectorAll('.plotly-figure')].filter(f => f.querySelector('.main-svg')).length,
  undrawn: [...document.querySelectorAll('.plotly-figure')].filter(f => !f.querySelector('.main-svg'))
             .map(f => f.getAttribute('aria-label')),
  bertviz: [...document.querySelectorAll('[id^=bertviz]')].map(v => ({
    id: v.id, where: v.closest('.cell') ? 'cell ' + [...document.querySelectorAll('.cell')].indexOf(v.closest('.cell')) : '?',
    texts: [...v.querySelectorAll('svg text')].map(t => t.textContent),
    tokens: [...v.querySelectorAll('svg text.token')].map(t => t.textContent)})),
  snapshots: document.querySelectorAll('.widget-snapshot').length,
  notes: document.querySelectorAll('.widget-snapshot .live-note').length,
})"""


@pytest.fixture(scope="module")
def course_book(tmp_path_factory, request):
    from bertlab.book import build

    reuse = [Path(EXECUTED)] if EXECUTED else []
    if EXECUTED:
        wait_for_nbval(request.session, Path(EXECUTED))    # under xdist, nbval may still run on another worker
    book = build(tmp_path_factory.mktemp("book") / "site", REPO, reuse=reuse)
    ran = {name: how for name, how in book.executed.items() if how != "reused an executed copy"}
    print(f"\n{book.summary()}\n{len(book.executed) - len(ran)} notebooks from executed copies; run here: {ran or 'none'}")
    return book


@pytest.fixture(scope="module")
def server(course_book):
    with serve_folder(course_book.out) as url:
        yield url


class Visit(OfflinePage):
    """An offline page (browser/conftest.py) that also lists requests the route did not see, and opens a
    page of the book by waiting for book.js to finish."""

    def __init__(self, browser, allowed: tuple[str, ...]):
        super().__init__(browser, allowed)
        self.page.on("request", lambda r: None if r.url.startswith(allowed) or r.url in self.blocked
                     else self.blocked.append(r.url))

    def open(self, url: str) -> dict:
        self.page.goto(url)
        self.page.wait_for_function("window.BOOK_READY === true", timeout=120_000, polling=100)
        return self.page.evaluate(SEEN)


@pytest.fixture()
def visit(browser, server):
    v = Visit(browser, (server, "data:", "blob:"))
    yield v
    v.close()


def test_every_page_opens_offline_with_every_figure_and_attention_view_drawn(course_book, visit, server):
    report = []
    for name in course_book.pages:
        seen = visit.open(server + name)
        counts = course_book.counts.get(name, {})
        assert seen["error"] is None, f"{name}: {seen['error']}"
        assert not seen["undrawn"], f"{name}: plotly figures not drawn: {seen['undrawn']}"
        assert seen["figures"] == seen["drawn"] == counts.get("plotly", 0), (name, seen["figures"], counts)
        problems = _check_bertviz(visit.page, seen["bertviz"])
        assert not problems, f"{name}:\n" + "\n".join(problems)
        assert len(seen["bertviz"]) >= counts.get("attention_views", 0), name
        assert seen["snapshots"] == seen["notes"] == counts.get("widgets", 0), name
        report.append(f"{name}: {seen['drawn']} figures, {len(seen['bertviz'])} attention views, "
                      f"{seen['snapshots']} widget pictures")
    assert not visit.errors, "JavaScript errors:\n" + "\n".join(visit.errors)
    assert not visit.blocked, "requests outside the site (aborted):\n" + "\n".join(sorted(set(visit.blocked)))
    # the course draws: most lessons have figures, some attention views, every lesson's widget a picture
    total = {k: sum(c.get(k, 0) for c in course_book.counts.values()) for k in ("plotly", "attention_views", "widgets")}
    assert total["plotly"] > 20 and total["attention_views"] >= 1 and total["widgets"] >= len(course_book.lessons) // 2, total
    print("\n".join(report))


def test_navigation_moves_through_the_lessons_and_search_finds_them(course_book, visit, server):
    page = visit.page
    lessons = course_book.lessons
    visit.open(server + "index.html")
    page.locator(f'table.course-map a[href="{lessons[0].page}"]').first.click()   # its row (later rows link it too)
    page.wait_for_url(server + lessons[0].page)
    for lesson in lessons[1:3]:                                   # next, next
        page.locator("nav.pager a[rel=next]").first.click()
        page.wait_for_url(server + lesson.page)
    page.locator("nav.pager a[rel=prev]").first.click()
    page.wait_for_url(server + lessons[1].page)
    page.locator(f'nav.sidebar a[href="{lessons[-1].page}"]').click()   # the list of every lesson
    page.wait_for_url(server + lessons[-1].page)
    assert page.locator("nav.sidebar a.current").text_content() == lessons[-1].title
    page.locator("nav.sidebar a[href='teachers.html']").click()
    page.wait_for_url(server + "teachers.html")

    page.locator("nav.sidebar input[name=q]").fill("attention head")
    page.locator("nav.sidebar input[name=q]").press("Enter")
    page.wait_for_url("**/search.html?q=attention+head")
    results = page.locator("#search-results li a")
    results.first.wait_for()
    assert results.count() >= 3
    target = results.first.get_attribute("href")
    results.first.click()
    page.wait_for_url(lambda url: url.split("#")[0] == server + target.split("#")[0])
    anchor = target.split("#", 1)[1] if "#" in target else None
    if anchor:
        assert page.evaluate("(id) => !!document.getElementById(id)", anchor), f"no section {anchor} on {target}"
    assert not visit.blocked, visit.blocked


def test_a_page_opened_from_the_disk_draws_too(course_book, browser):
    """file://: a reader who downloads the folder opens index.html; nothing outside the folder is asked for."""
    site = course_book.out.resolve().as_uri() + "/"
    v = Visit(browser, (site, "data:", "blob:"))
    try:
        with_figures = max(course_book.counts, key=lambda p: course_book.counts[p]["plotly"])
        seen = v.open(site + with_figures)
        assert seen["figures"] == seen["drawn"] > 0
        assert not v.errors and not v.blocked, (v.errors, v.blocked)
        assert all(u.startswith((site, "data:", "blob:")) for u in v.requested), v.requested
    finally:
        v.close()


def test_every_link_between_pages_lands_on_a_page_and_its_heading(course_book):
    """Links inside the site (lessons to lessons, to the glossary's terms, search results aside) point at a
    file of the site and, with an anchor, at an id on that page."""
    import html as html_module
    import re

    ids = {p.name: set(re.findall(r'\bid="([^"]+)"', p.read_text(encoding="utf-8")))
           for p in course_book.out.glob("*.html")}
    broken = []
    for page in course_book.out.glob("*.html"):
        for href in re.findall(r'\bhref="([^"]+)"', page.read_text(encoding="utf-8")):
            href = html_module.unescape(href)
            if re.match(r"[a-z]+:", href) or href.startswith("_static/"):
                continue
            target, _, anchor = href.partition("#")
            target = target.split("?")[0] or page.name
            if target not in ids:
                broken.append(f"{page.name}: {href} (no such page)")
            elif anchor and anchor not in ids[target]:
                broken.append(f"{page.name}: {href} (no such heading)")
    assert not broken, "\n".join(broken)
