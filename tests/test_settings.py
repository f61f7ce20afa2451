"""Settings declared once (bertlab/settings.py): a field's help, range and resumability drive the CLI, the checks
and resume; PretrainArgs declares every number's range, and warm-up has one spelling."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from bertlab import settings
from bertlab.cli import main
from bertlab.optim import warmup_count
from bertlab.pretraining import checks, runfolder
from bertlab.pretraining.args import PretrainArgs
from bertlab.settings import Range, setting


@dataclass
class Toy:
    """A settings dataclass of its own: the mechanism knows nothing about pre-training."""
    steps: int = setting(10, "how many", range=Range(whole=True, low=1, what="steps"), resumable=True)
    rate: float = setting(0.5, "a share", range=Range(low=0, high=1, high_ok=True))
    dropout: float | None = setting(None, "or the preset's", range=Range(low=0, high=1, optional=True))
    name: str = setting("x", "not a number")


def test_a_field_carries_its_help_range_and_resumability():
    assert settings.help_of(Toy, "steps") == "how many"
    assert set(settings.ranges(Toy)) == {"steps", "rate", "dropout"}
    assert settings.resumable(Toy) == ("steps",)
    assert Toy().steps == 10


@pytest.mark.parametrize("name, value, message", [
    ("steps", 0, "--steps 0 (steps=0) is out of range: it must be a whole number ≥ 1, steps"),
    ("steps", 2.5, "--steps 2.5 (steps=2.5): must be a whole number ≥ 1"),
    ("steps", True, "--steps True (steps=True): must be a whole number"),
    ("steps", "3", "--steps '3' (steps='3'): must be a whole number"),
    ("rate", float("nan"), "--rate nan (rate=nan) is out of range: it must be a finite number from 0 to 1"),
    ("rate", float("inf"), "--rate inf"),
    ("rate", 1.5, "--rate 1.5"),
    ("rate", None, "--rate None (rate=None): must be a finite number"),
    ("dropout", 1.0, "--dropout 1.0 (dropout=1.0) is out of range: it must be a finite number in [0, 1)"),
])
def test_a_value_outside_its_range_names_the_flag_the_value_and_the_range(name, value, message):
    with pytest.raises(ValueError) as e:
        settings.check_given(Toy, {name: value})
    assert message in str(e.value)


def test_values_in_range_and_fields_without_one_pass():
    settings.check_given(Toy, {"steps": 1, "rate": 1.0, "dropout": None, "name": "anything", "unknown": 3})
    settings.check_given(Toy, {"rate": 0, "dropout": 0.0})


def test_every_number_pretrain_args_holds_has_a_range_and_its_default_is_in_it():
    for f in dataclasses.fields(PretrainArgs):
        if f.type in ("int", "float", "int | None", "float | None"):
            assert f.name in checks.RANGES, f"{f.name} declares no range"
            if f.default is not None:
                settings.check_value(PretrainArgs, f.name, f.default)
    assert checks.RANGES == settings.ranges(PretrainArgs)          # one list, not a second copy


def test_resume_may_change_exactly_the_fields_declared_resumable():
    assert set(runfolder.RESUMABLE) == {"steps", "save_every", "log_every", "progress", "device", "eval_corpus",
                                        "keep_checkpoints", "snapshot_every"}


def test_help_says_each_range_and_what_resume_may_change(capsys):
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a finite number in [0, 1)" in text and "may change with --resume" in text


def test_the_old_warmup_spelling_is_refused_naming_the_new_one(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["pretrain", str(tmp_path), "--out", str(tmp_path / "run"), "--warmup-steps", "10"])
    assert e.value.code == 2
    assert "--warmup-steps is now --warmup (the share of --steps" in capsys.readouterr().err
    from bertlab import pretrain
    with pytest.raises(ValueError, match=r"warmup_steps is now warmup \(the share"):
        pretrain(tmp_path, tmp_path / "run", warmup_steps=10)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("steps", [1, 7, 9, 10, 15, 999, 1000, 12345])
def test_the_default_share_is_the_old_tenth_of_the_steps(steps):
    assert warmup_count(steps, 0.1) == max(1, steps // 10)
    assert warmup_count(steps, 0.0) == 0


# ---- FineTuneSettings: declared the same way, one validator -------------------------------------------------

def test_every_number_fine_tune_settings_holds_has_a_range_and_its_default_is_in_it():
    from bertlab.finetuning import FineTuneSettings
    numeric = [f.name for f in dataclasses.fields(FineTuneSettings)
               if f.type in ("int", "float", "int | None", "float | None")]
    assert set(settings.ranges(FineTuneSettings)) == set(numeric)
    for name in numeric:
        settings.check_value(FineTuneSettings, name, getattr(FineTuneSettings, name))
        assert settings.help_of(FineTuneSettings, name), f"{name} has no help"


def test_finetune_s_defaults_are_the_settings_defaults():
    """`finetune(...)` spells four defaults in its signature (they show in help()); they must be the fields'."""
    import inspect

    from bertlab.finetuning import FineTuneSettings, finetune
    from bertlab.finetuning.loop import prepare
    for function in (finetune, prepare):
        for name, p in inspect.signature(function).parameters.items():
            if name in FineTuneSettings.__dataclass_fields__ and p.default is not inspect.Parameter.empty:
                assert p.default == getattr(FineTuneSettings, name), (function.__name__, name)


