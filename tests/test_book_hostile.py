"""`bertlab book` against what someone else wrote and what goes wrong (issue 27, items 4 and 9; issue 30, item 7):

- a failed build (a bad --repo, a file that is not a notebook, a cell that raises, Ctrl-C) leaves the book
  already in OUT exactly as it was, says so in one line, and leaves no half-built folder behind;
- the hostile notebook of tests/hostile_book.py builds into a page where nothing it brought can run or fetch:
  read here from the HTML (every tag and attribute, every script's kind), and in Chromium by
  tests/browser/test_book_hostile_in_browser.py;
- the book reads like the notebook: maths drawn by the vendored KaTeX (its files as VENDOR.md lists them),
  search snippets as plain text, no nbval marker in the code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from hostile_book import EVIL, HOSTILE_FIGURE, make_hostile_course
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import bertlab.book as book_module
from bertlab.book import build
from bertlab.book.sanitize import clean_html, clean_plotly, image_src, script_json
from bertlab.cli import main

KATEX = Path(book_module.__file__).parent / "static" / "katex"


def small_course(root: Path, extra: list | None = None) -> Path:
    (root / "notebooks").mkdir(parents=True)
    cells = [new_markdown_cell("# 00 · One\n\nA lesson.\n\n## Part\n\nSome **bold** `code` and a [link](x.ipynb).")]
    nbformat.write(new_notebook(cells=cells + (extra or [])), root / "notebooks" / "00_one.ipynb")
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if ".building-" in p.name or ".old-" in p.name]


@pytest.fixture()
def old_book(tmp_path):
    """A book built into tmp/site, with what is in it."""
    course = small_course(tmp_path / "course")
    out = tmp_path / "site"
    assert main(["book", str(out), "--repo", str(course), "--no-execute"]) == 0
    return course, out, snapshot(out)


def one_line_error(capsys, code_prefix: str = "bertlab book: error:") -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(code_prefix), err
    assert "\n" not in err and "Traceback" not in err, err
    return err


# ---- a failed build keeps the old book ----------------------------------------------------------------------

def test_a_bad_repo_leaves_the_old_book_as_it_was(old_book, tmp_path, capsys):
    course, out, before = old_book
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(tmp_path / "cuorse"), "--no-execute"]) == 2
    err = one_line_error(capsys)
    assert "cuorse" in err and "is not a folder" in err and "as it was" in err
    assert snapshot(out) == before and not leftovers(tmp_path)
    assert main(["book", str(out), "--repo", str(tmp_path), "--no-execute"]) == 2      # a folder without notebooks/
    assert "no notebooks folder" in one_line_error(capsys)
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_a_cell_that_raises_leaves_the_old_book_as_it_was(old_book, tmp_path, capsys):
    course, out, before = old_book
    nb = nbformat.read(course / "notebooks" / "00_one.ipynb", as_version=4)
    nb.cells += [new_code_cell("x = 1"), new_code_cell("raise ValueError('boom, on purpose')")]
    nbformat.write(nb, course / "notebooks" / "00_one.ipynb")
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(course)]) == 1
    err = one_line_error(capsys)
    assert "00_one.ipynb" in err and "cell 2" in err and "ValueError" in err and "boom, on purpose" in err
    assert "--no-execute" in err and "as it was" in err
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_ctrl_c_during_the_build_leaves_the_old_book_as_it_was(old_book, tmp_path, capsys, monkeypatch):
    course, out, before = old_book
    real = book_module._write_site

    def interrupted(work, *args, **kwargs):
        real(work, *args, **kwargs)              # every page written into the new folder, then Ctrl-C
        assert any(work.iterdir())
        raise KeyboardInterrupt
    monkeypatch.setattr(book_module, "_write_site", interrupted)
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(course), "--no-execute"]) == 130
    err = one_line_error(capsys, "bertlab book: interrupted")
    assert "as it was" in err
    assert snapshot(out) == before and not leftovers(tmp_path)
    with pytest.raises(KeyboardInterrupt):            # from Python: the interrupt goes on, the old book stays
        build(out, course, execute=False)
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_a_real_ctrl_c_while_a_notebook_runs_leaves_the_old_book_as_it_was(old_book, tmp_path):
    """SIGINT to the command while its kernel runs a cell (nbclient's own signal handler stops the kernel and
    then raises what that caused): exit 130, one line, the old book as it was, nothing left beside it."""
    import signal
    import subprocess
    import sys
    import time

    course, out, before = old_book
    nb = nbformat.read(course / "notebooks" / "00_one.ipynb", as_version=4)
    nb.cells.append(new_code_cell("import time\ntime.sleep(120)"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, course / "notebooks" / "00_one.ipynb")
    command = [sys.executable, "-c", "import sys; from bertlab.cli import main; sys.exit(main())",
               "book", str(out), "--repo", str(course)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    said = []
    for line in proc.stderr:                      # wait until the notebook is running
        said.append(line)
        if "running 00_one.ipynb" in line:
            break
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    try:
        _, rest = proc.communicate(timeout=90)
    finally:
        proc.kill()
    errors = [line for line in (said + rest.splitlines()) if line.strip() and not line.startswith("INFO")]
    assert proc.returncode == 130, errors
    assert len(errors) == 1 and errors[0].startswith("bertlab book: interrupted") and "as it was" in errors[0], errors
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_a_successful_build_replaces_the_old_book_and_nothing_else(old_book, tmp_path):
    course, out, before = old_book
    (course / "notebooks" / "01_two.ipynb").write_text(nbformat.writes(new_notebook(cells=[
        new_markdown_cell("# 01 · Two")])))
    (out / "stale.html").write_text("from an older build")
    book = build(out, course, execute=False)
    assert book.out == out and (out / "01_two.html").is_file() and not (out / "stale.html").exists()
    assert not leftovers(tmp_path) and sorted(p.name for p in tmp_path.iterdir()) == ["course", "site"]


NOT_NOTEBOOKS = {
    "not JSON": lambda p: p.write_text("this is not a notebook"),
    "empty": lambda p: p.write_text(""),
    "JSON, not a notebook": lambda p: p.write_text('{"cells": 3}'),
    "a list": lambda p: p.write_text("[1, 2]"),
    "a cell without a source": lambda p: p.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "markdown", "metadata": {}}]})),
    "a source that is a number": lambda p: p.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": 7}]})),
    "not UTF-8": lambda p: p.write_bytes(b'{"cells": ["\xff\xfe"]}'),
    "a folder": lambda p: p.mkdir(),
    "a link to a device": lambda p: p.symlink_to("/dev/zero"),
    "a broken link": lambda p: p.symlink_to(p.parent / "nowhere.ipynb"),
}


@pytest.mark.parametrize("kind", NOT_NOTEBOOKS)
def test_a_file_that_is_not_a_notebook_is_a_one_line_error_naming_it(kind, old_book, tmp_path, capsys):
    course, out, before = old_book
    NOT_NOTEBOOKS[kind](course / "notebooks" / "05_bad.ipynb")
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(course), "--no-execute"]) == 2
    err = one_line_error(capsys)
    assert "05_bad.ipynb" in err and ("not a notebook" in err or "not a valid notebook" in err), err
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_an_executed_copy_with_odd_outputs_is_shown_defensively_or_named(tmp_path, capsys):
    """--reuse folders hold executed copies someone else made: outputs of the wrong shapes are skipped, a cell
    the renderer cannot read is a one-line error naming the notebook and the cell, a torn file is ignored."""
    course = small_course(tmp_path / "course", [new_code_cell("1")])
    reuse = tmp_path / "executed"
    reuse.mkdir()
    nb = json.loads((course / "notebooks" / "00_one.ipynb").read_text())
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "<b>", "text": ["a", "b"]},
                                 {"output_type": "error", "traceback": "not a list"},
                                 {"output_type": "display_data", "data": {"text/html": ["<i>ok</i>", "2"]}}]
    nb["cells"][1]["execution_count"] = "<script>"
    (reuse / "00_one.ipynb").write_text(json.dumps(nb))
    book = build(tmp_path / "site", course, reuse=[reuse], execute=False)
    assert book.executed["00_one.ipynb"] == "reused an executed copy"
    page = (book.out / "00_one.html").read_text()
    assert "<i>ok</i>2" in page and "<script>" not in page.split("<article")[1]
    nb["cells"][1]["metadata"] = {"tags": 5}
    (reuse / "00_one.ipynb").write_text(json.dumps(nb))
    assert main(["book", str(tmp_path / "site2"), "--repo", str(course), "--reuse", str(reuse), "--no-execute"]) == 2
    err = one_line_error(capsys)
    assert "00_one.ipynb: cell 1 cannot be shown" in err
    (reuse / "00_one.ipynb").write_text('{"cells": 5}')                      # torn: ignored, the notebook used
    assert build(tmp_path / "site3", course, reuse=[reuse], execute=False).executed["00_one.ipynb"] == "not run"


def _metadata(field, value):
    def make(course):
        path = course / "notebooks" / "00_one.ipynb"
        nb = nbformat.read(path, as_version=4)
        # a lesson's whole metadata (as bertlab/course/lessons.py reads it) with one field spoiled
        good = nbformat.read(Path(__file__).parents[1] / "notebooks" / "02_input_embeddings.ipynb", as_version=4)
        nb.metadata["bertlab"] = dict(good.metadata["bertlab"], **{field: value})
        nbformat.write(nb, path)
    return make


def _partial_metadata(course):
    path = course / "notebooks" / "00_one.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.metadata["bertlab"] = {"minutes": 5}
    nbformat.write(nb, path)


def _huge(course):
    path = course / "notebooks" / "02_huge.ipynb"
    path.write_text("")
    os.truncate(path, 300 * 1024 * 1024)                  # sparse: nothing is written


BAD_COURSES = {
    "minutes not a number": (_metadata("read_minutes", "abc"), '"bertlab"].read_minutes must be a whole number'),
    "prerequisites not a list": (_metadata("prerequisites", 5), '"bertlab"].prerequisites must be a list'),
    "path not core or optional": (_metadata("path", "<b>"), "path is '<b>', not one of core, optional"),
    "metadata that is not complete": (_partial_metadata, '"bertlab"] lacks title'),
    "README not UTF-8": (lambda c: (c / "README.md").write_bytes(b"# x\n\xff"), "README.md is not UTF-8"),
    "glossary not UTF-8": (lambda c: ((c / "docs").mkdir(), (c / "docs" / "glossary.md").write_bytes(b"\xff")),
                           "glossary.md is not UTF-8"),
    "a 300 MB notebook": (_huge, "02_huge.ipynb is 315 MB"),
}


@pytest.mark.parametrize("kind", BAD_COURSES)
def test_a_course_with_a_bad_file_or_field_is_a_one_line_error_naming_it(kind, old_book, tmp_path, capsys):
    course, out, before = old_book
    make, words = BAD_COURSES[kind]
    make(course)
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(course), "--no-execute"]) == 2
    assert words in one_line_error(capsys)
    assert snapshot(out) == before and not leftovers(tmp_path)


def test_a_cache_that_is_a_file_or_an_out_that_cannot_be_written_is_a_one_line_error(old_book, tmp_path, capsys):
    course, out, before = old_book
    nb = nbformat.read(course / "notebooks" / "00_one.ipynb", as_version=4)
    nb.cells.append(new_code_cell("1 + 1"))
    nbformat.write(nb, course / "notebooks" / "00_one.ipynb")
    (tmp_path / "cache").write_text("a file")
    capsys.readouterr()
    assert main(["book", str(out), "--repo", str(course), "--cache", str(tmp_path / "cache")]) == 2
    assert "pass --cache a folder you can write to" in one_line_error(capsys)
    assert snapshot(out) == before and not leftovers(tmp_path)
    assert main(["book", "/proc/bertlab-book-site", "--repo", str(course), "--no-execute"]) == 2
    assert "cannot write the site beside /proc/bertlab-book-site" in one_line_error(capsys)


def test_out_that_is_a_link_a_file_or_someone_elses_folder_is_refused(tmp_path, capsys):
    course = small_course(tmp_path / "course")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file").write_text("mine")
    for target, words in (("link", "is a link"), ("file", "is a file")):
        assert main(["book", str(tmp_path / target), "--repo", str(course), "--no-execute"]) == 2
        assert words in one_line_error(capsys)
    assert (tmp_path / "file").read_text() == "mine" and not any((tmp_path / "real").iterdir())


# ---- the hostile notebook -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    course = make_hostile_course(tmp_path_factory.mktemp("hostile"))
    return build(tmp_path_factory.mktemp("site") / "book", course, execute=False)


class Elements(HTMLParser):
    """Every start tag with its attributes, and every script element with its type, src and text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[dict] = []
        self._script: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script = {"type": attrs.get("type", ""), "src": attrs.get("src", ""), "text": ""}

    def handle_data(self, data):
        if self._script is not None:
            self._script["text"] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append(self._script)
            self._script = None


