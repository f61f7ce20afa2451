"""What `finetune`, `evaluate_task` and `bertlab finetune` check before the first step: the one home for it.

A fine-tuning run that meets a bad record at step 800 has wasted the 799 before it, and one that meets none
but trains on the wrong thing (a one-class "classifier" that is really a regression head, `1` and `"1"` as two
classes, a tag that silently lands on the next word) wastes more. So everything is checked here, before any
training, and each error names the split and record (or the file and line), the field, and what to do:

- the settings (`FineTuneSettings`), each number against the range its field declares (bertlab/settings.py,
  as pre-training's `PretrainArgs`);
- the records of every split: their fields and the types of those fields, one form per set;
- the labels: one type per task (whole numbers or strings, never both), at least two classes in `train`,
  and every label of `val` and `test` one that `train` defines;
- what the tokenizer makes of them: no input longer than the model's positions, no tagged word that becomes
  no token, every QA answer a span of its passage;
- for scoring, the model: the head the task needs, with as many outputs as there are labels.
"""

from __future__ import annotations

import os

from .. import settings
from ..model.heads import BertForPreTraining
from .tasks import FIELDS, HEADS, TASKS, answer_span


def check_settings(s) -> None:
    """Each field of a `FineTuneSettings` in the range its field declares (bertlab/settings.py, the same check as
    pre-training's), else a ValueError naming it, the value and the range."""
    if s.task not in TASKS:
        raise ValueError(f"unknown task {s.task!r}: choose one of {', '.join(TASKS)} "
                         "(load_task's sets are named topic, follows, tagging, qa, choice)")
    settings.check_given(type(s), vars(s), flags=False)


def check_call(progress, callbacks) -> None:
    """`finetune`'s keywords that are not settings: `progress` a bool, `callbacks` a list of functions."""
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be True or False, got {progress!r}")
    if callable(callbacks) or isinstance(callbacks, (str, bytes, dict)) or not hasattr(callbacks, "__iter__"):
        raise ValueError(f"callbacks must be a list of functions (each called with every history entry), got "
                         f"{type(callbacks).__name__}" + (": pass [f]" if callable(callbacks) else ""))
    for cb in callbacks:
        if not callable(cb):
            raise ValueError(f"callbacks must be a list of functions, but one is {cb!r} ({type(cb).__name__})")


# ---- records ---------------------------------------------------------------------------------------------

def where(records, i: int, split: str) -> str:
    """How an error names record `i`: its file and line when it came from a JSONL file, else split and index."""
    lines = getattr(records, "lines", None)
    if lines is not None:
        return f"{records.path}, line {lines[i]}"
    return f"record {i}" if split == "records" else f"{split} record {i}"


def split_name(records, split: str) -> str:
    """How an error names a whole split: the flag its file came from (`--train`) on the command line, else its
    name (`train`), so --val and --test are both checked against "--train's labels"."""
    return getattr(records, "flag", split)


def keys(task: str, record: dict | None = None) -> tuple[str, ...]:
    """The fields a `task` record has (classify: a text, or a pair when the record has "a" or "b")."""
    if task == "classify":
        pair = record is not None and ("a" in record or "b" in record)
        return ("a", "b", "label") if pair else ("text", "label")
    return FIELDS[task]


