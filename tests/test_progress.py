"""bertlab.progress(): each answered check is kept in a local file the learner owns; the view shows, per notebook,
which exercises are right; a file that cannot be used never costs a verdict and is never overwritten."""

from __future__ import annotations

import json
import os
import stat
import warnings

import pytest

import bertlab
from bertlab.course import progress as P  # the module (bertlab.progress is its function)
from bertlab.course import registry
from bertlab.files import umask_mode

RIGHT_00_4 = "RTE"           # the instructor pack's answer to 00.4 (solutions/nb00.py), a hashed check: fast


@pytest.fixture
def pfile(tmp_path, monkeypatch):
    path = tmp_path / "home" / "progress.json"
    monkeypatch.setenv("BERTLAB_PROGRESS", str(path))
    P._WARNED.clear()
    return path


def test_each_answered_check_is_kept_and_the_view_shows_it(pfile):
    assert not pfile.exists()
    assert bertlab.progress().right() == []                              # no file yet: nothing right, no error
    assert not bertlab.check("00.4", "CoLA").right
    assert bertlab.check("00.4", RIGHT_00_4).right
    assert not bertlab.check("00.4", None).answered                      # not answered: not an attempt
    data = json.loads(pfile.read_text())
    assert data["format"] == "bertlab-progress" and data["items"]["00.4"]["tries"] == 2
    assert data["items"]["00.4"]["right"] is True and data["items"]["00.4"]["streak"] == 1
    p = bertlab.progress()
    assert p.right() == ["00.4"] and p.counts()["00"] == (1, len(registry.exercises("00")))
    assert set(p.counts()) == {e.notebook for e in registry.exercises()}
    text, page = str(p), p._repr_html_()
    assert "1 of" in text and "✓4" in text and "·1" in text
    assert "✓ 00.4" in page and str(pfile) in page and "<table" in page
    one = bertlab.progress("00")
    assert list(one.rows) == ["00"] and bertlab.progress(0).counts() == one.counts()


def test_a_later_slip_keeps_the_exercise_right_and_resets_its_streak(pfile):
    bertlab.check("00.4", RIGHT_00_4)
    bertlab.check("00.4", "CoLA")
    entry = json.loads(pfile.read_text())["items"]["00.4"]
    assert entry["right"] is True and entry["streak"] == 0 and entry["tries"] == 2
    assert bertlab.progress().right() == ["00.4"]