def parse(page: str) -> Elements:
    e = Elements()
    e.feed(page)
    return e


def test_nothing_the_hostile_notebook_brought_can_run_or_fetch(hostile):
    for name in hostile.pages:
        page = (hostile.out / name).read_text(encoding="utf-8")
        e = parse(page)
        csp = [a.get("content", "") for t, a in e.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert len(csp) == 1 and "frame-src 'none'" in csp[0] and "object-src 'none'" in csp[0], name
        assert "http" not in csp[0] and "*" not in csp[0], csp                # nothing outside the site allowed
        for tag, attrs in e.tags:
            assert tag not in ("iframe", "object", "embed", "base", "frame", "style", "link") or (
                tag == "link" and attrs.get("href", "").startswith("_static/")), (name, tag, attrs)
            assert tag != "meta" or "refresh" not in attrs.get("http-equiv", "").lower(), (name, attrs)
            assert tag != "form" or attrs.get("action") == "search.html", (name, attrs)
            for key, value in attrs.items():
                assert not key.startswith("on"), (name, tag, key, value)
                assert key not in ("srcset", "formaction", "xlink:href"), (name, tag, key)
                if key in ("href", "src", "action", "data", "poster"):
                    v = re.sub(r"\s", "", value).lower()
                    assert not v.startswith(("javascript:", "vbscript:")), (name, tag, key, value)
                    assert "evil.example" not in v, (name, tag, key, value)
                    assert not (key == "href" and v.startswith("data:")), (name, tag, key, value)
                    if key == "src":                   # what loads as the page opens: the site's files or inline data
                        assert v.startswith(("_static/", "data:image/")) or not re.match(r"[a-z]+:|//", v), value
                if key == "style":
                    assert "url(" not in value.lower() and "@import" not in value.lower(), (name, value)
        for script in e.scripts:
            if script["src"]:
                assert script["src"].startswith("_static/") and not script["text"].strip(), script["src"]
            elif script["type"] == "application/json":
                assert "<" not in script["text"] and ">" not in script["text"]
                json.loads(script["text"])
            else:                                      # the only inline code: the bertviz view bertlab drew
                assert "bertviz-" in script["text"] and "__pwned" not in script["text"], script["text"][:200]
        assert "__pwned" not in "".join(s["text"] for s in e.scripts if s["type"] != "application/json"), name


def test_the_hostile_notebooks_legitimate_outputs_are_still_shown(hostile):
    page = (hostile.out / "00_hostile.html").read_text(encoding="utf-8")
    counts = hostile.counts["00_hostile.html"]
    assert counts["plotly"] == 4 and counts["widgets"] == 1 and counts["maths"] >= 1
    e = parse(page)
    figures = [json.loads(s["text"]) for s in e.scripts if s["type"] == "application/json"]
    assert [f["layout"].get("title", {}).get("text") for f in figures] == ["two bars", "<!--<script> swallowed",
                                                                           "wide", "two bars"]
    hostile_fig = figures[1]                           # its strings are data, kept as written
    assert hostile_fig["data"][0]["x"][0] == HOSTILE_FIGURE["data"][0]["x"][0]
    assert [t["type"] for t in hostile_fig["data"]] == ["bar"] and hostile_fig["layout"]["images"] == []
    assert hostile_fig["config"] == {}
    assert "map trace(s) left out" in page and "layout image(s) left out" in page
    inline = [s for s in e.scripts if not s["src"] and s["type"] != "application/json"]
    from hostile_book import real_head_view
    if real_head_view() is not None:
        assert counts["attention_views"] == 1 and len(inline) == 1         # the real view; the fake one is gone
    assert "<i>kept</i>" in page and "<b>bold</b>" in page                    # sanitized HTML keeps its markup
    assert 'class="w-value">3<' in page                                        # the widget's slider as it was set
    assert '<img alt="figure" src="data:image/svg+xml;base64,' in page        # the SVG, as an image
    assert "data:image/jpeg;base64,/9j/4AAQ" in page
    assert "an image output whose data is not base64 is left out" in page
    assert 'style="color: red"' in page or 'style="color:red"' in page        # a style keeps what cannot fetch
    assert 'href="01_plain.html"' in page and 'href="https://example.com/fine"' in page
    assert "NBVAL_CHECK_OUTPUT" not in page and "show_everything" in page    # test plumbing hidden from the code
    assert 'src="_static/katex/katex.min.js"' in page and 'href="_static/katex/katex.min.css"' in page
    assert "katex" not in (hostile.out / "01_plain.html").read_text()        # no maths, no KaTeX


def test_search_snippets_are_plain_text(hostile, tmp_path):
    course = small_course(tmp_path / "course")
    book = build(tmp_path / "site", course, execute=False)
    text = (book.out / "_static" / "search-index.js").read_text(encoding="utf-8")
    entries = json.loads(text[len("window.BOOK_INDEX = "):-2])
    assert {"heading": "Part", "text": "Some bold code and a link."}.items() <= entries[-1].items()
    hostile_entries = (hostile.out / "_static" / "search-index.js").read_text(encoding="utf-8")
    for e in json.loads(hostile_entries[len("window.BOOK_INDEX = "):-2]):
        assert not re.search(r"<[A-Za-z/!]|\*\*|\]\(https?:", e["text"]), e["text"]      # no tag, bold or link markup


# ---- the pieces -------------------------------------------------------------------------------------------------

def test_a_widget_state_whose_boxes_hold_themselves_draws_once_and_stops():
    from bertlab.book.render import Renderer

    box = {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_b"] * 10}}
    nb = new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"b": box}}}})
    out = Renderer(nb, {}, "live").widget("b", {})
    assert out.count("w-hbox") <= 2001 and "live" in out