def check_records(task: str, records, split: str = "train") -> None:
    """A ValueError naming the record, the field and what a record of `task` holds, before any training.

    Checked: a non-empty list of dicts; each with its task's fields, of the right types; one form per set (text
    or pair records, one number of endings); labels all whole numbers ≥ 0 or all strings; a QA answer a
    non-empty string or None (None: the question has no answer, SQuAD 2.0's rule).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: choose one of {', '.join(TASKS)} "
                         "(load_task's sets are named topic, follows, tagging, qa, choice)")
    if isinstance(records, dict) and set(records) & {"train", "val", "test"}:
        raise ValueError(f"{split} is a dict of splits ({', '.join(map(str, records))}), as load_task returns: "
                         f"pass one split's list, e.g. data[{'train' if 'train' in records else next(iter(records))!r}]")
    if not isinstance(records, (list, tuple)) or not records:
        empty = isinstance(records, (list, tuple))
        raise ValueError(f"{task} needs a non-empty list of records (dicts) for {split}, got "
                         f"{type(records).__name__}" + (" of length 0" if empty else "")
                         + ("; pass val=None for no validation" if empty and split == "val" else "")
                         + ("; read the file first (one dict a line for JSONL)" if isinstance(records, str) else ""))
    first = None
    for i, r in enumerate(records):
        at = where(records, i, split)
        if not isinstance(r, dict):
            raise ValueError(f"{at} is a {type(r).__name__}, not a dict: a {task} record has keys "
                             f"{', '.join(keys(task))}")
        missing = [k for k in keys(task, r) if k not in r]
        if missing:
            raise ValueError(f"{at} lacks {', '.join(missing)}: it has {', '.join(map(str, r)) or 'no keys'}; a "
                             f"{task} record has keys {', '.join(keys(task))}"
                             + (" (a pair: a, b, label)" if task == "classify" else ""))
        _check_fields(task, r, at)
        if first is None:
            first = r
            continue
        _check_same_form(task, r, first, at, where(records, 0, split))


def _check_fields(task: str, r: dict, at: str) -> None:
    def text(field):
        if not isinstance(r[field], str):
            raise ValueError(f"{at}: {field} must be a string, got {r[field]!r} ({type(r[field]).__name__})")

    if task == "classify":
        for field in keys(task, r)[:-1]:
            text(field)
        _check_label(r["label"], f"{at}: label")
    elif task == "tag":
        words, tags = r["words"], r["tags"]
        for field, value in (("words", words), ("tags", tags)):
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"{at}: {field} must be a list (one entry a word), got {type(value).__name__}"
                                 + (": split the sentence into words yourself" if isinstance(value, str) else ""))
        if len(words) != len(tags):
            raise ValueError(f"{at}: {len(words)} words but {len(tags)} tags; give one tag a word")
        if not words:
            raise ValueError(f"{at} has no words: a tagging record needs at least one word (drop the record)")
        for j, w in enumerate(words):
            if not isinstance(w, str):
                raise ValueError(f"{at}: word {j} must be a string, got {w!r} ({type(w).__name__})")
        kinds = set()
        for j, t in enumerate(tags):
            _check_label(t, f"{at}: tag {j}")
            kinds.add(type(t) is str)
        if len(kinds) > 1:
            raise ValueError(f"{at}: the tags mix whole numbers and strings ({list(tags)!r}): give every tag the same "
                             "type (1 and \"1\" would be two different tags)")
    elif task == "qa":
        text("question"), text("passage")
        answer = r["answer"]
        if answer is not None and not isinstance(answer, str):
            raise ValueError(f"{at}: answer must be a string from the passage, or null (None) for no answer, got "
                             f"{answer!r} ({type(answer).__name__})")
        if isinstance(answer, str) and not answer.strip():
            raise ValueError(f"{at}: the answer is {answer!r}, which marks no span: give the answer's text as it "
                             "appears in the passage, or null (None) when the passage does not answer the question")
    elif task == "choice":
        text("context")
        endings = r["endings"]
        if not isinstance(endings, (list, tuple)) or len(endings) < 2:
            raise ValueError(f"{at}: endings must be a list of at least two strings to choose from, got {endings!r}")
        for j, e in enumerate(endings):
            if not isinstance(e, str):
                raise ValueError(f"{at}: ending {j} must be a string, got {e!r} ({type(e).__name__})")
        label = r["label"]
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(endings):
            raise ValueError(f"{at}: label must be the index of the right ending, a whole number in 0 … "
                             f"{len(endings) - 1}, got {label!r}")


def _check_label(value, at: str) -> None:
    """A label or tag: a whole number ≥ 0 (a class id) or a string (a class name); never a bool or a float."""
    if isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, int):
        hint = (f" (write {int(value)})" if isinstance(value, float) and value.is_integer() and value >= 0 else "")
        raise ValueError(f"{at} is {value!r} ({type(value).__name__}): a label is a whole number ≥ 0 (a class id) "
                         f"or a string (a class name){hint}")
    if value < 0:
        raise ValueError(f"{at} is {value}: class ids start at 0; number the classes 0 … n-1, or give names")


def _check_same_form(task: str, r: dict, first: dict, at: str, at_first: str) -> None:
    """One form per set: text or pair classify records, one number of endings, one label type."""
    if task == "classify" and (("a" in r) != ("a" in first)):
        raise ValueError(f"{at} is a {'pair (a, b)' if 'a' in r else 'text'} record but {at_first} a "
                         f"{'pair (a, b)' if 'a' in first else 'text'} record: one set holds one kind")
    if task == "choice" and len(r["endings"]) != len(first["endings"]):
        raise ValueError(f"{at} has {len(r['endings'])} endings but {at_first} has {len(first['endings'])}: "
                         "every choice record of a set needs the same number of endings")
    if task in ("classify", "tag"):
        a, b = _kind(task, r), _kind(task, first)
        if a != b:
            raise ValueError(f"{at} has {_one(task, r)!r} ({a}) but {at_first} {_one(task, first)!r} ({b}): "
                             "give every label the same type (1 and \"1\" would be two different classes)")


def _kind(task: str, r: dict) -> str:
    value = r["label"] if task == "classify" else r["tags"][0]
    return "a string" if isinstance(value, str) else "a whole number"


def _one(task: str, r: dict):
    return r["label"] if task == "classify" else r["tags"][0]


# ---- labels ----------------------------------------------------------------------------------------------

def label_space(task: str, train) -> tuple[list | None, int | None]:
    """The label names (None when the labels are whole numbers) and the number of classes the head needs.

    String labels are numbered in sorted order. String tags put "O" first, so that id 0 is "no entity" as
    entity F1 reads it, and "O" is added when the data has none: then every tag given is an entity tag (none
    becomes "no entity" by sorting first). Whole-number labels are class ids: the head has max + 1 outputs,
    and tag 0 is "no entity". Refused: one class only (there is nothing to tell apart; a 1-output
    "classifier" would be a regression head), and more class ids than examples (most could never be seen).
    """
    if task not in ("classify", "tag"):
        return None, None
    values = [t for r in train for t in r["tags"]] if task == "tag" else [r["label"] for r in train]
    distinct = set(values)
    what = "tags" if task == "tag" else "labels"
    if len(distinct) < 2:
        [only] = distinct
        raise ValueError(f"every {task} example of train has the {what[:-1]} {only!r}: {task} needs at least two "
                         f"different {what} to tell apart" + (" (e.g. O and an entity tag)" if task == "tag" else
                                                              " (a one-output head would be a regression)"))
    if isinstance(values[0], str):
        if task == "tag":
            return ["O"] + sorted(distinct - {"O"}), None
        return sorted(distinct), None
    n = max(distinct) + 1
    if n > len(values):
        raise ValueError(f"the {what} of train are class ids up to {n - 1}, so the head would have {n} outputs for "
                         f"{len(values)} examples and {len(distinct)} different {what}: number the classes 0 … "
                         f"{len(distinct) - 1}, or give them as strings")
    return None, n


def check_labels(task: str, records, names: list | None, n: int | None, split: str, against: str = "train") -> None:
    """Every label of `records` is one the head can predict: a name of `names`, or an id below `n`."""
    if task not in ("classify", "tag"):
        return
    for i, r in enumerate(records):
        values = r["tags"] if task == "tag" else [r["label"]]
        for v in values:
            if names is not None:
                if not isinstance(v, str):
                    raise ValueError(f"{where(records, i, split)} has the {_name(task)} {v!r}, a whole number, but "
                                     f"the {_name(task)}s of {against} are strings ({', '.join(map(repr, names[:8]))}"
                                     f"{', …' if len(names) > 8 else ''}): give every split the same type")
                if v not in names:
                    raise ValueError(f"{where(records, i, split)} has the {_name(task)} {v!r}, which {against} does "
                                     f"not have, so the head cannot predict it: the {_name(task)}s are "
                                     f"{', '.join(map(repr, names))}")
            else:
                if isinstance(v, str):
                    raise ValueError(f"{where(records, i, split)} has the {_name(task)} {v!r}, a string, but the "
                                     f"{_name(task)}s of {against} are whole numbers: give every split the same "
                                     "type (1 and \"1\" would be two different classes)")
                if v >= n:
                    raise ValueError(f"{where(records, i, split)} has the {_name(task)} {v}, but {against}'s "
                                     f"{_name(task)}s are 0 … {n - 1}, so the head has no output for it")


def _name(task: str) -> str:
    return "tag" if task == "tag" else "label"


# ---- what the tokenizer makes of them --------------------------------------------------------------------

def check_tokenizer(tokenizer) -> None:
    if not (callable(tokenizer) and hasattr(tokenizer, "batch") and hasattr(tokenizer, "backend")):
        raise ValueError(f"tokenizer must be a bertlab Tokenizer (the second thing bertlab.load returns), got "
                         f"{type(tokenizer).__name__}: model, tokenizer = bertlab.load(...)")


def check_encodable(task: str, records, tokenizer, positions: int, split: str, max_length: int | None = None) -> None:
    """Each record as the model will read it: no longer than its `positions` (unless `max_length` cuts it), no
    tagged word that becomes no token, every answer a span of its passage's tokens (after any cut)."""
    limit = f"max_length={positions} to cut longer inputs" if max_length is None else None

    def fits(enc, i):
        if len(enc) > positions:
            raise ValueError(f"{where(records, i, split)} is {len(enc)} tokens long, more than the model's {positions} "
                             f"positions: " + (f"pass {limit}, or shorten it" if limit else "shorten it"))

    cut = dict(max_length=max_length, truncation=True) if max_length else {}
    for i, r in enumerate(records):
        if task == "classify":
            fits(tokenizer(r["a"], r["b"], **cut) if "a" in r else tokenizer(r["text"], **cut), i)
        elif task == "choice":
            for e in r["endings"]:
                fits(tokenizer(r["context"], e, **cut), i)
        elif task == "tag":
            enc = tokenizer(list(r["words"]), is_split_into_words=True)
            seen = set(enc.word_ids)
            for j, w in enumerate(r["words"]):
                if j not in seen:
                    raise ValueError(f"{where(records, i, split)}: word {j} ({w!r}) becomes no token (it is empty, "
                                     "white space, or only characters BERT's text cleanup drops, such as a "
                                     "zero-width space), so the model cannot tag it: remove the word and its tag")
            if not max_length:
                fits(enc, i)
        elif task == "qa":
            enc = tokenizer(r["question"], r["passage"], **cut)
            fits(enc, i)
            try:
                answer_span(enc, r["answer"], tokenizer)
            except ValueError:
                cut_note = f" within max_length {max_length}" if max_length else ""
                raise ValueError(f"{where(records, i, split)}: the answer {r['answer']!r} is not in its passage"
                                 f"{cut_note} (as tokens): give an answer that is a span of the passage, or null "
                                 "(None) for no answer") from None


