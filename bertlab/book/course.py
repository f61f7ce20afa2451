"""The course as the book shows it: the lessons, their map (prerequisites, minutes, core or optional) and
their exercises, read from what exists when the book is built.

Nothing here is a second copy of the course: every fact comes from the notebooks or the README, so a lesson
added, renamed or re-timed by its author appears correctly in the next build without touching this file.
Where a fact is written, in order of precedence:

- a notebook's own metadata, `metadata["bertlab"]` with `prerequisites`, `minutes`, `path` ("core" or
  "optional") — for authors who prefer data to prose;
- the notebook's opening cells: a line `**Prerequisites:** 04 (masked LM), 05 …` and `**Time:** about 25
  minutes …` (the first number before "min" is the reading time);
- the README: a "Start here" section naming the core path and the optional notebooks by number, and the
  notebook table (`| \\`04_masked_lm\\` | what you see | widget |`), whose middle column is the lesson's summary.

A fact found nowhere is left out of the map rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

# a lesson's file: two digits, an underscore, a name (00_tour.ipynb); anything else in notebooks/ is not a lesson
LESSON_FILE = re.compile(r"^(\d\d)_([A-Za-z0-9_]+)\.ipynb$")
GLOSSARY_NAMES = ("glossary.ipynb", "00_glossary.ipynb")


@dataclass
class Exercise:
    """One exercise as a teacher sees it: its id ("04.3"), its first sentence, and whether bertlab.check
    has a check for it (a code cell of the lesson calls check("04.3", …))."""
    id: str
    text: str
    checked: bool = False
    tags: str = ""            # difficulty, importance, minutes, as the notebook writes them (may be empty)


@dataclass
class Lesson:
    path: Path
    number: str               # "04"
    slug: str                 # "04_masked_lm": the page is slug + ".html"
    title: str                # the first heading, "04 · Masked language modelling: hide a word, predict it"
    summary: str = ""
    prerequisites: list[str] = field(default_factory=list)   # lesson numbers, "04"
    minutes: int | None = None
    path_kind: str | None = None                             # "core", "optional" or None (not said anywhere)
    exercises: list[Exercise] = field(default_factory=list)
    widgets: list[str] = field(default_factory=list)         # bertlab widget classes the lesson builds

    @property
    def page(self) -> str:
        return self.slug + ".html"

    @property
    def notebook(self) -> str:
        return self.path.name


def find_lessons(notebooks: Path) -> list[Lesson]:
    """Every lesson notebook in `notebooks` (NN_name.ipynb), in course order, with what its cells say."""
    notebooks = Path(notebooks)
    if not notebooks.is_dir():
        raise FileNotFoundError(f"no notebooks folder at {notebooks}: pass the folder that holds the lessons "
                                "(the repository's notebooks/)")
    lessons = []
    for path in sorted(notebooks.glob("*.ipynb")):
        m = LESSON_FILE.match(path.name)
        if not m or path.name in GLOSSARY_NAMES:
            continue
        lessons.append(read_lesson(path, nbformat.read(path, as_version=4)))
    if not lessons:
        raise FileNotFoundError(f"{notebooks} holds no lesson notebooks (files named like 00_tour.ipynb)")
    return lessons


def find_glossary(repo: Path) -> Path | None:
    """The glossary if the course has one: notebooks/glossary.ipynb or docs/glossary.md."""
    for candidate in [repo / "notebooks" / n for n in GLOSSARY_NAMES] + [repo / "docs" / "glossary.md"]:
        if candidate.is_file():
            return candidate
    return None


def _plain(markdown: str) -> str:
    """Markdown to one line of plain text (for summaries and exercise lines)."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", markdown)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`#>]", "", text)
    return " ".join(text.split())


# a lesson number in prose or a table: "04", "04_masked_lm", "notebook 04,"; not "15 min", "80 %", "3.14"
_NUMBER = re.compile(r"(?<![\d.])(\d\d)(?=_[A-Za-z]|\.(?!\d)|[^\w.]|$)(?!\s*(?:min|minutes|%|s\b|h\b|hours?\b))")


def lesson_numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def _first_sentence(text: str, limit: int = 220) -> str:
    m = re.match(r"(.+?[.?!])(\s|$)", text)
    s = m.group(1) if m else text
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def read_lesson(path: Path, nb) -> Lesson:
    m = LESSON_FILE.match(path.name)
    number = m.group(1) if m else path.stem[:2]
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    title = path.stem
    for source in markdown:
        h = re.search(r"^#\s+(.+)$", source, re.M)
        if h:
            title = h.group(1).strip()
            break
    lesson = Lesson(path=path, number=number, slug=path.stem, title=title)

    opening = "\n".join(markdown[:3])
    # the summary: the first paragraph after the title that is prose (not a quote, a list or a heading)
    if markdown:
        for para in re.split(r"\n\s*\n", markdown[0]):
            p = para.strip()
            if p and not p.startswith(("#", ">", "-", "*", "|", "1.")):
                lesson.summary = _first_sentence(_plain(p), 300)
                break

    meta = nb.metadata.get("bertlab", {}) if isinstance(nb.metadata.get("bertlab", {}), dict) else {}
    pre = re.search(r"\*\*Prerequisites?:?\*\*:?\s*(.+?)(?:\*\*|\n\s*\n|$)", opening, re.S | re.I)
    if "prerequisites" in meta:
        lesson.prerequisites = [f"{int(x):02d}" if str(x).isdigit() else str(x) for x in meta["prerequisites"]]
    elif pre:
        said = pre.group(1)
        lesson.prerequisites = [] if re.match(r"\s*(none|nothing)", said, re.I) else \
            sorted(set(lesson_numbers(said)) - {number})
    time = re.search(r"\*\*Time:?\*\*:?\s*(.+?)(?:\*\*|\n\s*\n|$)", opening, re.S | re.I)
    if "minutes" in meta:
        lesson.minutes = int(meta["minutes"])
    elif time:
        mins = re.search(r"(\d+)\s*(?:-|–|to)?\s*(?:\d+\s*)?min", time.group(1))
        if mins:
            lesson.minutes = int(mins.group(1))
    if meta.get("path") in ("core", "optional"):
        lesson.path_kind = meta["path"]

    lesson.exercises = read_exercises(number, markdown, code)
    lesson.widgets = sorted(set(re.findall(r"\b([A-Z][A-Za-z]+(?:Explorer|Playground|Lab|Ablation|Pairs|Search|"
                                           r"Replay|Quiz|Prediction|Predict))\(", code)))
    return lesson


def read_exercises(number: str, markdown: list[str], code: str) -> list[Exercise]:
    """The exercises of a lesson: the numbered items (or ### sub-headings) under its "Exercises" heading.
    An exercise counts as checked when a code cell calls check("NN.k", …) or the prose names check("NN.k")."""
    checked = set(re.findall(r"""check\(\s*["'](\d\d\.\d+)["']""", code + "\n".join(markdown)))
    found: list[Exercise] = []
    for source in markdown:
        head = re.search(r"^(#{1,4})\s*[^\n]*exercises?\b[^\n]*$", source, re.M | re.I)
        if not head:
            continue
        body = source[head.end():]
        # stop at the next heading of the same or a higher level
        stop = re.search(rf"^#{{1,{len(head.group(1))}}}\s", body, re.M)
        body = body[: stop.start()] if stop else body
        items = re.split(r"^(?:\d+\.\s+|#{2,5}\s+)", body, flags=re.M)[1:]
        for k, item in enumerate(items, 1):
            tags = re.search(r"\(?((?:difficulty|★|☆|⭐)[^)\n]{0,80})\)?", item, re.I)
            text = _plain(item.replace(tags.group(0), "") if tags else item).replace(" .", ".")
            ex_id = re.search(r"\b(\d\d\.\d+)\b", item[:80])
            eid = ex_id.group(1) if ex_id and ex_id.group(1).startswith(number) else f"{number}.{k}"
            found.append(Exercise(id=eid, text=_first_sentence(text), checked=eid in checked,
                                  tags=_plain(tags.group(1)) if tags else ""))
        if found:
            break
    # a check the prose does not list as a numbered item still counts
    for eid in sorted(checked - {e.id for e in found}):
        if eid.startswith(number + "."):
            found.append(Exercise(id=eid, text="(checked by bertlab.check; see the notebook)", checked=True))
    return found


def read_start_here(readme: Path | None) -> dict[str, str]:
    """{lesson number: "core" | "optional"} from the README's "Start here" section, if it has one.

    The section's lines that mention "core" name the core path's notebooks by number, lines that mention
    "optional" the optional ones (a line that says both is read as core up to the word "optional")."""
    if readme is None or not Path(readme).is_file():
        return {}
    text = Path(readme).read_text(encoding="utf-8")
    m = re.search(r"^(#{1,4})\s*Start here[^\n]*\n(.*?)(?=^#{1,%d}\s|\Z)" % 4, text, re.M | re.S | re.I)
    if not m:
        return {}
    paths: dict[str, str] = {}
    for line in m.group(2).splitlines():
        low = line.lower()
        if "core" in low:
            part = line[: low.index("optional")] if "optional" in low and low.index("optional") > low.index("core") else line
            for n in lesson_numbers(part):
                paths.setdefault(n, "core")
        if "optional" in low:
            start = low.index("optional")
            rest = line[start:] if "core" in low[:start] else line
            for n in lesson_numbers(rest):
                paths.setdefault(n, "optional")
    return paths


def read_readme_table(readme: Path | None) -> dict[str, str]:
    """{slug: what you see} from the README's notebook table (its rows start with | `NN_name` |)."""
    if readme is None or not Path(readme).is_file():
        return {}
    rows = re.findall(r"^\|\s*`(\d\d_[A-Za-z0-9_]+)`\s*\|\s*([^|]+)\|", Path(readme).read_text(encoding="utf-8"), re.M)
    return {slug: _plain(what) for slug, what in rows}


def course_map(lessons: list[Lesson], readme: Path | None) -> list[Lesson]:
    """The lessons with the README's facts filled in where the notebooks do not say them."""
    paths, table = read_start_here(readme), read_readme_table(readme)
    for lesson in lessons:
        if lesson.path_kind is None and lesson.number in paths:
            lesson.path_kind = paths[lesson.number]
        if lesson.slug in table:
            lesson.summary = table[lesson.slug]
    return lessons
