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
    with pytest.raises(ValueError, match="no notebook 13"):
        bertlab.progress(13)
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