# ---- the model -------------------------------------------------------------------------------------------

def check_head(task: str, model, records, names: list | None, against: str = "the model's head") -> None:
    """`model` is the head `task` is scored with, and has an output for every label of `records`."""
    need = HEADS[task]
    if isinstance(model, (str, os.PathLike)):
        raise ValueError(f"evaluate_task takes the fine-tuned model itself, got the {type(model).__name__} {model!r}: "
                         "model, tokenizer = bertlab.load(folder) (a run's label names are in its result.json)")
    if not isinstance(model, need):
        other = next((t for t, h in HEADS.items() if isinstance(model, h)), None)
        said = (f"a {type(model).__name__}, the head of task={other!r}" if other else
                f"a {type(model).__name__}" + (" (a pre-trained model, before fine-tuning)"
                                               if isinstance(model, BertForPreTraining) else ""))
        raise ValueError(f"task={task!r} is scored with a {need.__name__} (result.model of "
                         f"finetune(..., task={task!r})), but the model is {said}")
    if task not in ("classify", "tag"):
        return
    strings = isinstance(records[0]["label"] if task == "classify" else records[0]["tags"][0], str)
    if strings and names is None:
        raise ValueError(f"these {task} records have string {_name(task)}s: pass names=result.labels (the order the "
                         "head numbers them in), or call result.evaluate(tokenizer, records)")
    if names is not None:
        if not isinstance(names, (list, tuple)) or len(set(map(repr, names))) != len(names):
            raise ValueError(f"names must be the list of label names a run numbered (result.labels), got {names!r}")
        if len(names) != model.num_labels:
            raise ValueError(f"names has {len(names)} {_name(task)}s but the model's head has {model.num_labels} "
                             "outputs: pass the names of the run that trained this model (result.labels)")
    check_labels(task, records, names, None if names is not None else model.num_labels, "records", against)
