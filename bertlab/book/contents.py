"""The book's table of contents: the lessons, their map (prerequisites, minutes, core or optional) and their
exercises, read from what exists when the book is built.

Nothing here is a second copy of the course: every fact comes from the notebooks or the README, so a lesson
added, renamed or re-timed by its author appears correctly in the next build without touching this file.
Where a fact is written, in order of precedence:

- a notebook's own metadata, `metadata["bertlab"]`, as bertlab/course/lessons.py reads it (prerequisites,
  read minutes, path): bertlab's lessons all have it, and their README table and openings are written from it;
- for another course's notebooks without it, the notebook's opening cells: `Prerequisites: 04 (masked LM),
  05 …` (bold or not) and `**Time:** about 25 minutes …` (the first number before "min" is the reading time);
- the README: a "Start here" section naming the core path and the optional notebooks by number, in prose or
  in a table whose "read" column gives each lesson's minutes (these win over the notebook's: they are the
  map's), and the notebook table (`| \\`04_masked_lm\\` | what you see | widget |`), whose middle column is the
  lesson's summary.

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
    from_metadata: bool = False                              # its facts come from metadata["bertlab"]

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
        lessons.append(read_lesson(path, read_notebook(path)))
    if not lessons:
        raise FileNotFoundError(f"{notebooks} holds no lesson notebooks (files named like 00_tour.ipynb)")
    return lessons


# a notebook larger than this is not read (an executed lesson with its figures is a few MB)
MAX_NOTEBOOK_BYTES = 256 * 1024 * 1024


def read_notebook(path: Path, validate: bool = True):
    """The notebook at `path`, or a one-line error naming the file and what is wrong with it: not a regular
    file (a folder, a device, a link to one), too large, not JSON, or JSON that is not a notebook.
    `validate=False` skips nbformat's schema check (for executed copies, whose outputs come from a kernel's
    messages and may carry fields the schema does not list; the renderer reads them defensively)."""
    path = Path(path)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "missing" if not path.exists() else "not a regular file"
        raise ValueError(f"{path} is {what}, not a notebook: a lesson is a .ipynb file (move it out of the "
                         "notebooks folder)")
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{path} is {size / 1e6:.0f} MB, more than a notebook the book reads "
                         f"({MAX_NOTEBOOK_BYTES / 1e6:.0f} MB): clear its outputs (jupyter nbconvert --clear-output)")
    try:
        nb = nbformat.read(path, as_version=4)
        if validate:
            nbformat.validate(nb)
        elif not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
    except nbformat.ValidationError as e:
        first = str(e.message if hasattr(e, "message") else e).splitlines()[0][:200]
        raise ValueError(f"{path} is not a valid notebook ({first}): open it in JupyterLab and save it again, "
                         "or move it out of the notebooks folder") from None
    except (ValueError, UnicodeDecodeError, OSError, AttributeError, TypeError, KeyError) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise ValueError(f"{path} is not a notebook (not Jupyter's JSON: {first}): a lesson is a .ipynb file "
                         "saved by Jupyter") from None
    return nb


def read_text(path: Path) -> str:
    """A text file the book reads (README.md, docs/glossary.md), or a one-line error naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text (byte {e.start}): save it as UTF-8") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read: {e.strerror or e}") from None


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
    text = re.sub(r"[*`#>]|(?<!\w)_+|_+(?!\w)", "", text)      # emphasis marks, not my_attention's underscore
    return " ".join(text.split())


# a lesson number in prose or a table: "04", "04_masked_lm", "notebook 04,"; not "15 min", "80 %", "3.14"
_NUMBER = re.compile(r"(?<![\d.])(\d\d)(?=_[A-Za-z]|\.(?!\d)|[^\w.]|$)(?!\s*(?:min|minutes|%|s\b|h\b|hours?\b))")


