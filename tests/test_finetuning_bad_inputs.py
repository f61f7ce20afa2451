"""finetune, evaluate_task and load_task, each given what a user who has not read the docs might pass: every
hostile class is a one-line ValueError before any training, naming the split and record (or the argument)
and saying what to pass; a run whose loss stops being finite stops as `pretrain` does; a foreign tokenizer
warns. (The words of a tagging set: test_finetuning_words.py; the command's run folder:
test_finetune_command.py.)"""

from __future__ import annotations

import logging
import math

import pytest
import torch

import bertlab
from bertlab.finetuning import NonFiniteLoss, evaluate_task
from testkit import ODD

TEXTS = [{"text": "the cat sat", "label": "cat"}, {"text": "the dog sat", "label": "dog"}]
IDS = [{"text": "the cat sat", "label": 0}, {"text": "the dog sat", "label": 1}]
TAGGED = [{"words": ["the", "cat"], "tags": [0, 1]}, {"words": ["the", "dog"], "tags": [0, 2]}]
QA = [{"question": "who sat?", "passage": "the cat sat", "answer": "the cat"}]
CHOICE = [{"context": "the cat", "endings": ["sat", "river"], "label": 0}]


@pytest.fixture
def bert(odd_config):
    bertlab.set_seed(0)
    return bertlab.Bert(odd_config).eval()


def refused(bert, tokenizer, train, words, task="classify", val=None, **settings):
    settings = dict(steps=1, lr=1e-3, batch_size=2) | settings
    with pytest.raises(ValueError, match=words) as e:
        bertlab.finetune(bert, tokenizer, train, val, task=task, **settings)
    assert "\n" not in str(e.value), "one line"
    return str(e.value)


# ---- settings: wrong types and out-of-range numbers ------------------------------------------------------

@pytest.mark.parametrize("settings, words", [
    (dict(steps=2.5), r"steps=2\.5 \(float\): must be a whole number ≥ 1"), (dict(steps="3"), "steps='3'"),
    (dict(steps=True), "steps=True"), (dict(steps=-1), "steps=-1 is out of range"),
    (dict(lr=0.0), "lr=0.0 is out of range: it must be a finite number > 0"), (dict(lr=math.nan), "lr=nan"),
    (dict(lr=math.inf), "lr=inf"), (dict(lr="1e-3"), "lr='1e-3'"),
    (dict(batch_size=None), "batch_size=None"), (dict(seed=-1), "seed=-1"), (dict(seed=1.5), "seed=1.5"),
    (dict(warmup=1.0), r"warmup=1\.0 is out of range: it must be a finite number in \[0, 1\)"),
    (dict(warmup="0.1"), "warmup='0.1'"), (dict(warmup=math.nan), "warmup=nan"),
    (dict(weight_decay=-0.1), "weight_decay=-0.1"), (dict(eps=0.0), "eps=0.0"), (dict(clip=-1.0), "reverses"),
    (dict(clip="1"), "clip='1'"), (dict(eval_every=0), "eval_every=0"), (dict(eval_every=1.5), "eval_every=1.5"),
    (dict(max_length=2), "max_length=2"), (dict(max_length=10**6), "more than the model's 64 positions"),
    (dict(epochs=3), "unknown finetune option"), (dict(task="summarise"), "unknown task 'summarise'"),
    (dict(progress="yes"), "progress must be True or False"), (dict(callbacks=print), r"pass \[f\]"),
    (dict(callbacks=[1]), "callbacks must be a list of functions"), (dict(device="gpu7"), "gpu7"),
])
def test_bad_settings_are_refused_naming_the_setting(bert, odd_tokenizer, settings, words):
    refused(bert, odd_tokenizer, IDS, words, **settings)


def test_a_tokenizer_or_model_that_is_not_bertlabs_is_refused(bert, odd_tokenizer):
    refused(bert, None, IDS, "tokenizer must be a bertlab Tokenizer")
    refused(torch.nn.Linear(2, 2), odd_tokenizer, IDS, "finetune needs a bertlab model")


# ---- records: shapes, fields and types, one form per set -------------------------------------------------

