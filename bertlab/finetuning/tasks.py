"""Task shapes of the paper's figure 4 (and SWAG): the records each takes, how a batch of them becomes model
inputs, and the head that reads them.

    classify   {"text", "label"} or a pair {"a", "b", "label"}    pooled [CLS] → classes       accuracy
    tag        {"words", "tags"}                                   each word's first piece → tag entity F1
    qa         {"question", "passage", "answer"} (None: no answer) start / end token scores    exact match
    choice     {"context", "endings", "label"}                     each ending's [CLS] → score accuracy

Labels and tags may be whole numbers (0 … n-1) or strings, not both; strings are numbered in sorted order, and
the names kept, so a prediction can be read back. Tag 0, or the string "O", means "no entity" for entity F1
(string tags always number "O" first, added when the data has none). What is checked before training, and
what each error says: checks.py.

Tagging reads the caller's words as they are: each is split into pieces on its own (its punctuation too:
"don't" is don ' t, "New-York" new - york), never re-joined with its neighbours and re-split, so a tag
stays on its word whatever characters the word holds. The word's first piece carries its tag; a word that
becomes no piece at all (empty, or only a zero-width space) is refused by the checks, since nothing could
carry its tag. With `max_length`, the words cut off the end are not trained on.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..model.heads import (
    IGNORE,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)

TASKS = ("classify", "tag", "qa", "choice")
FIELDS = {"classify": ("label",), "tag": ("words", "tags"), "qa": ("question", "passage", "answer"),
          "choice": ("context", "endings", "label")}
HEADS = {"classify": BertForSequenceClassification, "tag": BertForTokenClassification,
         "qa": BertForQuestionAnswering, "choice": BertForMultipleChoice}
METRIC = {"classify": "accuracy", "tag": "entity_f1", "qa": "exact_match", "choice": "accuracy"}

# the shipped task sets: name → task shape (their records, and where they come from: assets/tasks/README.md)
SHIPPED = {"topic": "classify", "follows": "classify", "tagging": "tag", "qa": "qa", "choice": "choice"}
ASSETS = Path(__file__).resolve().parent.parent / "assets" / "tasks"


def load_task(name: str) -> dict[str, list[dict]]:
    """A shipped task's splits, `{"train", "val", "test"}`, each a list of records (see the module docstring).

    `topic` (one sentence → one of 4 corpus files), `follows` (does B follow A), `tagging` (PER / LOC / TIME),
    `qa` (a span or no answer), `choice` (the true next sentence among 4). Which task shape each is:
    `bertlab.finetuning.SHIPPED[name]`.
    """
    if not isinstance(name, str) or name not in SHIPPED:
        raise ValueError(f"no shipped task {name!r}: choose one of {', '.join(SHIPPED)}")
    return {split: [json.loads(line) for line in (ASSETS / f"{name}.{split}.jsonl").read_text(encoding="utf-8")
                    .splitlines() if line.strip()] for split in ("train", "val", "test")}


def make_head(task: str, bert, n_labels: int | None):
    """The task's head on `bert` (new output layer, initialised as BERT's)."""
    if task in ("classify", "tag"):
        return HEADS[task](bert, num_labels=n_labels)
    return HEADS[task](bert)


def _ids(value, names):
    return names.index(value) if names is not None else value


def encode(task: str, records: list[dict], tokenizer, names: list | None = None, max_length: int | None = None) -> dict:
    """Model inputs and labels for a batch of records, padded to the batch's longest row (dynamic padding).

    `qa` adds `encodings` (each row's Encoding, for reading spans back); the caller pops it before the model.
    """
    trunc = dict(max_length=max_length, truncation=True) if max_length else {}
    if task == "classify":
        if "a" in records[0]:
            b = tokenizer.batch([r["a"] for r in records], [r["b"] for r in records], **trunc)
        else:
            b = tokenizer.batch([r["text"] for r in records], **trunc)
        labels = torch.tensor([_ids(r["label"], names) for r in records])
    elif task == "choice":
        C = len(records[0]["endings"])
        if any(len(r["endings"]) != C for r in records):
            raise ValueError("every choice record needs the same number of endings: "
                             f"{sorted({len(r['endings']) for r in records})} in one batch")
        # every (context, ending) pair as one row, then (B, C, T) for BertForMultipleChoice
        b = tokenizer.batch([r["context"] for r in records for _ in r["endings"]],
                            [e for r in records for e in r["endings"]], **trunc)
        return {k: b[k].view(len(records), C, -1) for k in ("input_ids", "token_type_ids", "attention_mask")} | {
            "labels": torch.tensor([r["label"] for r in records])}
    elif task == "tag":
        # the caller's words, each split on its own: word_ids count them, whatever characters they hold
        b = tokenizer.batch([list(r["words"]) for r in records], is_split_into_words=True, **trunc)
        labels = torch.full_like(b.input_ids, IGNORE)      # only each word's first piece is scored
        for i, r in enumerate(records):
            previous = None
            for j, w in enumerate(b.word_ids[i]):
                if w is not None and w != previous:
                    labels[i, j] = _ids(r["tags"][w], names)
                previous = w
    elif task == "qa":
        b = tokenizer.batch([r["question"] for r in records], [r["passage"] for r in records], **trunc)
        spans = [answer_span(e, r["answer"], tokenizer) for e, r in zip(b.encodings, records)]
        return dict(input_ids=b.input_ids, token_type_ids=b.token_type_ids, attention_mask=b.attention_mask,
                    start_positions=torch.tensor([s for s, _ in spans]),
                    end_positions=torch.tensor([e for _, e in spans]), encodings=b.encodings)
    else:
        raise ValueError(f"unknown task {task!r}: choose one of {', '.join(TASKS)}")
    return dict(input_ids=b.input_ids, token_type_ids=b.token_type_ids, attention_mask=b.attention_mask,
                labels=labels)


def answer_span(enc, answer: str | None, tokenizer) -> tuple[int, int]:
    """First and last token of the answer inside the passage (segment 1); (0, 0), the [CLS] token, if none.

    SQuAD 2.0 as the paper trains it: a question with no answer points at [CLS].
    """
    if answer is None:
        return 0, 0
    ids = [tokenizer.token_to_id(p) for p in tokenizer.tokenize(answer)]
    if not ids:            # an empty answer would "match" before any token and give the inverted span (s, s - 1)
        raise ValueError(f"answer {answer!r} marks no span: give the answer's text, or None for no answer")
    for s in range(len(enc)):
        if enc.sequence_ids[s] == 1 and enc.input_ids[s:s + len(ids)] == ids:
            return s, s + len(ids) - 1
    raise ValueError(f"answer {answer!r} is not in its passage's tokens: give an answer that is a span of the "
                     "passage, or None for no answer")