@pytest.mark.parametrize("markup, gone, kept", [
    ('<a href="javascript:alert(1)">x</a>', "javascript", "x</a>"),
    ('<a href=" jAvAsCrIpT:alert(1)">x</a>', "alert", "x</a>"),
    ('<img src="x" onerror="alert(1)">', "onerror", '<img src="x">'),
    (f'<img src="{EVIL}/a.png">', "evil", "<img>"),
    ('<img src="//evil.example/a.png">', "evil", "<img>"),
    ('<img src="data:image/png;base64,AAAA&quot; onerror=&quot;alert(1)">', "onerror", "<img>"),
    ('<img src="data:text/html;base64,AAAA">', "text/html", "<img>"),
    ('<div style="color:red;background:url(http://e/x)">a</div>', "url(", 'style="color:red"'),
    ("<p id=\"plotly-3\">a</p><p id=\"BOOK_READY\">b</p><p id=\"mine\">c</p>", "plotly-3", 'id="mine"'),
    ("<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>", "iframe", ""),
    ("<svg><animate onbegin=alert(1) attributeName=x dur=1s>", "onbegin", ""),
    ("<a href=\"data:text/html,hi\">d</a>", "data:", "d</a>"),
    # a relative path above the site's folder is a file outside the site when the book opens from disk
    ('<img src="../../../../etc/passwd">', "passwd", "<img>"),
    ('<img src="figs/../../x.png">', "x.png", "<img>"),
    ('<img src="%2e%2e/x.png">', "x.png", "<img>"),
    ('<img src="figs/a.png#z">', "evil", '<img src="figs/a.png#z">'),
])
def test_clean_html(markup, gone, kept):
    out = clean_html(markup)
    assert gone not in out and kept in out, out