@pytest.mark.parametrize("name, value, message", [
    ("steps", 2.5, "steps=2.5 (float): must be a whole number ≥ 1, optimizer steps"),
    ("steps", 0, "steps=0 is out of range: it must be a whole number ≥ 1, optimizer steps"),
    ("lr", 0.0, "lr=0.0 is out of range: it must be a finite number > 0, the peak learning rate"),
    ("seed", 2**63, "seed=9223372036854775808 is out of range: it must be a whole number from 0 to 2**63 - 1"),
    ("warmup", "0.1", "warmup='0.1' (str): must be a finite number in [0, 1)"),
    ("clip", float("-inf"), "clip=-inf is out of range"),
])
def test_a_python_call_s_bad_setting_is_named_as_the_call_spells_it(name, value, message):
    from bertlab.finetuning import FineTuneSettings
    with pytest.raises(ValueError) as e:
        settings.check_given(FineTuneSettings, {name: value}, flags=False)
    assert message in str(e.value) and "--" not in str(e.value)


def test_none_is_allowed_only_where_a_field_says_so():
    from bertlab.finetuning import FineTuneSettings
    settings.check_given(FineTuneSettings, {"clip": None, "eval_every": None, "max_length": None}, flags=False)
    with pytest.raises(ValueError, match=r"batch_size=None \(NoneType\)"):
        settings.check_given(FineTuneSettings, {"batch_size": None}, flags=False)


def test_finetune_s_flags_are_its_settings_fields(capsys):
    from bertlab.finetuning import FineTuneSettings
    with pytest.raises(SystemExit):
        main(["finetune", "--help"])
    text = "".join(capsys.readouterr().out.split())
    for f in dataclasses.fields(FineTuneSettings):
        if f.name != "task":
            assert settings.flag_of(f.name) in text, f"{f.name} has no flag"
            assert "".join(settings.flag_help(FineTuneSettings, f.name).split()) in text, f"{f.name}'s help missing"


@pytest.mark.parametrize("call, words", [
    (lambda: settings.help_of(Toy, "sped"), "Toy has no field 'sped': its fields are steps, rate, dropout, name"),
    (lambda: settings.flag_help(Toy, "sped"), "Toy has no field 'sped'"),
    (lambda: settings.flag_help(dict, "steps"), "expected a settings dataclass"),
    (lambda: settings.ranges(Toy()), None),                                  # an instance is a dataclass too
    (lambda: settings.add_flags(__import__("argparse").ArgumentParser(), Toy, skip="steps"), "a tuple of Toy's"),
    (lambda: settings.add_flags(__import__("argparse").ArgumentParser(), Toy, skip=("sped",)), "'sped'"),
    (lambda: settings.add_flags(__import__("argparse").ArgumentParser(), "Toy"), "expected a settings dataclass"),
])
def test_the_helpers_refuse_what_is_not_a_field(call, words):
    if words is None:
        assert set(call()) == {"steps", "rate", "dropout"}
        return
    with pytest.raises(ValueError, match=words):
        call()


def test_add_flags_makes_one_typed_flag_per_field():
    import argparse
    p = argparse.ArgumentParser()
    settings.add_flags(p, Toy, skip=("name",))
    args = p.parse_args(["--steps", "3", "--rate", "0.25"])
    assert (args.steps, args.rate, args.dropout) == (3, 0.25, None) and not hasattr(args, "name")
    with pytest.raises(SystemExit):
        p.parse_args(["--steps", "x"])