@pytest.mark.parametrize("task, train, words", [
    ("classify", None, "non-empty list of records"), ("classify", "train.jsonl", "got str"),
    ("classify", {"train": IDS, "val": IDS}, r"dict of splits .* pass one split's list, e.g. data\['train'\]"),
    ("classify", (x for x in IDS), "got generator"), ("classify", [1, 2], "train record 0 is a int, not a dict"),
    ("classify", [{"text": 1, "label": 0}], "train record 0: text must be a string"),
    ("classify", IDS + [{"a": "the", "b": "cat", "label": 0}], "train record 2 is a pair .* one set holds one kind"),
    ("classify", [{"a": "the", "label": 0}], "lacks b"),
    ("tag", [{"words": "the cat", "tags": [0, 1]}], "words must be a list .* split the sentence"),
    ("tag", [{"words": [], "tags": []}], "has no words"),
    ("tag", [{"words": ["the", 3], "tags": [0, 1]}], "word 1 must be a string"),
    ("tag", [{"words": ["the", "cat"], "tags": [0, "PER"]}], "mix whole numbers and strings"),
    ("qa", [{"question": "who?", "passage": "the cat", "answer": 5}], "answer must be a string .* or null"),
    ("choice", CHOICE + [{"context": "a", "endings": ["b", "c", "d"], "label": 0}], "3 endings but .* has 2"),
    ("choice", [{"context": "the", "endings": ["cat"], "label": 0}], "at least two strings"),
    ("choice", [{"context": "the", "endings": ["cat", "dog"], "label": 2}], r"whole number in 0 … 1, got 2"),
    ("choice", [{"context": "the", "endings": ["cat", "dog"], "label": True}], "got True"),
])
def test_bad_records_name_the_record_and_field(bert, odd_tokenizer, task, train, words):
    refused(bert, odd_tokenizer, train, words, task=task)


@pytest.mark.parametrize("answer", ["", "   "])
def test_an_empty_qa_answer_is_refused_not_turned_into_an_inverted_span(bert, odd_tokenizer, answer):
    train = QA + [{"question": "who?", "passage": "the dog sat", "answer": answer}]
    refused(bert, odd_tokenizer, train, "train record 1: the answer is .*, which marks no span.* or null", task="qa")
    result = bertlab.finetune(bert, odd_tokenizer, QA + [{"question": "who?", "passage": "the dog", "answer": None}],
                              task="qa", steps=1, lr=1e-3, batch_size=2)     # None: SQuAD 2.0's "no answer"
    assert math.isfinite(result.history[0]["loss"])


def test_an_answer_is_checked_in_every_record_and_after_the_cut(bert, odd_tokenizer):
    late = QA * 20 + [{"question": "who?", "passage": "the cat sat", "answer": "dog"}]   # would fail at step 11
    refused(bert, odd_tokenizer, late, "train record 20: the answer 'dog' is not in its passage", task="qa")
    cut = [{"question": "who sat on it?", "passage": "the mat was muddy and the cat sat", "answer": "the cat"}]
    refused(bert, odd_tokenizer, cut, "not in its passage within max_length 12", task="qa", max_length=12)


def test_an_input_longer_than_the_model_is_refused_before_training(bert, odd_tokenizer):
    long = IDS + [{"text": "the cat " * 40, "label": 0}]
    refused(bert, odd_tokenizer, long, "train record 2 is 82 tokens long, more than the model's 64 positions: "
                                       "pass max_length=64")
    assert bertlab.finetune(bert, odd_tokenizer, long, task="classify", steps=1, lr=1e-3, batch_size=3,
                            max_length=16).history


# ---- labels: types, classes, and every split against train -----------------------------------------------

@pytest.mark.parametrize("labels, words", [
    ([True, False], r"train record 0: label is True \(bool\): a label is a whole number ≥ 0"), ([1.0, 0.0], r"\(write 1\)"),
    ([-1, 0], "class ids start at 0"), ([None, 0], "label is None"), ([[1], 0], r"label is \[1\]"),
    ([1, "1"], "train record 1 has '1' \\(a string\\) but train record 0 1 \\(a whole number\\)"),
    (["pos", "pos"], "every classify example of train has the label 'pos': .* regression"),
    ([0, 0], "at least two different labels"), ([0, 10**9], "head would have 1000000001 outputs for 2 examples"),
])
def test_labels_of_one_type_at_least_two_classes_no_more_ids_than_examples(bert, odd_tokenizer, labels, words):
    train = [{"text": t, "label": y} for t, y in zip(["the cat", "the dog"], labels)]
    refused(bert, odd_tokenizer, train, words)


@pytest.mark.parametrize("train, val, words", [
    (TEXTS, [{"text": "a", "label": "bird"}], "val record 0 has the label 'bird', which train does not have"),
    (IDS, [{"text": "a", "label": 2}], "train's labels are 0 … 1, so the head has no output for it"),
    (IDS, [{"text": "a", "label": "1"}], "a string, but the labels of train are whole numbers"),
    (TEXTS, [{"text": "a", "label": 1}], "a whole number, but the labels of train are strings"),
])
def test_val_labels_are_checked_against_train_before_training(bert, odd_tokenizer, train, val, words):
    steps = []
    with pytest.raises(ValueError, match=words):
        bertlab.finetune(bert, odd_tokenizer, train, val, task="classify", steps=5, lr=1e-3, batch_size=2,
                         callbacks=[steps.append])
    assert steps == [], "refused before the first step"


def test_tags_of_val_are_checked_against_train(bert, odd_tokenizer):
    refused(bert, odd_tokenizer, TAGGED, "val record 0 has the tag 5", task="tag",
            val=[{"words": ["a"], "tags": [5]}])
    refused(bert, odd_tokenizer, [{"words": ["the", "cat"], "tags": [0, 0]}], "at least two different tags", task="tag")


