"""The ablation study (bertlab.experiments.ablations) and its shipped card: the design claims the probes rest
on (an LTR model's state at a word cannot see the words after it; the right-context word-sense set gives every
sense the same left context), the variants, and the card's consistency. tests/test_experiments.py replays a
stored row."""

from __future__ import annotations

import pytest
import torch

import bertlab
from bertlab.experiments import ablation_probes as probes
from bertlab.experiments import ablations, read_card
from bertlab.model.heads import IGNORE
from testkit import bundled

CARD = ablations.CARD


@pytest.fixture(scope="module")
def card():
    return read_card(CARD)


@pytest.fixture(scope="module")
def tok():
    return bundled("bertlab-tiny")[1]


def test_every_score_is_an_accuracy_and_every_model_meets_the_same_probes(card):
    probes_ = {"next_replaced", "wsd_right", "wsd", "pos", "pair", "topic"}
    for row in card["rows"]:
        for point in row["result"]:
            assert probes_ <= set(point), row["variant"]
            for m in probes_ | {"mlm_top1", "nsp", "wsd_right+bilstm", "next_replaced+bilstm"}:
                if m in point:
                    assert 0.0 <= point[m] <= 1.0, (row["variant"], m)
            ltr = row["variant"].startswith("LTR")
            assert ("wsd_right+bilstm" in point) == ("next_replaced+bilstm" in point) == ltr
            assert ("mlm_top1" in point) == (not ltr)               # an LTR model has no MLM head
    assert set(card["notes"]["baselines"]) == probes_


def test_the_papers_numbers_are_recorded_as_published(card):
    paper = card["notes"]["paper"]
    assert paper["table5"]["rows"]["BERT-base"] == [84.4, 88.4, 86.7, 92.7, 88.5]
    assert paper["table5"]["rows"]["LTR & No NSP"][2] == 77.5              # MRPC: LTR's big loss
    assert [row[3] for row in paper["table8"]["rows"]] == [84.2, 84.3, 84.1, 84.4, 83.7, 83.6]
    assert all(sum(row[:3]) == 100 for row in paper["table8"]["rows"])


def test_a_variant_is_the_budget_with_what_it_changes():
    v = ablations.variant(mask_rate=0.4)
    assert v == {**ablations.BUDGET, "mask_rate": 0.4}
    with pytest.raises(ValueError, match="unknown ablation setting"):
        ablations.variant(mask_rat=0.4)


def test_the_mask_rate_is_the_share_of_tokens_the_loss_sees(tok):
    # what the 40 % variant changes: the masking, and nothing upstream of it
    ids = torch.randint(5, tok.vocab_size, (64, 32), generator=torch.Generator().manual_seed(0))
    ids[:, 0], ids[:, -1] = tok.cls_id, tok.sep_id
    for rate in (0.15, 0.4):
        _, labels = bertlab.mask_tokens(ids, tok, rate, generator=torch.Generator().manual_seed(0))
        assert (labels != IGNORE).float().mean() == pytest.approx(rate * 30 / 32, abs=0.03)


def test_right_context_senses_give_every_sense_the_same_left_context():
    examples, labels = probes.right_context_senses()
    assert len(examples) >= 150
    for (sentence, word), label in zip(examples, labels):
        assert sentence.startswith(f"the {word} ") and label.startswith(f"{word}/")
        assert len(sentence.split()) >= 5
    for word in {w for _, w in examples}:
        assert len({y for (_, w), y in zip(examples, labels) if w == word}) == 2    # both senses kept


def test_next_token_labels_shift_left_and_ignore_padding():
    ids = torch.tensor([[2, 10, 11, 3, 0, 0], [2, 12, 13, 14, 15, 3]])
    labels = ablations.next_token_labels(ids, (ids != 0).long())
    assert labels.tolist() == [[10, 11, 3, IGNORE, IGNORE, IGNORE], [12, 13, 14, 15, 3, IGNORE]]


def test_a_left_to_right_models_state_at_the_word_ignores_the_words_after_it(tok):
    # The reason the LTR row must sit at the word-identity baseline on wsd_right: with causal attention, the
    # state at "bank" in "the bank of the stream" equals the one in "the bank lent them money".
    config = ablations.make_config(tok, ablations.VARIANTS["LTR & No NSP"])
    assert config.is_decoder
    torch.manual_seed(0)
    model = bertlab.BertForPreTraining(config, device="cpu").eval()
    examples = [("the bank of the stream .", "bank"), ("the bank lent them money .", "bank")]
    _, states, spans = probes.sequence_states(model.bert, tok, examples, 32)
    (i, (s, e)), (j, (s2, e2)) = spans
    assert torch.allclose(states[i][s:e], states[j][s2:e2], atol=1e-5)
    assert not torch.allclose(states[i][-1], states[j][-1], atol=1e-3)      # the last tokens do differ
