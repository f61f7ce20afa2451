"""What a shared experiment card may make this machine do: run only trusted code (bertlab's own studies, or a
module the user allows by name, decided before anything is imported), read only regular files of bounded size,
and "agree" only on numbers recomputed from its rows. Merges refuse what would make a card lie."""

from __future__ import annotations

import json
import os
import sys

import pytest

import bertlab
from bertlab.experiments import JobFailed, merge_cards, read_card, records, replay, write_card
from bertlab.experiments.cards import data_hash
from testkit import toy_run

VARIANTS = {"slow": {"lr": 0.01}, "fast": {"lr": 0.1}}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real card of testkit:toy_run (2 variants × 2 seeds)."""
    out = tmp_path_factory.mktemp("made")
    bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=out)
    return json.loads((out / "card.json").read_text())


def card_with(made, **changes) -> dict:
    card = json.loads(json.dumps(made))
    card.update(changes)
    return card


# ---- a card runs only trusted code ----------------------------------------------------------------------

def test_a_card_naming_subprocess_call_creates_no_file(made, tmp_path):
    target = tmp_path / "PWNED"
    card = card_with(made, run="subprocess:call",
                     variants={"x": {"settings": {"touch": 1, str(target): 2}, "seeds": [0]}}, reference="x",
                     rows=[{"variant": "x", "seed": 0, "result": {"a": 1.0}}])
    with pytest.raises(ValueError, match=r"wants to run 'subprocess:call'.*--allow subprocess"):
        replay(card)
    assert not target.exists()


def test_nothing_is_imported_before_the_decision(made, tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "sideeffect_mod.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef run(s, seed):\n"
                                                "    return {'a': 1.0}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    card = card_with(made, run="sideeffect_mod:run")
    path = write_card(card, tmp_path / "card.json")
    with pytest.raises(ValueError, match="sideeffect_mod"):
        replay(path)
    assert not marker.exists() and "sideeffect_mod" not in sys.modules
    with pytest.raises(ValueError, match="--allow sideeffect_mod"):
        bertlab.experiment("sideeffect_mod:run", {"a": {}}, seeds=[0], out=tmp_path / "x")
    assert not marker.exists() and "sideeffect_mod" not in sys.modules
    # allowed by name, it runs (and is imported then)
    [report] = replay(path, row=0, allow=["sideeffect_mod"])
    assert marker.exists() and report["differences"]


def test_the_own_studies_run_without_allow_and_a_named_module_with_it(made):
    assert all(r["agree"] for r in replay(made, allow=["testkit"]))
    assert all(r["agree"] for r in replay(made, allow="testkit"))          # one name is a list of one
    with pytest.raises(ValueError, match=r"--allow testkit"):
        replay(made)


def test_allowing_a_module_does_not_allow_what_it_imported(made):
    card = card_with(made, run="testkit:json")          # testkit does `import json`: not a function of its own
    with pytest.raises(ValueError, match="no 'json'|not a function defined in testkit"):
        replay(card, allow=["testkit"])
    card = card_with(made, run="testkit:ODD")
    with pytest.raises(ValueError, match="not a function defined in testkit"):
        replay(card, allow=["testkit"])


@pytest.mark.parametrize("run", ["os.system", "a:b:c", "../x:run", "x:os.system", "", ":run", "x:"])
def test_run_names_that_are_not_module_function_are_refused(made, run):
    with pytest.raises(ValueError, match="not a 'module:function' name"):
        replay(card_with(made, run=run), allow=["x", "os"])


@pytest.mark.parametrize("allow", [3, [None], ["a b"], ["../x"], [["testkit"]]])
def test_bad_allow_says_what_to_pass(made, allow):
    with pytest.raises(ValueError, match="allow"):
        replay(made, allow=allow)


def test_a_missing_allowed_module_is_one_clear_error(made):
    with pytest.raises(ValueError, match="no module 'no_such_module_xyz' on the path"):
        replay(card_with(made, run="no_such_module_xyz:run"), allow=["no_such_module_xyz"])


# ---- data paths: regular files only, in chunks, bounded --------------------------------------------------

@pytest.mark.parametrize("path", ["/dev/zero", "/dev/stdin", "/dev/null"])
def test_a_data_path_that_is_a_device_is_refused_by_what_it_is(path):
    with pytest.raises(ValueError, match="not a regular file"):
        data_hash([path])


def test_a_fifo_is_refused_without_waiting(tmp_path, made):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO"):
        data_hash([fifo])
    (tmp_path / "data").mkdir()
    os.mkfifo(tmp_path / "data" / "inner")
    with pytest.raises(ValueError, match="is a FIFO"):            # inside a data folder too
        data_hash([tmp_path / "data"])
    card = card_with(made, data=[str(fifo)], data_sha256="sha256:00")
    with pytest.raises(ValueError, match="is a FIFO"):
        replay(card, allow=["testkit"])


def test_data_is_read_in_bounded_chunks(tmp_path, monkeypatch):
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 5000)
    assert data_hash([big]).startswith("sha256:")
    monkeypatch.setattr(records, "CHUNK", 1000)
    monkeypatch.setattr("bertlab.experiments.cards.MAX_DATA_BYTES", 4000)
    with pytest.raises(ValueError, match="more than the 4,000"):
        data_hash([big])


def test_a_card_path_that_is_not_a_regular_file_is_refused(tmp_path):
    for path, words in [("/dev/zero", "is a device"), (tmp_path, "is a folder"), (tmp_path / "none.json", "does not exist")]:
        with pytest.raises((ValueError, FileNotFoundError), match=words):
            read_card(path)


# ---- replay: tolerances from the rows; no vacuous agreement ----------------------------------------------

def test_a_tampered_summary_does_not_widen_the_tolerance(made):
    card = card_with(made)
    card["rows"] = [r for r in card["rows"]]
    for r in card["rows"]:
        r["machine"] = "another machine"           # not bit-identical: "within spread"
    card["rows"][0]["result"]["loss"] += 0.5       # far outside the seeds' spread
    for cell in card["summary"].values():
        for m in cell.values():
            m["std"] = 1e9                         # the stored summary says anything goes
    reports = replay(card, allow=["testkit"])
    assert reports[0]["mode"] == "within spread" and not reports[0]["agree"]
    assert "loss" in reports[0]["differences"]


@pytest.mark.parametrize("result", [{}, {"note": "hello"}, {"ok": True}, {"loss": "nan"}, {"loss": "inf"}])
def test_a_row_with_no_finite_number_never_agrees(made, result):
    card = card_with(made, rows=[{**made["rows"][0], "result": result}])
    [report] = replay(card, allow=["testkit"])
    assert not report["agree"] and report["reason"]


def test_a_row_that_recorded_a_diverged_number_never_agrees(made):
    row = json.loads(json.dumps(made["rows"][0]))
    row["result"]["w0"] = "nan"
    [report] = replay(card_with(made, rows=[row]), allow=["testkit"])
    assert not report["agree"] and "not finite" in report["reason"]


@pytest.mark.parametrize("row", [True, "1", 1.0, 99, -99])
def test_a_bad_row_number_says_what_exists(made, row):
    with pytest.raises(ValueError, match="row"):
        replay(made, row=row, allow=["testkit"])


# ---- malformed cards: file, line, field ------------------------------------------------------------------

def test_a_card_that_is_not_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "card.json"
    path.write_text('{\n "format": "bertlab-experiment-card/1",\n "rows": [1, 2,]\n}')
    with pytest.raises(ValueError, match=r"card\.json: line 3 column"):
        read_card(path)
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match="line 1: not UTF-8"):
        read_card(path)


@pytest.mark.parametrize("change, field", [
    ({"format": "other/1"}, "format"), ({"run": 3}, "run"), ({"variants": []}, "variants"),
    ({"rows": {}}, "rows"), ({"reference": "nope"}, "reference"), ({"data": "x"}, "data"),
    ({"rows": [{"variant": "ghost", "seed": 0, "result": {}}]}, r"rows\[0\]\.variant"),
    ({"rows": [{"variant": "slow", "seed": 7, "result": {}}]}, r"rows\[0\]\.seed"),
    ({"rows": [{"variant": "slow", "seed": "0", "result": {}}]}, r"rows\[0\]\.seed"),
    ({"rows": [{"variant": "slow", "seed": 0, "result": 3}]}, r"rows\[0\]\.result"),
    ({"rows": [{"variant": "slow", "seed": 0, "result": [{"x": 1}]}]}, r"rows\[0\]\.result\[0\]"),
    ({"rows": [3]}, r"rows\[0\]"),
    # an unhashable variant raised TypeError (unhashable type: 'list') instead of naming the field
    ({"rows": [{"variant": ["slow"], "seed": 0, "result": {}}]}, r"rows\[0\]\.variant"),
    ({"variants": {"slow": {"settings": {}, "seeds": [0, 0]}}, "reference": "slow", "rows": []}, "seeds"),
])
def test_a_malformed_card_names_the_field(made, tmp_path, change, field):
    path = write_card(card_with(made, **change), tmp_path / "card.json")
    with pytest.raises(ValueError, match=field):
        read_card(path)
    with pytest.raises(ValueError, match=field):
        replay(path, allow=["testkit"])


def test_a_json_list_is_not_a_card(tmp_path):
    path = tmp_path / "card.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not an experiment card"):
        read_card(path)


# ---- merge --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    out = tmp_path_factory.mktemp("shards")
    return [bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=out / f"p{k}", shard=(k, 2)) for k in (1, 2)]


def test_merge_refuses_mixed_versions_and_keeps_the_shards_own(shards):
    a, b = (json.loads(json.dumps(c)) for c in shards)
    b["bertlab"] = "0.0.1"
    with pytest.raises(ValueError, match="bertlab 0.0.1"):
        merge_cards([a, b])
    a["bertlab"] = b["bertlab"] = "0.0.1"
    a["torch"] = b["torch"] = "1.0"
    merged = merge_cards([a, b])
    assert (merged["bertlab"], merged["torch"]) == ("0.0.1", "1.0"), "the merging process's versions stamped"


def test_merge_refuses_conflicting_duplicates_naming_the_row(shards):
    a, b = (json.loads(json.dumps(c)) for c in shards)
    extra = json.loads(json.dumps(a["rows"][0]))
    extra["result"]["loss"] += 1.0
    b["rows"].append(extra)
    with pytest.raises(ValueError, match=r"row \('slow', seed 0\) is in card and in card with different results"):
        merge_cards([a, b])
    b["rows"][-1] = a["rows"][0]                  # an identical duplicate is the same row: kept once
    assert len(merge_cards([a, b])["rows"]) == 4


@pytest.mark.parametrize("bad", ["card.json", {"a": 1}, 3, []])
def test_merge_takes_a_list_of_cards(bad):
    with pytest.raises(ValueError, match="list of cards|at least one"):
        merge_cards(bad)


def test_a_card_of_a_trusted_study_with_settings_it_cannot_run_is_one_error_naming_the_row(made):
    card = card_with(made, run="bertlab.experiments.ablations:run", reference="a",
                     variants={"a": {"settings": {"objective": "bogus"}, "seeds": [0]}},
                     rows=[{"variant": "a", "seed": 0, "result": {"x": 1.0}}])
    with pytest.raises(JobFailed, match=r"row 0 \('a', seed 0\) raised ValueError: objective 'bogus'"):
        replay(card)


def test_seeds_in_a_card_beyond_what_a_generator_takes_are_refused(made):
    card = card_with(made, variants={**made["variants"], "slow": {"settings": {"lr": 0.01}, "seeds": [2 ** 70]}},
                     rows=[{**made["rows"][0], "seed": 2 ** 70}])
    with pytest.raises(ValueError, match=r"variants\['slow'\]\.seeds"):
        replay(card, allow=["testkit"])


def test_an_older_cards_bare_nan_is_merged_as_recorded_not_a_json_error(shards, tmp_path):
    a, b = (json.loads(json.dumps(c)) for c in shards)
    a["rows"][0]["result"]["loss"] = float("nan")           # as json.dumps wrote it before: a bare NaN
    merged = merge_cards([a, b])
    assert merged["rows"][0]["result"]["loss"] == "nan"
    write_card(merged, tmp_path / "card.json")             # strict JSON, no error


def test_a_card_holding_a_number_beyond_any_float_is_summarised_not_an_overflow(made, tmp_path):
    """A card (written by hand or another tool) may hold a whole number no float can: it counts as diverged."""
    card = card_with(made)
    card["rows"][0]["result"]["x"] = 10 ** 400
    from bertlab.experiments import summarise
    cell = summarise(card["rows"])[card["rows"][0]["variant"]]["x"]
    assert cell["diverged"] == 1