# ---- a loss that stops being finite ----------------------------------------------------------------------

def test_a_loss_that_is_no_longer_finite_stops_the_run_before_its_update(bert, odd_tokenizer):
    seen = []
    with pytest.raises(NonFiniteLoss, match="the loss at step 2 is no longer a finite number .* lower lr") as e:
        bertlab.finetune(bert, odd_tokenizer, IDS, task="classify", steps=5, lr=1e30, batch_size=2, clip=None,
                         callbacks=[seen.append])
    assert isinstance(e.value, FloatingPointError)              # what pretrain raises too (optim.NonFiniteLoss)
    assert [h["step"] for h in e.value.result.history] == [1] == [h["step"] for h in seen]
    assert not e.value.result.model.training
    nan_start = bertlab.finetune(bert, odd_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)
    with torch.no_grad():
        nan_start.model.bert.embeddings.word_embeddings.weight[:] = math.nan
    with pytest.raises(NonFiniteLoss, match="step 1 .*loss nan"):
        bertlab.finetune(nan_start.model, odd_tokenizer, IDS, task="classify", steps=2, lr=1e-3, batch_size=2)


# ---- a tokenizer that is not the model's -----------------------------------------------------------------

def test_a_foreign_tokenizer_warns_or_is_refused(odd_tokenizer, caplog):
    _, tiny_tokenizer = bertlab.load("bertlab-tiny")
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        bertlab.finetune("bertlab-tiny", odd_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)
    assert "not the model's own" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        bertlab.finetune("bertlab-tiny", tiny_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)
    assert "not the model's own" not in caplog.text
    tiny, _ = bertlab.load("bertlab-tiny")
    big = bertlab.Bert(bertlab.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1,
                                          num_attention_heads=2, intermediate_size=37))
    with pytest.raises(ValueError, match="cannot be the model's own"):
        bertlab.finetune(big, tiny_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)


# ---- evaluate_task and load_task -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def classifier(odd_tokenizer):
    bertlab.set_seed(0)
    model = bertlab.Bert(bertlab.BertConfig(**ODD))
    return bertlab.finetune(model, odd_tokenizer, TEXTS, task="classify", steps=1, lr=1e-3, batch_size=2)


@pytest.mark.parametrize("call, words", [
    (dict(task="tag", records=TAGGED), r"task='tag' is scored with a BertForTokenClassification .* the model is a "
                                       r"BertForSequenceClassification, the head of task='classify'"),
    (dict(names=None), "string labels: pass names=result.labels"),
    (dict(names=["a", "b", "c"]), "names has 3 labels but the model's head has 2 outputs"),
    (dict(records=[{"text": "a", "label": "bird"}]), "^record 0 has the label 'bird', which the model's head does not"),
    (dict(tau=math.nan), "tau must be a number"), (dict(batch_size=0), "batch_size must be"),
    (dict(tokenizer=None), "tokenizer must be a bertlab Tokenizer"), (dict(records=[]), "non-empty"),
    (dict(task="nli"), "unknown task 'nli'"),
])
def test_evaluate_task_says_what_is_wrong(classifier, odd_tokenizer, call, words):
    args = dict(model=classifier.model, tokenizer=odd_tokenizer, records=TEXTS, task="classify",
                names=classifier.labels) | call
    with pytest.raises(ValueError, match=words):
        evaluate_task(args.pop("model"), args.pop("tokenizer"), args.pop("records"), **args)
    assert 0 <= classifier.evaluate(odd_tokenizer, TEXTS)["accuracy"] <= 1


def test_evaluate_task_names_the_head_a_pre_trained_model_lacks(odd_tokenizer):
    model, _ = bertlab.load("bertlab-tiny")
    with pytest.raises(ValueError, match="BertForQuestionAnswering .* BertForPreTraining \\(a pre-trained model"):
        evaluate_task(model, odd_tokenizer, QA, task="qa")


@pytest.mark.parametrize("name", [None, ["topic"], "Topic", "squad", 3])
def test_load_task_names_the_shipped_sets(name):
    with pytest.raises(ValueError, match="choose one of topic, follows, tagging, qa, choice"):
        bertlab.load_task(name)


def test_a_trained_head_with_another_number_of_labels_is_replaced_with_a_warning(bert, odd_tokenizer, caplog):
    """A classify model given back with a set that lacks one of its classes got a new head without a word."""
    three = bertlab.BertForSequenceClassification(bert, num_labels=3)
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        run = bertlab.finetune(three, odd_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)
    assert run.model.num_labels == 2 and "head has 3 outputs" in caplog.text and "need 2" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        bertlab.finetune(run.model, odd_tokenizer, IDS, task="classify", steps=1, lr=1e-3, batch_size=2)
    assert "replaces it" not in caplog.text