def test_image_payloads_must_be_base64_and_json_in_a_script_cannot_end_it():
    assert image_src("image/png", "iVBORw0K\nGgo=") == "data:image/png;base64,iVBORw0KGgo="
    assert image_src("image/png", ["iVBO", "Rw0KGgo="]) == "data:image/png;base64,iVBORw0KGgo="
    for bad in ('AAAA" onerror="x', "AAA", "", None, 3, "AA=A", "<svg>"):
        assert image_src("image/png", bad) is None, bad
    for s in ("</script>", "<!--", "<script", "</SCRIPT >", "a&b", "\u2028"):
        text = script_json({"s": s})
        assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
        assert json.loads(text) == {"s": s}
    with pytest.raises(ValueError):
        script_json({"x": float("nan")})
    fig, notes = clean_plotly("not a figure")
    assert fig == {"data": [], "layout": {}} and notes


def test_the_vendored_katex_is_the_npm_package_as_vendor_md_lists_it():
    listed = dict(line.split()[::-1] for line in re.findall(r"^[0-9a-f]{64}  \S+$",
                                                             (KATEX / "VENDOR.md").read_text(), re.M))
    assert "katex.min.js" in listed and "LICENSE" in listed and len([k for k in listed if k.endswith(".woff2")]) == 20
    for name, digest in listed.items():
        assert hashlib.sha256((KATEX / name).read_bytes()).hexdigest() == digest, name
    css = (KATEX / "katex.min.css").read_text()
    for font in re.findall(r"url\((fonts/[^)]+)\)", css):
        assert (KATEX / font).is_file(), font                   # every font the css names is shipped
    assert "0.19.1" in (KATEX / "VENDOR.md").read_text() and "MIT" in (KATEX / "LICENSE").read_text()
    assert not re.search(r"https?://(?!www\.w3\.org)", (KATEX / "katex.min.js").read_text()
                         + (KATEX / "auto-render.min.js").read_text() + css)


