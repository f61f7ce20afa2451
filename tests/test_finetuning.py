"""bertlab.finetune, evaluate_task and load_task: every task shape trains through the one loop, the scores
mean what they say (entity F1, the paper's SQuAD 2.0 rule), bad input is refused before training, and a real
pre-trained model fine-tuned in one call beats the majority baseline clearly."""

from __future__ import annotations

import math

import pytest
import torch

import bertlab
from bertlab.finetuning import choose_tau, encode, entity_f1, qa_exact_match
from bertlab.model.heads import IGNORE
from testkit import bundled, one_thread  # noqa: F401  (fixture)


@pytest.fixture
def bert(odd_config):
    bertlab.set_seed(0)
    return bertlab.Bert(odd_config).eval()


COLOURS = [{"text": "the cat sat on the mat", "label": "cat"}, {"text": "the dog sat in the river", "label": "dog"},
           {"text": "it is the cat", "label": "cat"}, {"text": "he and the dog", "label": "dog"}]
PAIRS = [{"a": "the cat sat", "b": "on the mat", "label": 1}, {"a": "the dog", "b": "river bank", "label": 0}]
TAGGED = [{"words": ["the", "cat", "sat", "on", "the", "mat"], "tags": [0, 1, 0, 0, 0, 2]},
          {"words": ["muddy", "river", "bank"], "tags": [0, 2, 2]}]
QA = [{"question": "who sat?", "passage": "the cat sat on the mat", "answer": "the cat"},
      {"question": "who ran?", "passage": "the dog sat in the river", "answer": None}]
CHOICE = [{"context": "the cat sat", "endings": ["on the mat", "in the river", "of it", "is dog"], "label": 0},
          {"context": "the dog", "endings": ["is", "sat in the river", "mat", "cat"], "label": 1}]
SHAPES = {"classify": COLOURS, "tag": TAGGED, "qa": QA, "choice": CHOICE}


@pytest.mark.parametrize("task", SHAPES)
def test_every_task_shape_trains_and_scores_without_touching_the_model_passed_in(bert, odd_tokenizer, task):
    before = {k: v.clone() for k, v in bert.state_dict().items()}
    records = SHAPES[task]
    result = bertlab.finetune(bert, odd_tokenizer, records, records, task=task, steps=3, lr=1e-3, batch_size=2)
    assert isinstance(result.model, bertlab.finetuning.tasks.HEADS[task]) and not result.model.training
    assert [h["step"] for h in result.history] == [1, 2, 3]
    assert all(math.isfinite(h["loss"]) for h in result.history)
    assert f"val_{result.metric}" in result.history[-1] and f"val_{result.metric}" not in result.history[0]
    score = result.evaluate(odd_tokenizer, records)[result.metric]
    assert 0.0 <= score <= 1.0
    assert score == result.history[-1][f"val_{result.metric}"]
    assert all(torch.equal(v, bert.state_dict()[k]) for k, v in before.items()), "finetune changed its input"
    assert result.settings.task == task and result.settings.steps == 3


def test_the_same_seed_gives_the_same_run_and_another_seed_another(bert, odd_tokenizer):
    runs = [bertlab.finetune(bert, odd_tokenizer, PAIRS, task="classify", steps=4, lr=1e-3, batch_size=1, seed=s)
            for s in (0, 0, 1)]
    losses = [[h["loss"] for h in r.history] for r in runs]
    assert losses[0] == losses[1]
    assert losses[0] != losses[2]


def test_a_separable_classification_is_learned(bert, odd_tokenizer):
    result = bertlab.finetune(bert, odd_tokenizer, COLOURS, task="classify", steps=40, lr=3e-3, batch_size=4)
    assert result.labels == ["cat", "dog"]             # string labels, numbered in sorted order
    assert result.evaluate(odd_tokenizer, COLOURS)["accuracy"] == 1.0
    assert result.history[-1]["loss"] < result.history[0]["loss"] / 4


def test_schedule_warms_up_then_decays_to_zero(bert, odd_tokenizer):
    result = bertlab.finetune(bert, odd_tokenizer, PAIRS, task="classify", steps=10, lr=1e-3, batch_size=2)
    lrs = [h["lr"] for h in result.history]
    # one warm-up step (10 % of 10) reaches the peak, which decay starts from: 9/9, 8/9, … 1/9 of it
    assert lrs[:2] == [pytest.approx(1e-3)] * 2 and lrs[2] == pytest.approx(1e-3 * 8 / 9)
    assert lrs[-1] == pytest.approx(1e-3 / 9) and all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_a_model_with_another_head_gets_the_tasks_head_on_its_encoder(odd_config, odd_tokenizer):
    bertlab.set_seed(0)
    pretraining = bertlab.BertForPreTraining(odd_config)
    result = bertlab.finetune(pretraining, odd_tokenizer, TAGGED, task="tag", steps=1, lr=1e-3, batch_size=2)
    assert isinstance(result.model, bertlab.BertForTokenClassification) and result.model.num_labels == 3
    assert result.model.bert is not pretraining.bert


