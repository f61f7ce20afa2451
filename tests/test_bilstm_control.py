"""Notebook 09's MLM + BiLSTM control (bertlab/experiments/bilstm_control.py): its shipped card trained the same
way as the ablation card's MLM + NSP (its held-out MLM top-1 within 0.01 of that card's: another CPU changes
the last digits of a training run, and they grow), it reads the right-context probes through the BiLSTM, it replays by name, and a misspelt setting
is refused."""

from __future__ import annotations

import pytest

from bertlab.experiments import ablations, bilstm_control, read_card


def test_the_control_card_trained_the_ablation_cards_mlm_nsp_model():
    control = read_card(bilstm_control.CARD)
    ablation = read_card(ablations.CARD)
    steps = ablations.BUDGET["steps"]
    assert control["run"] == "bertlab.experiments.bilstm_control:run"           # replayable, not __main__
    assert all(not d.startswith("/") for d in control["data"])
    mine = {r["seed"]: r["result"][-1] for r in control["rows"]}
    theirs = {r["seed"]: next(p for p in r["result"] if p["step"] == steps)
              for r in ablation["rows"] if r["variant"] == "MLM + NSP"}
    assert sorted(mine) == sorted(theirs) == bilstm_control.SEEDS
    for seed, point in mine.items():
        assert point["step"] == steps
        assert point["mlm_top1"] == pytest.approx(theirs[seed]["mlm_top1"], abs=0.01), seed
        for probe in ("wsd_right", "next_replaced"):
            assert 0 <= point[probe] <= 1 and 0 <= point[probe + "+bilstm"] <= 1


@pytest.mark.slow          # trains two probes and a BiLSTM: about a minute of CPU (profiled 2026-11-27)
def test_a_quick_run_reads_both_probes_linearly_and_through_the_bilstm():
    (point,) = bilstm_control.run(ablations.QUICK, 0)
    assert set(point) == {"step", "fraction", "mlm_top1", "wsd_right", "wsd_right+bilstm", "next_replaced",
                          "next_replaced+bilstm"}
    assert point["step"] == ablations.QUICK["steps"]


def test_a_misspelt_setting_is_refused():
    with pytest.raises(ValueError, match="unknown ablation setting"):
        bilstm_control.run({"stepz": 3}, 0)
