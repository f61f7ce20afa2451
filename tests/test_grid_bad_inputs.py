"""A grid that cannot hang or lie: a dead worker is an error naming its job (finished rows kept), each job gets
its own copy of the settings, seeds are distinct whole numbers, a diverged seed is recorded and counted, an
`out` in use is refused, a result a card cannot hold is an error before its row is written, and settings
that do not survive JSON are refused up front."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from experiment_runs import dies, diverges, mutating, noisy, raises, unstorable

import bertlab
from bertlab.experiments import JobFailed, read_rows
from bertlab.experiments.grid import LOCK
from testkit import toy_run

HERE = os.path.dirname(__file__)


# ---- workers that die ----------------------------------------------------------------------------------

@pytest.mark.parametrize("how, words", [("exit", "exited with code 3"), ("kill", "killed by SIGKILL")])
def test_a_dead_worker_is_an_error_naming_its_job_and_the_finished_rows_are_kept(tmp_path, how, words):
    variants = {"a": {"die_at": 2, "how": how}}
    with pytest.raises(JobFailed, match=rf"job \('a', seed 2\).*{words}.*kept"):
        bertlab.experiment(dies, variants, seeds=[0, 1, 2, 3], out=tmp_path, jobs=2)
    kept = {r["seed"] for r in read_rows(tmp_path)}
    assert 2 not in kept and {0, 1} <= kept
    # the run fixed, the grid resumes with what is missing
    card = bertlab.experiment(dies, {"a": {"die_at": 99, "how": how}}, seeds=[0, 1, 2, 3], out=tmp_path / "b")
    assert [r["seed"] for r in card["rows"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_job_that_raises_is_named(tmp_path, jobs):
    with pytest.raises(JobFailed, match=r"job \('a', seed 0\) raised RuntimeError: boom at seed 0"):
        bertlab.experiment(raises, {"a": {}}, seeds=[0, 1], out=tmp_path, jobs=jobs)


# ---- settings: a copy per job; JSON round-trip up front -------------------------------------------------

def test_a_run_that_edits_its_nested_settings_changes_no_other_job(tmp_path):
    variants = {"a": {"opt": {"lr": 1.0}}}
    one = bertlab.experiment(mutating, variants, seeds=[10, 100, 1000], out=tmp_path / "one", jobs=1)
    two = bertlab.experiment(mutating, variants, seeds=[10, 100, 1000], out=tmp_path / "two", jobs=2)
    assert [r["result"] for r in one["rows"]] == [r["result"] for r in two["rows"]]
    assert [r["result"]["lr"] for r in one["rows"]] == [10.0, 10.0, 10.0]
    assert variants == {"a": {"opt": {"lr": 1.0}}} and one["variants"]["a"]["settings"] == {"opt": {"lr": 1.0}}


@pytest.mark.parametrize("settings, words", [
    ({"t": (1, 2)}, "'t'"), ({"x": float("nan")}, "'x'"), ({"f": print}, "'f'"), ({1: 2}, "setting name 1"),
    ({"inf": float("inf")}, "'inf'"), ({"s": {1, 2}}, "'s'"), ({"d": {1: "a"}}, "'d'")])
def test_settings_that_do_not_survive_json_are_refused_before_any_run(tmp_path, settings, words):
    with pytest.raises(ValueError, match=rf"variant 'a'.*{words}"):
        bertlab.experiment(toy_run, {"a": settings}, seeds=[0], out=tmp_path)
    assert not (tmp_path / "rows.jsonl").exists()


# ---- seeds --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seeds, words", [
    ("012", "list of distinct whole numbers"), ((s for s in [0, 1]), "list of distinct"), (3, "list of distinct"),
    ([0, 0, 1], "seed 0 is given twice"), ([0, float("nan")], "not a whole number"), ([True, 2], "not a whole number"),
    ([0.5], "not a whole number"), (["1"], "not a whole number"), ([-1], "outside"), ([2 ** 64], "outside"),
    ([], "has no seeds"), (None, "has no seeds"), ({0: 1}, "list of distinct")])
def test_seeds_must_be_a_list_of_distinct_whole_numbers(tmp_path, seeds, words):
    with pytest.raises(ValueError, match=words):
        bertlab.experiment(toy_run, {"a": {"lr": 0.1}}, seeds=seeds, out=tmp_path)


def test_seeds_may_be_a_tuple_or_range_and_a_variant_may_have_its_own(tmp_path):
    card = bertlab.experiment(noisy, {"a": {}, "b": {"settings": {}, "seeds": (5,)}}, seeds=range(2), out=tmp_path)
    assert [(r["variant"], r["seed"]) for r in card["rows"]] == [("a", 0), ("a", 1), ("b", 5)]


@pytest.mark.parametrize("variants, words", [
    ({"a @ b": {}}, "' @ '"), ({1: {}}, "variant name 1"), ({"": {}}, "variant name"), ([{}], "non-empty dict")])
def test_bad_variant_names_say_what_a_name_is(tmp_path, variants, words):
    with pytest.raises(ValueError, match=words):
        bertlab.experiment(noisy, variants, seeds=[0], out=tmp_path)


@pytest.mark.parametrize("kw, words", [({"jobs": 0}, "jobs"), ({"jobs": True}, "jobs"), ({"jobs": 1.5}, "jobs"),
                                       ({"shard": (0, 2)}, "shard"), ({"shard": "1/2"}, "shard"),
                                       ({"shard": (1.0, 2)}, "shard"), ({"reference": "z"}, "reference 'z'"),
                                       ({"data": ["/dev/zero"]}, "not a regular file"),
                                       ({"notes": {"x": object()}}, "notes"), ({"notes": "x"}, "notes must be a dict"),
                                       ({"name": 3}, "name must be"), ({"out": None}, "out must be a folder path"),
                                       ({"data": [None]}, "data must be a list of paths")])
def test_bad_keywords_say_what_to_pass(tmp_path, kw, words):
    with pytest.raises(ValueError, match=words):
        bertlab.experiment(noisy, {"a": {}}, seeds=[0], **{"out": tmp_path, **kw})


def test_a_run_that_is_neither_a_function_nor_a_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="run must be a function"):
        bertlab.experiment(3, {"a": {}}, seeds=[0], out=tmp_path)
    with pytest.raises(ValueError, match="not importable by a worker"):
        bertlab.experiment(lambda s, seed: {"x": 1.0}, {"a": {}}, seeds=[0, 1], out=tmp_path, jobs=2)


# ---- results: diverged recorded and counted; unstorable refused before the row -----------------------

def test_a_non_finite_result_is_recorded_and_the_summary_counts_the_diverged_seeds(tmp_path):
    card = bertlab.experiment(diverges, {"a": {}}, seeds=[0, 1, 2], out=tmp_path)
    assert card["rows"][1]["result"]["loss"] == "nan"
    cell = card["summary"]["a"]["loss"]
    assert cell["n"] == 2 and cell["diverged"] == 1 and cell["mean"] == 1.0
    assert "diverged" not in card["summary"]["a"]["acc"]
    json.loads((tmp_path / "card.json").read_text(), parse_constant=lambda c: pytest.fail(f"bare {c} in the card"))
    from bertlab.experiments.commands import format_summary
    assert "1 of 3 seeds diverged" in format_summary(card)


@pytest.mark.parametrize("kind, words", [("tensor", r"\['x'\] is a Tensor.*float\(x\)"), ("object", "is a object"),
                                         ("keys", "key 1"), ("scalar", "not a dict of metrics"),
                                         ("empty_list", "not a dict of metrics"), ("no_step", r"\[0\].*\"step\""),
                                         ("tensor", "is a Tensor"),
                                         # JSON would store a None key as "null", so replay never matched it
                                         ("none_key", "key None"),
                                         # beyond any float: the summary raised OverflowError averaging it
                                         ("huge_int", "larger than any float")])
def test_a_result_a_card_cannot_hold_is_an_error_before_its_row_is_written(tmp_path, kind, words):
    jobs = 2 if words == "is a Tensor" else 1          # in a worker too (once: each start costs seconds)
    with pytest.raises(JobFailed, match=words):
        bertlab.experiment(unstorable, {"a": {"kind": kind}}, seeds=[0, 1], out=tmp_path, jobs=jobs)
    assert read_rows(tmp_path) == []
    card = bertlab.experiment(noisy, {"a": {}}, seeds=[0, 1], out=tmp_path)     # the folder still works
    assert len(card["rows"]) == 2


# ---- rows.jsonl --------------------------------------------------------------------------------------

def test_a_malformed_line_of_rows_jsonl_names_the_file_and_line(tmp_path):
    bertlab.experiment(noisy, {"a": {}}, seeds=[0, 1], out=tmp_path)
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    (tmp_path / "rows.jsonl").write_text(lines[0] + "\n{oops\n" + lines[1] + "\n")
    with pytest.raises(ValueError, match=r"rows\.jsonl: line 2 is not a JSON object"):
        bertlab.experiment(noisy, {"a": {}}, seeds=[0, 1], out=tmp_path)
    (tmp_path / "rows.jsonl").write_text(lines[0] + "\n[1, 2]\n")
    with pytest.raises(ValueError, match=r"line 2 is not a row"):
        read_rows(tmp_path)


def test_a_half_written_last_line_is_dropped_so_the_next_row_has_a_line_of_its_own(tmp_path):
    full = bertlab.experiment(noisy, {"a": {}}, seeds=[0, 1, 2], out=tmp_path / "full")
    lines = (tmp_path / "full" / "rows.jsonl").read_text().splitlines()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "rows.jsonl").write_text(lines[0] + "\n" + lines[1][:30])
    card = bertlab.experiment(noisy, {"a": {}}, seeds=[0, 1, 2], out=tmp_path / "cut")
    assert card["rows"] == full["rows"] or [r["result"] for r in card["rows"]] == [r["result"] for r in full["rows"]]
    assert len(read_rows(tmp_path / "cut")) == 3          # every line parses again


# ---- the out folder ------------------------------------------------------------------------------------

def test_a_second_experiment_on_the_same_out_is_refused_naming_the_lock(tmp_path):
    out = tmp_path / "out"
    code = ("import sys, time; sys.path.insert(0, %r); import bertlab; from experiment_runs import noisy\n"
            "from bertlab.experiments import grid\n"
            "with grid._locked(grid.Path(%r)):\n    print('locked', flush=True); time.sleep(60)\n") % (HERE, str(out))
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FileExistsError, match=rf"in use by another experiment.*{LOCK}.*pid {holder.pid}"):
            bertlab.experiment(noisy, {"a": {}}, seeds=[0], out=out)
        assert not (out / "rows.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert len(bertlab.experiment(noisy, {"a": {}}, seeds=[0], out=out)["rows"]) == 1   # a dead holder's lock is free


def test_an_out_that_is_or_lies_under_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    for out in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(NotADirectoryError, match="is a file"):
            bertlab.experiment(noisy, {"a": {}}, seeds=[0], out=out)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_without_a_name_a_card_can_record_is_one_error(tmp_path, jobs):
    """A functools.partial has no __qualname__: the card's 'module:function' raised AttributeError."""
    import functools
    with pytest.raises(ValueError, match="defined with def.*got a partial"):
        bertlab.experiment(functools.partial(noisy), {"a": {}}, seeds=[0, 1], out=tmp_path, jobs=jobs)
    assert not (tmp_path / "rows.jsonl").exists()