def lesson_numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def _first_sentence(text: str, limit: int = 220) -> str:
    """The first sentence, or the first two when the first is a short title ("Agreement. Find the layer …")."""
    m = re.match(r"(.+?[.?!])(\s|$)", text)
    s = m.group(1) if m else text
    if m and len(s) < 40:
        m2 = re.match(r"(.+?[.?!])(\s|$)", text[m.end():])
        s = (s + " " + (m2.group(1) if m2 else text[m.end():])).strip()
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _metadata(path: Path, nb) -> dict:
    """The notebook's `metadata["bertlab"]`, checked: prerequisites a list of lesson numbers, minutes a whole
    number, path "core" or "optional"; anything else is a one-line error naming the file and the field."""
    meta = nb.metadata.get("bertlab", {})
    if not isinstance(meta, dict):
        return {}
    where = f"{path.name}: metadata bertlab"
    pre = meta.get("prerequisites")
    if pre is not None and not (isinstance(pre, list) and all(
            (isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 99)
            or (isinstance(x, str) and re.fullmatch(r"\d\d", x)) for x in pre)):
        raise ValueError(f"{where}.prerequisites must be a list of lesson numbers such as [\"02\", \"04\"], "
                         f"got {pre!r:.60}")
    minutes = meta.get("minutes")
    if minutes is not None and not (isinstance(minutes, int) and not isinstance(minutes, bool) and 0 < minutes < 10_000):
        raise ValueError(f"{where}.minutes must be a whole number of minutes, got {minutes!r:.60}")
    if meta.get("path") not in (None, "core", "optional"):
        raise ValueError(f"{where}.path must be \"core\" or \"optional\", got {meta.get('path')!r:.60}")
    return meta


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

    if isinstance(nb.metadata.get("bertlab"), dict):
        # bertlab's own lessons: the facts as their metadata states them (bertlab/course/lessons.py), no scraping
        from ..course.lessons import read as read_facts

        facts = read_facts(path, nb)
        lesson.prerequisites = [p["lesson"] for p in facts.prerequisites]
        lesson.minutes = facts.read_minutes
        lesson.path_kind = facts.path if facts.path in ("core", "optional") else None
        lesson.from_metadata = True
    else:
        # another course's notebooks without that metadata: what their opening cells say
        pre = re.search(r"\bPrerequisites?\b:?(?:\*\*)?:?\s*(.+?)(?:\*\*|\n\s*\n|$)", opening, re.S | re.I)
        if pre:
            said = pre.group(1)
            lesson.prerequisites = [] if re.match(r"\s*(none|nothing)", said, re.I) else \
                sorted(set(lesson_numbers(said)) - {number})
        time = re.search(r"\bTime\b:?(?:\*\*)?:?\s*(.+?)(?:\*\*|\n\s*\n|$)", opening, re.S)
        if time:
            mins = re.search(r"(\d+)\s*(?:-|–|to)?\s*(?:\d+\s*)?min", time.group(1))
            if mins:
                lesson.minutes = int(mins.group(1))

    lesson.exercises = read_exercises(number, exercise_area(nb.cells), code)
    lesson.widgets = sorted(set(re.findall(r"\b([A-Z][A-Za-z]+(?:Explorer|Playground|Lab|Ablation|Pairs|Search|"
                                           r"Replay|Quiz|Prediction|Predict))\(", code)))
    return lesson


def exercise_area(cells) -> list[str]:
    """The markdown of a lesson's exercises: from its "Exercises" heading to the next heading of the same or a
    higher level, over as many cells as it spans (one cell per exercise is the course's layout)."""
    area, level = [], None
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        source = cell.source
        if level is None:
            head = re.search(r"^(#{1,4})\s*[^\n]*\bexercises?\b[^\n]*$", source, re.M | re.I)
            if head:
                level = len(head.group(1))
                source = source[head.end():]
            else:
                continue
        stop = re.search(rf"^#{{1,{level}}}\s", source, re.M)
        if stop:
            area.append(source[: stop.start()])
            break
        area.append(source)
    return area


def read_exercises(number: str, area: list[str], code: str) -> list[Exercise]:
    """The exercises of a lesson from the markdown of its exercises area: items that open with their id in
    bold (**04.3** · difficulty ●●○ · … then the task), or numbered items / ### sub-headings. An exercise
    counts as checked when the lesson calls check("NN.k", …) or its tags say "checkable"."""
    body = "\n\n".join(area)
    checked = set(re.findall(r"""check\(\s*["'](\d\d\.\d+)["']""", code + "\n" + body))
    found: list[Exercise] = []
    tagged = list(re.finditer(r"^\*\*(\d\d\.\d+)\*\*[ \t]*(.*)$", body, re.M))
    if tagged:
        for i, m in enumerate(tagged):
            end = tagged[i + 1].start() if i + 1 < len(tagged) else len(body)
            tags = _plain(m.group(2)).strip(" ·-—:")
            text = _first_sentence(_plain(body[m.end(): end]))
            eid = m.group(1)
            found.append(Exercise(id=eid, text=text, tags=tags,
                                  checked=eid in checked or ("checkable" in tags.lower() and "no check" not in tags.lower())))
    else:
        items = re.split(r"^(?:\d+\.\s+|#{2,5}\s+)", body, flags=re.M)[1:]
        for k, item in enumerate(items, 1):
            tags = re.search(r"\(?((?:difficulty|★|☆|⭐)[^)\n]{0,80})\)?", item, re.I)
            text = _plain(item.replace(tags.group(0), "") if tags else item).replace(" .", ".")
            ex_id = re.search(r"\b(\d\d\.\d+)\b", item[:80])
            eid = ex_id.group(1) if ex_id and ex_id.group(1).startswith(number) else f"{number}.{k}"
            found.append(Exercise(id=eid, text=_first_sentence(text), checked=eid in checked,
                                  tags=_plain(tags.group(1)) if tags else ""))
    # a check the prose does not list as an item still counts
    for eid in sorted(checked - {e.id for e in found}):
        if eid.startswith(number + "."):
            found.append(Exercise(id=eid, text="(checked by bertlab.check; see the notebook)", checked=True))
    return found