def test_a_figure_wider_than_the_column_is_fitted_by_the_page_script():
    js = (Path(book_module.__file__).parent / "static" / "book.js").read_text()
    assert "function fitted(" in js and "fitted(fig.layout" in js and "delete layout.width" in js


def test_a_notebook_marker_line_is_not_shown_but_the_code_is():
    from bertlab.book.render import without_test_markers

    assert without_test_markers("# NBVAL_CHECK_OUTPUT\nprint(1)") == "print(1)"
    assert without_test_markers("x = 1\n  # NBVAL_SKIP\ny") == "x = 1\ny"
    assert without_test_markers("print('# NBVAL_CHECK_OUTPUT')") == "print('# NBVAL_CHECK_OUTPUT')"



# ---- a bertlab view's saved state: the book runs the package's module, never the notebook's -------------

def test_a_saved_view_runs_the_packages_module_with_its_html_cleaned():
    from bertlab.book.sanitize import trusted_view
    from bertlab.viz.views.base import esm

    entry = {"model_name": "AnyModel", "buffers": [{"path": ["plotly_js"], "data": "YWxlcnQoMSk="}],
             "state": {"_esm": "window.__pwned = 1; export default {}", "module": "view", "plotly_js": "alert(1)",
                       "nodes": {"a": {"kind": "html", "value": '<b>ok</b><img src=x onerror="window.__pwned=1">'},
                                 "b": {"kind": "label", "value": "<script>window.__pwned=1</script>"}},
                       "content": {"p": {"rev": 1, "html": '<script>window.__pwned=1</script><i>kept</i>'},
                                   "f": {"rev": 1, "figure": {"data": [], "layout": {
                                       "images": [{"source": "https://example.com/x.png"}]},
                                       "config": {"toImageButtonOptions": {"x": 1}}}}}}}
    view = trusted_view(entry)
    state = view["state"]
    assert state["_esm"] == esm("view") and "__pwned" not in state["_esm"]
    assert "onerror" not in state["nodes"]["a"]["value"] and "<b>ok</b>" in state["nodes"]["a"]["value"]
    assert "<script" not in state["content"]["p"]["html"] and "<i>kept</i>" in state["content"]["p"]["html"]
    assert state["content"]["f"]["figure"]["layout"]["images"] == [] and state["content"]["f"]["figure"]["config"] == {}
    assert state["plotly_js"] == "" and view["buffers"] == []


@pytest.mark.parametrize("module", ["runtime", "page", "../../etc/passwd", "nosuchview", 3, None])
def test_a_saved_view_naming_a_module_the_package_lacks_is_not_run(module):
    from bertlab.book.sanitize import trusted_view

    assert trusted_view({"model_name": "AnyModel", "state": {"_esm": "x", "module": module, "nodes": {}}}) is None


def test_a_markdown_image_attachment_is_shown_and_a_missing_one_is_not_a_traceback(tmp_path, capsys):
    """`![](attachment:x)` with no such attachment raised nbconvert's InvalidNotebook through the command."""
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    pasted = new_markdown_cell("![pasted](attachment:p.png) and ![gone](attachment:nope.png)")
    pasted["attachments"] = {"p.png": {"image/png": png}}
    course = small_course(tmp_path / "course", [pasted, new_code_cell("1", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/markdown": "![out](attachment:other.png)"})])])
    assert main(["book", str(tmp_path / "site"), "--repo", str(course), "--no-execute"]) == 0, capsys.readouterr().err
    page = (tmp_path / "site" / "00_one.html").read_text()
    assert f'src="data:image/png;base64,{png}"' in page and 'alt="gone"' in page and 'alt="out"' in page