def test_the_file_goes_in_the_users_data_folder_unless_told(monkeypatch, tmp_path):
    monkeypatch.delenv("BERTLAB_PROGRESS", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if os.name == "posix" and not P.sys.platform == "darwin":
        assert P.progress_path() == tmp_path / "data" / "bertlab" / "progress.json"
    monkeypatch.setenv("BERTLAB_PROGRESS", "~/elsewhere.json")
    assert P.progress_path() == P.Path("~/elsewhere.json").expanduser()


def test_unknown_notebooks_and_wrong_types_say_what_exists(pfile):
    with pytest.raises(ValueError, match="no notebook '99'.*00, 01"):
        bertlab.progress("99")
    with pytest.raises(ValueError, match="no notebook 14"):     # 13 has checkable exercises since issue 31
        bertlab.progress(14)
    with pytest.raises(TypeError, match="'04' or 4"):
        bertlab.progress(4.0)
    with pytest.raises(TypeError, match="'04' or 4"):
        bertlab.progress(True)


BAD_FILES = {
    "not JSON": (lambda p: p.write_text("{half a file"), "not JSON"),
    "empty": (lambda p: p.write_text(""), "not JSON"),
    "another program's": (lambda p: p.write_text('{"cells": []}'), "another program"),
    "a JSON list": (lambda p: p.write_text("[1, 2]"), "another program"),
    "newer": (lambda p: p.write_text('{"format": "bertlab-progress", "version": 99, "items": {}}'), "newer bertlab"),
    "damaged entry": (lambda p: p.write_text('{"format": "bertlab-progress", "version": 1, "items": {"00.4": 3}}'),
                      "damaged"),
    "binary": (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "not JSON"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_file_that_is_not_progress_is_named_and_never_overwritten(pfile, case):
    make, words = BAD_FILES[case]
    pfile.parent.mkdir(parents=True)
    make(pfile)
    before = pfile.read_bytes()
    with pytest.raises(P.ProgressFileError, match=words) as e:
        bertlab.progress()
    assert str(pfile) in str(e.value) and "BERTLAB_PROGRESS" in str(e.value) and "\n" not in str(e.value)
    with pytest.warns(UserWarning, match="checked but not kept") as w:
        result = bertlab.check("00.4", RIGHT_00_4)
    assert result.right                                                   # the verdict stands
    assert words in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                    # said once, not at every check
        assert bertlab.check("00.4", RIGHT_00_4).right
    assert pfile.read_bytes() == before                                   # nothing lost


def test_a_link_a_folder_and_a_fifo_are_refused(pfile, tmp_path):
    pfile.parent.mkdir(parents=True)
    target = tmp_path / "someone_elses.json"
    target.write_text("precious")
    pfile.symlink_to(target)
    with pytest.raises(P.ProgressFileError, match="symbolic link"):
        bertlab.progress()
    with pytest.warns(UserWarning, match="symbolic link"):
        assert bertlab.check("00.4", RIGHT_00_4).right
    assert pfile.is_symlink() and target.read_text() == "precious"
    pfile.unlink()
    pfile.mkdir()
    with pytest.raises(P.ProgressFileError, match="is a folder"):
        bertlab.progress()
    with pytest.warns(UserWarning, match="is a folder"):
        assert bertlab.check("00.4", RIGHT_00_4).right
    assert pfile.is_dir() and not any(pfile.iterdir())
    pfile.rmdir()
    os.mkfifo(pfile)
    with pytest.raises(P.ProgressFileError, match="not a regular file"):   # never waits for a writer
        bertlab.progress()


def test_a_planted_lock_link_a_huge_file_and_a_parent_that_is_a_file_are_refused(pfile, tmp_path, monkeypatch):
    pfile.parent.mkdir(parents=True)
    target = tmp_path / "victim"
    target.write_text("keep")
    (pfile.parent / "progress.json.lock").symlink_to(target)
    with pytest.warns(UserWarning, match="symbolic link"):
        assert bertlab.check("00.4", RIGHT_00_4).right
    assert target.read_text() == "keep" and not pfile.exists()
    (pfile.parent / "progress.json.lock").unlink()
    with open(pfile, "wb") as f:
        f.truncate(P.MAX_BYTES + 1)                                           # sparse: no disk used
    with pytest.raises(P.ProgressFileError, match="too large"):
        bertlab.progress()
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("BERTLAB_PROGRESS", str(blocker / "progress.json"))
    with pytest.raises(P.ProgressFileError, match="cannot be read"):
        bertlab.progress()
    with pytest.warns(UserWarning, match="cannot be written"):
        assert bertlab.check("00.4", RIGHT_00_4).right


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX permissions")
def test_a_read_only_folder_keeps_the_verdict_and_says_where_to_write(pfile, monkeypatch):
    bertlab.check("00.4", "CoLA")
    before = pfile.read_bytes()
    mode = pfile.parent.stat().st_mode
    pfile.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0:                     # root writes anywhere: make the write fail as it would for a user

        def refuse(path, text):
            raise PermissionError(13, "Permission denied", str(path))
        monkeypatch.setattr(P, "replace_text", refuse)
    try:
        with pytest.warns(UserWarning, match="cannot be written.*BERTLAB_PROGRESS"):
            assert bertlab.check("00.4", RIGHT_00_4).right
        assert bertlab.progress().right() == []                           # still readable
    finally:
        pfile.parent.chmod(mode)
    assert pfile.read_bytes() == before and not [p for p in pfile.parent.iterdir() if p.name.endswith(".tmp")]


def test_the_write_is_atomic_and_follows_the_umask(pfile):
    bertlab.check("00.4", "CoLA")
    assert stat.S_IMODE(pfile.stat().st_mode) == umask_mode()
    assert sorted(p.name for p in pfile.parent.iterdir()) == ["progress.json", "progress.json.lock"]


def test_two_processes_checking_at_once_both_count(pfile):
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    if ctx is None:
        pytest.skip("needs fork to share the test's set-up")
    procs = [ctx.Process(target=_ten_tries, args=(str(pfile),)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert json.loads(pfile.read_text())["items"]["00.4"]["tries"] == 20


def _ten_tries(path):
    for _ in range(10):
        P.update("00.4", False, path=P.Path(path))


# ---- review: spaced practice from the progress file -------------------------------------------------------

from datetime import date  # noqa: E402

from bertlab.course import review  # noqa: E402

TODAY = date(2026, 11, 27)


def test_every_lessons_quiz_is_read_from_the_notebook_without_running_it():
    lessons = sorted({e.notebook for e in registry.exercises()})
    for nn in lessons:
        questions = review.quiz_questions(nn)
        assert len(questions) >= 3, nn
        for text, options in questions:
            assert text and sum(bool(o[1]) for o in options) == 1, (nn, text)
    assert review.quiz_questions("99") == ()


def test_with_nothing_kept_the_plan_is_the_core_paths_first_questions(pfile):
    plan = review.plan(today=TODAY)
    assert plan.exercises == () and plan.studied == review.CORE_PATH
    assert plan.questions == ("00.q1", "01.q1", "02.q1", "03.q1", "04.q1")
    assert review.plan(today=TODAY) == plan                                   # ordered, never random
    assert "0 exercise(s) and 5 quiz question(s)" in str(plan) and "<pre" in plan._repr_html_()
    r = plan.check(1, 3)
    assert not r.right and not r.answered and "no exercise is due" in str(r)


def test_wrong_answers_are_due_at_once_and_right_ones_after_their_interval(pfile):
    P.update("04.2", False, when="2026-11-27T09:00:00Z")                     # wrong today: due
    P.update("00.4", True, when="2026-11-26T09:00:00Z")                      # right once, 1 day ago: due (1 day)
    P.update("00.1", True, when="2026-11-25T09:00:00Z")
    P.update("00.1", True, when="2026-11-25T10:00:00Z")                      # right twice, 2 days ago: not yet (3)
    P.update("00.2", True, when="2026-11-27T08:00:00Z")                      # right today: not due
    P.update("00.3", True, when="2026-11-01T08:00:00Z")
    P.update("00.3", False, when="2026-11-20T08:00:00Z")                     # a slip starts the count over: due
    plan = review.plan(today=TODAY)
    assert plan.exercises == ("00.3", "04.2", "00.4")                         # wrong ones first, oldest first
    assert plan.studied == ("00", "04") and plan.questions == ("00.q1", "04.q1", "00.q2", "04.q2", "00.q3")
    assert "00.1" not in review.plan(exercises_due=10, today=TODAY).exercises
    assert review.plan(exercises_due=10, today=date(2026, 11, 28)).exercises == (   # 00.1: 3 days on; 00.2: 1
        "00.3", "04.2", "00.1", "00.4", "00.2")
    assert review.plan(exercises_due=1, questions=0, today=TODAY).exercises == ("00.3",)
    assert not plan.check(3, "CoLA").right and json.loads(pfile.read_text())["items"]["00.4"]["streak"] == 0


def test_the_review_quiz_keeps_the_first_pick_of_each_question(pfile):
    plan = review.plan(questions=2, today=TODAY)
    quiz = plan.quiz()
    right = next(k for k, o in enumerate(quiz.questions[0][1]) if o[1])
    wrong = next(k for k, o in enumerate(quiz.questions[1][1]) if not o[1])
    assert quiz.questions[0][0].startswith("(00.q1) ")
    quiz.answer(0, right)
    quiz.answer(1, wrong)
    items = json.loads(pfile.read_text())["items"]
    assert items["00.q1"]["right"] is True and items["01.q1"]["right"] is False
    assert bertlab.progress().quiz == (1, 2) and "review quiz: 1 of the 2" in str(bertlab.progress())
    assert bertlab.progress("01").quiz == (0, 1) and "review quiz" in bertlab.progress()._repr_html_()
    later = review.plan(today=TODAY)
    assert "00.q1" not in later.questions and later.questions[:2] == ("00.q2", "01.q1")


@pytest.mark.parametrize("kwargs, error, words", [
    ({"exercises_due": -1}, ValueError, "0 to 100"), ({"questions": "5"}, ValueError, "whole number"),
    ({"questions": True}, ValueError, "whole number"), ({"exercises_due": 10**6}, ValueError, "0 to 100"),
    ({"today": "2026-11-27"}, TypeError, "datetime.date")])
def test_bad_plan_arguments_say_what_they_take(pfile, kwargs, error, words):
    with pytest.raises(error, match=words):
        review.plan(**kwargs)


def test_bad_plan_numbers_and_a_bad_file_are_clear(pfile):
    P.update("04.2", False)
    plan = review.plan()
    for bad in (0, 2, True, "1"):
        with pytest.raises(ValueError, match="exercises 1 to 1"):
            plan.check(bad, 20)
    with pytest.raises(ValueError, match="no quiz question is due"):
        review.plan(questions=0).quiz()
    pfile.write_text("not json")
    with pytest.raises(P.ProgressFileError, match="not JSON"):
        review.plan()


def test_the_answer_box_checks_a_typed_answer_and_says_what_is_not_one(pfile):
    plan = review.plan(today=TODAY)
    box = plan.answer_box()
    pick, (text, button), said = box.children[0], box.children[1].children, box.children[2]
    assert pick.options[0][1] == "00.1" and {i for _, i in pick.options} >= {"04.1", "08.1"}   # the core path's
    pick.value = "00.4"
    button.click()
    assert "type your answer to 00.4 first" in said.value
    text.value = "'CoLA'"                                                  # Enter: checked, and kept
    assert "00.4 not yet" in said.value and RIGHT_00_4 not in said.value          # never the answer
    text.value = f"'{RIGHT_00_4}'"
    assert "00.4 right" in said.value
    assert json.loads(pfile.read_text())["items"]["00.4"]["tries"] == 2
    for bad in ("RTE", "lambda x: x", "__import__('os')", "(" * 500):
        text.value = bad
        assert "not a Python value" in said.value and "<script" not in said.value
    text.value = "'<script>alert(1)</script>'"                             # someone else's text is escaped
    assert "<script>" not in said.value
    assert "work through a lesson" in review._answer_in_box(None, "1")


def test_entries_this_version_does_not_know_are_kept_not_shown(pfile):
    pfile.parent.mkdir(parents=True)
    pfile.write_text(json.dumps({"format": "bertlab-progress", "version": 1, "items": {
        "77.1": {"tries": 2, "right": True, "streak": 1, "last_right": "2026-01-01T00:00:00Z"},
        "04.q9": {"tries": 1, "right": False, "streak": 0}}}))
    assert bertlab.progress().right() == []                                   # an exercise of another version
    bertlab.check("00.4", RIGHT_00_4)
    items = json.loads(pfile.read_text())["items"]
    assert set(items) == {"77.1", "04.q9", "00.4"} and items["77.1"]["tries"] == 2     # nothing dropped
    assert review.plan(today=TODAY).studied == ("00", "04")                   # 04.q9: a lesson worked on


# ---- the adversarial round: what a hostile user tried -----------------------------------------------------

def test_an_empty_notebook_name_is_no_notebook(pfile):
    for bad in ("", "  ", "０４"):
        with pytest.raises(ValueError, match="there is no notebook"):
            bertlab.progress(bad)
    assert "04" in str(bertlab.progress(" 4 "))


def test_negative_tries_are_damage_and_a_byte_order_mark_is_read(pfile):
    pfile.parent.mkdir(parents=True)
    pfile.write_text(json.dumps({"format": P.FORMAT, "version": 1, "items": {"04.1": {"tries": -5, "right": False}}}))
    with pytest.raises(P.ProgressFileError, match="'04.1' is damaged"):
        bertlab.progress()
    pfile.write_text("\ufeff" + json.dumps({"format": P.FORMAT, "version": 1,
                                            "items": {"04.1": {"tries": 2, "right": True}}}), encoding="utf-8")
    assert bertlab.progress("04").right() == ["04.1"]


def test_update_takes_only_an_exercise_or_quiz_id_and_a_verdict(pfile):
    for item in (123, "zz", "4.1", "04.q", "04.1\n"):
        with pytest.raises(ValueError, match="item must be an exercise id"):
            P.update(item, True)
    with pytest.raises(ValueError, match="right must be True or False"):
        P.update("04.1", "no")                            # a non-empty str would have counted as right
    assert not pfile.exists()
    P.record("04.1", 1)                                   # check's verdicts of any truthiness are kept as bools
    assert P.load()["items"]["04.1"]["right"] is True


def test_a_version_or_streak_of_the_wrong_type_and_a_parent_that_is_a_file_are_named(pfile, tmp_path, monkeypatch):
    pfile.parent.mkdir(parents=True)
    pfile.write_text(json.dumps({"format": P.FORMAT, "version": "1", "items": {}}))
    with pytest.raises(P.ProgressFileError, match="damaged \\(its \"version\" is '1'"):
        bertlab.progress()
    # a streak or a last try this version never writes: the exercise is simply due again, never a traceback
    pfile.write_text(json.dumps({"format": P.FORMAT, "version": 1, "items": {
        "04.1": {"tries": 1, "right": True, "streak": "x", "last_try": 5},
        "04.2": {"tries": 1, "right": False, "streak": 0, "last_try": "2026-11-27T09:00:00Z"}}}))
    assert set(review.plan(today=date(2026, 11, 27)).exercises) == {"04.1", "04.2"}
    (tmp_path / "plain").write_text("x")
    with pytest.raises(P.ProgressFileError, match="cannot be written: .*plain is a file, not a folder"):
        P.update("04.1", True, path=tmp_path / "plain" / "deeper" / "progress.json")
