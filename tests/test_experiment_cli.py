"""`bertlab experiment` and `bertlab replay` on bad input: one line naming the file, line, field or module,
and what to do; never a traceback. A module of the user's own is found in the current folder once allowed."""

from __future__ import annotations

import json
import sys

import pytest

import bertlab
from bertlab.cli import main
from testkit import toy_run

VARIANTS = {"slow": {"lr": 0.01}, "fast": {"lr": 0.1}}


def fails(capsys, argv, code=2) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def card(tmp_path):
    bertlab.experiment(toy_run, VARIANTS, seeds=[0, 1], out=tmp_path / "made")
    return tmp_path / "made" / "card.json"


@pytest.fixture
def clean_path(monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])


def test_replay_of_an_untrusted_card_says_what_it_wants_to_run_and_how_to_allow_it(card, capsys):
    err = fails(capsys, ["replay", str(card)])
    assert "wants to run 'testkit:toy_run'" in err and "--allow testkit" in err
    assert main(["replay", str(card), "--allow", "testkit", "--row", "0"]) == 0
    assert "agrees" in capsys.readouterr().out


def test_a_users_own_module_is_found_in_the_current_folder_once_allowed(tmp_path, monkeypatch, capsys, clean_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mystudy_cli.py").write_text("def run(settings, seed):\n    return {'x': settings['a'] + seed}\n")
    (tmp_path / "spec.json").write_text(json.dumps({"run": "mystudy_cli:run", "variants": {"v": {"a": 1}},
                                                    "seeds": [0, 1]}))
    err = fails(capsys, ["experiment", "spec.json", "--out", "o"])
    assert "--allow mystudy_cli" in err and "mystudy_cli" not in sys.modules
    assert main(["experiment", "spec.json", "--out", "o", "--allow", "mystudy_cli"]) == 0
    assert json.loads((tmp_path / "o" / "card.json").read_text())["summary"]["v"]["x"]["mean"] == 1.5
    capsys.readouterr()
    assert main(["replay", "o/card.json", "--allow", "mystudy_cli"]) == 0


def test_a_card_replayed_with_a_tampered_summary_says_so(card, tmp_path, capsys):
    c = json.loads(card.read_text())
    c["summary"]["fast"]["loss"]["std"] = 99.0
    (tmp_path / "t.json").write_text(json.dumps(c))
    assert main(["replay", str(tmp_path / "t.json"), "--allow", "testkit", "--row", "0"]) == 0
    assert "does not match its rows" in capsys.readouterr().out


@pytest.mark.parametrize("text, words", [
    ("{\n  \"run\": 1,,\n}", r"line 2 column"), ("[1]", "format"), ("", "line 1 column 1"),
    ('{"format": "bertlab-experiment-card/1"}', "run is missing")])
def test_a_malformed_card_is_one_line_naming_file_and_line_or_field(tmp_path, capsys, text, words):
    (tmp_path / "bad.json").write_text(text)
    err = fails(capsys, ["replay", str(tmp_path / "bad.json")])
    assert "bad.json" in err and pytest.importorskip("re").search(words, err), err


@pytest.mark.parametrize("card_path, words", [("/dev/zero", "not a regular file"), (".", "is a folder"),
                                              ("nope.json", "does not exist")])
def test_a_card_path_that_is_not_a_card_file_is_one_line(capsys, card_path, words):
    assert words in fails(capsys, ["replay", card_path])


@pytest.mark.parametrize("spec, words", [
    ("{oops", "line 1 column 2"), ("[1, 2]", "a spec is a JSON object"), ('{"variants": {}}', "lacks run"),
    ('{"run": "m:f", "variants": {"a": {}}, "sedes": [0]}', "unknown key(s) sedes"),
    ('{"run": 3, "variants": {"a": {}}}', "'run' must be"),
    ('{"run": "testkit:toy_run", "variants": {"a": {"lr": 0.1}}, "seeds": "012"}', "list of distinct whole numbers"),
    ('{"run": "testkit:toy_run", "variants": {"a": {"lr": 0.1}}, "seeds": [0, 0]}', "given twice"),
    ('{"run": "testkit:toy_run", "variants": {"a": {"lr": 0.1}}, "seeds": [0], "data": ["/dev/zero"]}',
     "not a regular file"),
    # json keeps the last of two keys silently: a spec naming variant "a" twice ran only the second
    ('{"run": "testkit:toy_run", "variants": {"a": {"lr": 0.1}, "a": {"lr": 1.0}}, "seeds": [0]}',
     "key 'a' appears twice")])
def test_a_bad_spec_is_one_line(tmp_path, capsys, spec, words):
    (tmp_path / "spec.json").write_text(spec)
    err = fails(capsys, ["experiment", str(tmp_path / "spec.json"), "--out", str(tmp_path / "o"), "--allow", "testkit"])
    assert words in err, err


def test_a_job_that_fails_is_one_line_with_exit_status_1(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps({"run": "experiment_runs:raises", "variants": {"a": {}},
                                                    "seeds": [0]}))
    err = fails(capsys, ["experiment", str(tmp_path / "spec.json"), "--out", str(tmp_path / "o"),
                         "--allow", "experiment_runs"], code=1)
    assert "job ('a', seed 0) raised RuntimeError: boom" in err


def test_merge_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps({"run": "testkit:toy_run", "variants": VARIANTS, "seeds": [0, 1]}))
    for k in (1, 2):
        assert main(["experiment", str(tmp_path / "spec.json"), "--out", str(tmp_path / f"s{k}"), "--shard",
                     f"{k}/2", "--allow", "testkit"]) == 0
    a, b = tmp_path / "s1" / "card-1-of-2.json", tmp_path / "s2" / "card-2-of-2.json"
    assert "unrun" in fails(capsys, ["experiment", "--merge", str(a), "--out", str(tmp_path / "m")])
    assert "drop the SPEC" in fails(capsys, ["experiment", "x", "--merge", str(a), str(b), "--out", str(tmp_path / "m")])
    other = json.loads(b.read_text())
    other["torch"] = "0.1"
    (tmp_path / "old.json").write_text(json.dumps(other))
    assert "torch 0.1" in fails(capsys, ["experiment", "--merge", str(a), str(tmp_path / "old.json"), "--out",
                                          str(tmp_path / "m")])
    assert main(["experiment", "--merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 0
    other = json.loads(a.read_text())
    other["run"] = "testkit:other"
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert "adopt a card of the same study" in fails(capsys, ["experiment", str(tmp_path / "spec.json"), "--out",
                                                              str(tmp_path / "s1"), "--allow", "testkit", "--from",
                                                              str(tmp_path / "other.json")])


@pytest.mark.parametrize("argv, words", [
    (["experiment", "--out", "o"], "give a SPEC"), (["experiment", "nonsense", "--out", "o"], "no experiment spec"),
    (["experiment", "finetune", "--out", "o", "--only", "x"], "--only does not apply to finetune"),
    (["experiment", "ablations-quick", "--out", "o", "--from", "/dev/zero"], "not a regular file"),
    (["experiment", "finetune-quick", "--out", "o", "--seeds", "0"], "--seeds does not apply"),
    (["experiment", "ablations-quick", "--out", "o", "--only", "nope"], "unknown variant(s) ['nope']")])
def test_command_misuse_is_one_line(tmp_path, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tmp_path)
    assert words in fails(capsys, argv)


def test_ctrl_c_is_one_line_saying_the_rows_are_kept(tmp_path, monkeypatch, capsys):
    from bertlab.experiments import grid

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(grid, "run_job", interrupted)
    (tmp_path / "spec.json").write_text(json.dumps({"run": "testkit:toy_run", "variants": VARIANTS, "seeds": [0]}))
    err = fails(capsys, ["experiment", str(tmp_path / "spec.json"), "--out", str(tmp_path / "o"), "--allow",
                         "testkit"], code=130)
    assert "interrupted" in err and "resume" in err
    assert not (tmp_path / "o" / ".experiment.lock").exists()
