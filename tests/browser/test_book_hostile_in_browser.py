"""The hostile notebook's page (tests/hostile_book.py) in Chromium with the network cut: no script it brought
runs (`window.__pwned` never set, no dialog), nothing is asked for outside the site, and what the book must
show still works: the plotly figures draw (a figure wider than the column drawn at the column's width), the
bertviz view bertlab drew draws its tokens, the maths is typeset by the vendored KaTeX with its own fonts.

Built without running anything (`execute=False`: the outputs are stored in the notebook), so it takes seconds.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hostile_book import ATTACKS, make_hostile_course

from browser.conftest import serve_folder
from browser.test_book_in_browser import Visit

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    from bertlab.book import build

    course = make_hostile_course(tmp_path_factory.mktemp("hostile"))
    book = build(tmp_path_factory.mktemp("site") / "book", course, execute=False)
    with serve_folder(book.out) as url:
        yield book, url


def poke(page) -> None:
    """What a reader does: hover and click what is there, open the details, scroll to the end."""
    for el in page.locator("article .cell").all():
        el.hover(timeout=2_000)
    for d in page.locator("article details summary").all():
        d.click(timeout=2_000)
    page.mouse.wheel(0, 20_000)
    page.wait_for_timeout(800)


def test_no_script_the_notebook_brought_runs_and_nothing_leaves_the_site(hostile_site, browser):
    book, server = hostile_site
    assert len(ATTACKS) >= 25, ATTACKS
    visit = Visit(browser, (server, "data:", "blob:"))
    dialogs: list[str] = []
    visit.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        for name in book.pages:
            visit.open(server + name)
            if name == "00_hostile.html":
                poke(visit.page)
            pwned = visit.page.evaluate("() => window.__pwned === undefined ? null : String(window.__pwned)")
            assert pwned is None, f"{name}: the attack {pwned!r} ran"
        visit.open(server + "search.html?q=lesson")
        visit.page.locator("#search-results li").first.wait_for()
        assert "A lesson <img" in visit.page.locator("#search-results li a").first.text_content()   # as text
        visit.open(server + "search.html?q=" + quote("<img src=x onerror=window.__pwned='query'>"))
        assert "No section mentions <img" in visit.page.locator("#search-results li").first.text_content()
        assert visit.page.evaluate("() => window.__pwned === undefined")
        assert not dialogs, dialogs
        assert not visit.blocked, "requests outside the site:\n" + "\n".join(sorted(set(visit.blocked)))
        assert all(u.startswith((server, "data:", "blob:")) for u in visit.requested)
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_figures_views_and_maths_still_work(hostile_site, browser):
    book, server = hostile_site
    visit = Visit(browser, (server, "data:", "blob:"))
    try:
        visit.open(server + "00_hostile.html")
        page = visit.page
        page.evaluate("() => document.fonts.ready")
        seen = page.evaluate("""() => ({
          figures: document.querySelectorAll('.plotly-figure').length,
          drawn: [...document.querySelectorAll('.plotly-figure')].filter(f => f.querySelector('.main-svg')).length,
          wide: (() => { const f = [...document.querySelectorAll('.plotly-figure')]
                           .find(f => f.getAttribute('aria-label') === 'wide');
                         return {svg: f.querySelector('.main-svg').getBoundingClientRect().width,
                                 column: f.closest('.outputs').clientWidth}; })(),
          tokens: [...document.querySelectorAll('[id^=bertviz] svg text')].map(t => t.textContent),
          maths: window.BOOK_MATHS || 0, mathsError: window.BOOK_MATHS_ERROR || null,
          display: document.querySelectorAll('.katex-display').length,
          rawTex: document.querySelector('article').innerText.includes('\\\\frac'),
          font: document.fonts.check('16px KaTeX_Main'),
        })""")
        counts = book.counts["00_hostile.html"]
        assert seen["figures"] == seen["drawn"] == counts["plotly"] == 4, seen
        assert seen["wide"]["svg"] <= seen["wide"]["column"] + 1, seen["wide"]   # 2,400 px fitted to the column
        if counts["attention_views"]:
            assert "bank" in seen["tokens"] and "[CLS]" in seen["tokens"], seen["tokens"][:20]
        assert seen["maths"] >= 3 and seen["display"] >= 1 and not seen["mathsError"], seen
        assert not seen["rawTex"], "a formula is still shown as its TeX source"
        assert seen["font"], "KaTeX's font did not load from the site"
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
    finally:
        visit.close()


def test_from_the_disk_too(hostile_site, browser):
    """file://, as a reader who downloaded the folder opens it: the page's CSP lets the site's own files load
    (figures, KaTeX and its fonts) and nothing the notebook brought run."""
    book, _ = hostile_site
    site = book.out.resolve().as_uri() + "/"
    visit = Visit(browser, (site, "data:", "blob:"))
    try:
        visit.open(site + "00_hostile.html")
        poke(visit.page)
        seen = visit.page.evaluate("""() => ({pwned: window.__pwned === undefined ? null : String(window.__pwned),
          drawn: [...document.querySelectorAll('.plotly-figure')].filter(f => f.querySelector('.main-svg')).length,
          maths: window.BOOK_MATHS || 0})""")
        assert seen["pwned"] is None and seen["drawn"] == book.counts["00_hostile.html"]["plotly"], seen
        assert seen["maths"] >= 3, seen
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
    finally:
        visit.close()