def read_start_here(readme: Path | None) -> dict[str, str]:
    """{lesson number: "core" | "optional"} from the README's "Start here" section, if it has one.

    A table row names its lesson (`04_masked_lm` or 04) and has a cell that says core or optional; in the
    prose, each paragraph is read left to right, and a lesson number counts for the last of "core" or
    "optional" said before it ("The core path: 00 → 01 → 02. Optional: 06 and 09, and 10 → 11, which need
    the core path up to 07")."""
    if readme is None or not Path(readme).is_file():
        return {}
    text = read_text(readme)
    m = re.search(r"^(#{1,4})\s*Start here[^\n]*\n(.*?)(?=^#{1,4}\s|\Z)", text, re.M | re.S | re.I)
    if not m:
        return {}
    section, paths = m.group(2), {}
    for row in re.findall(r"^\|(.*)\|[ \t]*$", section, re.M):
        cells = [c.strip().strip("`*_ ").lower() for c in row.split("|")]
        numbers = lesson_numbers(cells[0]) if cells else []
        kinds = [c for c in cells[1:] if c in ("core", "optional")]
        if numbers and kinds:
            paths[numbers[0]] = kinds[0]
    prose = re.sub(r"^\|.*$", "", section, flags=re.M)
    keyword = re.compile(r"\b(core|optional)\b", re.I)
    for paragraph in re.split(r"\n\s*\n", prose):
        flat = " ".join(paragraph.split())
        marks = sorted([(k.start(), "kw", k.group(1).lower()) for k in keyword.finditer(flat)]
                       + [(n.start(1), "n", n.group(1)) for n in _NUMBER.finditer(flat)])
        mode = None
        for _, kind, value in marks:
            if kind == "kw":
                mode = value
            elif mode:
                paths.setdefault(value, mode)
    return paths


def read_start_here_minutes(readme: Path | None) -> dict[str, int]:
    """{lesson number: minutes} from the "Start here" section's table, if it has a column whose header says
    "read" (or else "minutes" / "time"): the minutes the map shows for each lesson."""
    if readme is None or not Path(readme).is_file():
        return {}
    text = read_text(readme)
    m = re.search(r"^(#{1,4})\s*Start here[^\n]*\n(.*?)(?=^#{1,4}\s|\Z)", text, re.M | re.S | re.I)
    rows = re.findall(r"^\|(.*)\|[ \t]*$", m.group(2), re.M) if m else []
    if not rows:
        return {}
    header = [c.strip().lower() for c in rows[0].split("|")]
    column = next((i for i, h in enumerate(header) if "read" in h), None)
    if column is None:
        column = next((i for i, h in enumerate(header) if "min" in h or "time" in h), None)
    minutes = {}
    for row in rows[1:] if column is not None else []:
        cells = row.split("|")
        numbers = lesson_numbers(cells[0].strip().strip("`* ")) if cells else []
        found = re.search(r"(\d+)\s*min", cells[column]) if column < len(cells) else None
        if numbers and found:
            minutes[numbers[0]] = int(found.group(1))
    return minutes


def read_readme_table(readme: Path | None) -> dict[str, str]:
    """{slug: what you see} from the README's notebook table (its rows start with | `NN_name` |)."""
    if readme is None or not Path(readme).is_file():
        return {}
    rows = re.findall(r"^\|\s*`(\d\d_[A-Za-z0-9_]+)`\s*\|\s*([^|]+)\|", read_text(readme), re.M)
    return {slug: _plain(what) for slug, what in rows}


def course_map(lessons: list[Lesson], readme: Path | None) -> list[Lesson]:
    """The lessons with the README's facts filled in where the notebooks do not say them."""
    paths, table, minutes = read_start_here(readme), read_readme_table(readme), read_start_here_minutes(readme)
    for lesson in lessons:
        if lesson.number in minutes and not lesson.from_metadata:   # the README's, where no metadata says them
            lesson.minutes = minutes[lesson.number]
        if lesson.path_kind is None and lesson.number in paths:
            lesson.path_kind = paths[lesson.number]
        if lesson.slug in table:
            lesson.summary = table[lesson.slug]
    return lessons
