"""Lesson facts are written once (each notebook's metadata["bertlab"]) and everything that shows them is
generated: the README's Start-here table, 00's map and each notebook's "Before you start" paragraph agree with
the metadata, or this fails and says to run `python scripts/notebooks.py --lessons`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bertlab.book.contents import find_lessons
from bertlab.course import lessons as L

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def test_readme_map_and_openings_are_what_the_metadata_says():
    stale = L.sync(NOTEBOOKS, ROOT / "README.md")
    assert not stale, "\n".join(stale) + "\nrun: python scripts/notebooks.py --lessons"


def test_every_notebook_has_its_facts_and_prerequisites_name_earlier_lessons():
    lessons = L.lessons(NOTEBOOKS)
    numbered = [le for le in lessons if le.number]
    assert [le.slug for le in lessons] == [p.stem for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))] + ["glossary"]
    for le in numbered:
        assert le.path in ("core", "optional") and le.read_minutes > 0 and le.run["wall_s"] > 0, le.slug
        assert le.exercise_minutes > 0 and le.exercises, f"{le.slug}: no tagged exercises"
        for p in le.prerequisites:
            assert p["lesson"] < le.number, (le.slug, p)
            assert any(x.number == p["lesson"] for x in numbered), (le.slug, p)


def test_the_book_reads_the_same_facts(tmp_path):
    lessons = {le.number: le for le in L.lessons(NOTEBOOKS) if le.number}
    for page in find_lessons(NOTEBOOKS):
        meta = lessons[page.number]
        assert page.prerequisites == [p["lesson"] for p in meta.prerequisites], page.slug
        assert page.minutes == meta.read_minutes and page.path_kind == meta.path, page.slug


def copy_course(tmp_path) -> tuple[Path, Path]:
    folder = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns("*.py", ".ipynb_checkpoints"))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    return folder, readme


def edit_metadata(path: Path, **changes) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["bertlab"].update(changes)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_a_changed_fact_is_found_everywhere_it_shows_and_written_back(tmp_path):
    folder, readme = copy_course(tmp_path)
    edit_metadata(folder / "04_masked_lm.ipynb", read_minutes=99)
    stale = L.sync(folder, readme)
    assert stale == ["00_tour.ipynb: its map says something else than the metadata",
                     "04_masked_lm.ipynb: its opening says something else than the metadata",
                     "README.md: its Start-here table says something else than the metadata"]
    assert L.sync(folder, readme, write=True) == stale
    assert L.sync(folder, readme) == []
    assert "| `04_masked_lm` | core | 37 s (10 s) | 99 min |" in readme.read_text(encoding="utf-8")
    assert "about 99 minutes" in "".join(json.loads((folder / "04_masked_lm.ipynb").read_text())["cells"][1]["source"])


def test_an_opening_edited_by_hand_is_caught(tmp_path):
    folder, readme = copy_course(tmp_path)
    path = folder / "02_input_embeddings.ipynb"
    path.write_text(path.read_text(encoding="utf-8").replace("running every cell took 17 s",
                                                               "running every cell takes about 25 seconds"))
    assert L.sync(folder, readme) == ["02_input_embeddings.ipynb: its opening says something else than the metadata"]


@pytest.mark.parametrize("change,words", [
    ({"path": "extra"}, "path is 'extra', not one of core, optional, reference"),
    ({"bertlab": None}, "has no metadata[\"bertlab\"]"),
])
def test_bad_metadata_says_what_is_wrong(tmp_path, change, words):
    folder, _ = copy_course(tmp_path)
    path = folder / "03_self_attention.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    if "bertlab" in change:
        del nb["metadata"]["bertlab"]
    else:
        nb["metadata"]["bertlab"].update(change)
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(ValueError, match="03_self_attention.ipynb.*" + words.replace("[", r"\[").replace("(", r"\(")):
        L.lessons(folder)


def test_a_missing_fact_is_named(tmp_path):
    folder, _ = copy_course(tmp_path)
    path = folder / "05_next_sentence.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    del nb["metadata"]["bertlab"]["read_minutes"], nb["metadata"]["bertlab"]["outcomes"]
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(ValueError, match=r"05_next_sentence.ipynb's metadata\[\"bertlab\"\] lacks read_minutes, outcomes"):
        L.lessons(folder)


def test_an_empty_folder_says_what_to_pass(tmp_path):
    with pytest.raises(FileNotFoundError, match="no notebooks in"):
        L.lessons(tmp_path)