def test_tags_label_first_pieces_only(odd_tokenizer):
    words, tags = ["muddily", "cat"], [2, 1]
    batch = encode("tag", [{"words": words, "tags": tags}], odd_tokenizer)
    word_ids = odd_tokenizer(" ".join(words)).word_ids
    assert word_ids.count(0) > 1, "the test needs a word split into several pieces"
    first = [w is not None and (i == 0 or word_ids[i - 1] != w) for i, w in enumerate(word_ids)]
    expected = [tags[w] if f else IGNORE for w, f in zip(word_ids, first)]
    assert batch["labels"][0].tolist() == expected
    assert expected.count(IGNORE) >= 3            # [CLS], [SEP] and the later pieces of "muddily"


def test_entity_f1_counts_entity_words_only():
    gold = torch.tensor([0, 1, 0, 2, 2])
    assert entity_f1(gold, gold) == 1.0
    assert entity_f1(torch.zeros(5, dtype=torch.long), gold) == 0.0          # all "O": no entity found
    # one of three entities right, one wrong tag, one missed, one false alarm: 2·1 / (3 + 3)
    assert entity_f1(torch.tensor([1, 1, 0, 1, 0]), gold) == pytest.approx(2 / 6)


def test_squad2_rule_answers_when_the_span_beats_null_plus_tau():
    # (best span, ŝ_ij, s_null, gold): answerable, no answer (null far ahead), no answer (span just ahead)
    scored = [((5, 6), 3.0, 1.0, (5, 6)), ((4, 4), 1.0, 2.0, (0, 0)), ((7, 8), 2.0, 1.5, (0, 0))]
    assert qa_exact_match(scored, 0.0) == pytest.approx(2 / 3)     # the third answers its span, wrongly
    assert qa_exact_match(scored, 1.0) == pytest.approx(1.0)       # a span must beat null by more than 1
    assert qa_exact_match(scored, -2.0) == pytest.approx(1 / 3)    # answers everything
    assert qa_exact_match(scored, math.inf) == pytest.approx(2 / 3)   # never answers
    tau = choose_tau(scored)
    assert qa_exact_match(scored, tau) == 1.0 and 0.5 <= tau < 2.0     # the smallest τ that gets all three


@pytest.mark.parametrize("records, task, words", [
    (COLOURS, "summarise", "unknown task"), ([], "classify", "non-empty"),
    ([{"text": "the cat"}], "classify", "lacks label"), ([{"a": "the", "label": 0}], "classify", "lacks b"),
    ([{"words": ["the", "cat"], "tags": [0]}], "tag", "2 words but 1 tags"),
    ([{"question": "who?", "passage": "the cat", "answer": "dog"}], "qa", "not in its passage"),
])
def test_bad_records_are_refused_before_training(bert, odd_tokenizer, records, task, words):
    with pytest.raises(ValueError, match=words):
        bertlab.finetune(bert, odd_tokenizer, records, task=task, steps=1, lr=1e-3, batch_size=1)


@pytest.mark.parametrize("options, words", [(dict(steps=0), "steps"), (dict(lr=-1.0), "lr"),
                                            (dict(batch_size=0), "batch_size"), (dict(clip=0.0), "clip"),
                                            (dict(warmup=1.5), "warmup"), (dict(epochs=3), "unknown finetune")])
def test_bad_settings_say_what_to_pass(bert, odd_tokenizer, options, words):
    settings = dict(task="classify", steps=1, lr=1e-3, batch_size=1) | options
    with pytest.raises(ValueError, match=words):
        bertlab.finetune(bert, odd_tokenizer, PAIRS, **settings)


def test_load_task_returns_three_splits_of_records():
    for name, shape in bertlab.finetuning.SHIPPED.items():
        data = bertlab.load_task(name)
        assert set(data) == {"train", "val", "test"} and all(len(v) >= 100 for v in data.values())
        bertlab.finetuning.checks.check_records(shape, data["test"], "test")
    with pytest.raises(ValueError, match="topic, follows"):
        bertlab.load_task("squad")


def test_shipped_tagging_and_qa_test_on_new_names():
    tagging = bertlab.load_task("tagging")

    def entities(split):
        return {w for r in tagging[split] for w, t in zip(r["words"], r["tags"]) if t > 0}

    assert entities("test") and not entities("test") & (entities("train") | entities("val"))
    qa = bertlab.load_task("qa")
    answers = {s: {r["answer"] for r in qa[s] if r["answer"]} for s in ("train", "test")}
    assert answers["test"] and not answers["test"] & answers["train"]
    assert 0.2 < sum(r["answer"] is None for r in qa["test"]) / len(qa["test"]) < 0.5


@pytest.mark.slow
def test_bertlab_mini_fine_tuned_on_follows_beats_the_majority_baseline(one_thread):  # noqa: F811
    model, tokenizer = bundled("bertlab-mini")
    data = bertlab.load_task("follows")
    result = bertlab.finetune(model, tokenizer, data["train"], task="classify", steps=40, lr=3e-4, batch_size=16)
    labels = [r["label"] for r in data["test"]]
    majority = max(labels.count(0), labels.count(1)) / len(labels)
    accuracy = result.evaluate(tokenizer, data["test"])["accuracy"]
    assert accuracy > majority + 0.15, (accuracy, majority)
