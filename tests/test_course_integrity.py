"""The course cannot be corrupted or fooled by an answer (issue 27, item 6): a learner's function gets copies,
never the cached models; an answer that lies about itself (`__eq__`, `__len__`, `__float__`, a subclass) or
raises while it is read is a ✗ with a message, never a ✓ and never a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import bertlab
from bertlab.course import registry

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


def solution(exercise: str):
    nn, k = exercise.split(".")
    spec = importlib.util.spec_from_file_location(f"solutions_nb{nn}_integrity", SOLUTIONS / f"nb{nn}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"ex_{nn}_{k}")()


# exercises after 02.1 that compute with the two models 02.1 hands out (bertlab-tiny, minilm)
LATER = ["02.2", "02.3", "00.2", "03.2", "07.3"]


def all_eval(name: str) -> bool:
    model, _ = registry.loaded(name)
    return not any(m.training for m in model.modules())


def test_an_answer_that_edits_the_embeddings_in_place_changes_nothing_for_later_checks():
    right = solution("02.1")
    model = registry.loaded("minilm")[0]
    weights = getattr(model, "bert", model).embeddings.word_embeddings.weight
    before = weights.detach().clone()

    def vandal(embeddings, input_ids, token_type_ids):
        out = right(embeddings, input_ids, token_type_ids)
        embeddings.train()                                    # and leaves its input in training mode
        embeddings.word_embeddings.weight.data.mul_(0)        # through .data: no version counter sees it
        with torch.no_grad():
            embeddings.token_type_embeddings.weight.add_(1)
        return out
    assert bertlab.check("02.1", vandal).right                 # its sum was right; its edits hit a copy
    assert torch.equal(weights, before)
    assert all_eval("minilm") and all_eval("bertlab-tiny")
    for exercise in LATER:
        result = bertlab.check(exercise, solution(exercise))
        assert result.right, f"after the vandal, {exercise}'s right answer: {result}"


def test_an_answer_that_reaches_the_cached_model_is_a_cross_and_the_model_is_loaded_afresh():
    right = solution("02.1")
    cached = registry.loaded("minilm")[0]

    def sneaky(embeddings, input_ids, token_type_ids):
        registry._LOADED["minilm"][0].train()                  # not its input: the course's own model
        return right(embeddings, input_ids, token_type_ids)
    result = bertlab.check("02.1", sneaky)
    assert not result.right and result.kind == "changed the model" and "minilm" in result.message
    assert registry.loaded("minilm")[0] is not cached and all_eval("minilm")
    assert bertlab.check("02.1", right).right and bertlab.check("00.2", solution("00.2")).right


class AlwaysEqualInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class Liar:
    """Says it equals anything, has any length, is any number; its repr fails."""

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __len__(self):
        return 2

    def __float__(self):
        return 0.5

    def __int__(self):
        return 3

    def __repr__(self):
        raise RuntimeError("repr refused")


class Raiser:
    def __eq__(self, other):
        raise ValueError("eq refused")

    def __len__(self):
        raise ValueError("len refused")

    def __float__(self):
        raise ValueError("float refused")

    def __repr__(self):
        raise ValueError("repr refused")


class LongList(list):
    def __len__(self):
        return 2

    def __eq__(self, other):
        return True


class ShoutingStr(str):
    def strip(self, *args):
        raise RuntimeError("strip refused")

    def lower(self):
        raise RuntimeError("lower refused")


class TensorLiar(torch.Tensor):
    def __eq__(self, other):
        return True

    def item(self):
        raise RuntimeError("item refused")


def deep() -> list:
    x: list = []
    for _ in range(100):
        x = [x]
    return x


def returns(value):
    def fn(*args):
        return value
    return fn


def raises(error):
    def fn(*args):
        raise error
    return fn


HOSTILE = [
    ("00.1", AlwaysEqualInt(7), None),                 # read as the 7 it holds: wrong, whatever its == says
    ("00.1", Liar(), "wrong type"),
    ("00.1", Raiser(), "wrong type"),
    ("00.3", Liar(), "wrong type"),
    ("00.3", TensorLiar(torch.tensor(0.5)), None),     # read as tensor(0.5)
    ("00.3", float("nan"), None),
    ("00.3", 10 ** 400, None),
    ("00.1", 10 ** 400, None),
    ("00.4", ShoutingStr("nothing like it"), None),
    ("00.4", b"\xff\xfe", None),
    ("00.2", LongList([0]), None),                     # a (layer, head) list that claims two items
    ("00.2", (True, False), "wrong type"),
    ("02.2", deep(), "wrong type"),
    ("02.2", {Liar()}, "wrong type"),
    ("02.1", returns(Liar()), "wrong type"),
    ("02.1", returns(AlwaysEqualInt(1)), None),
    ("02.1", raises(RecursionError("deep")), "your function failed"),
    ("02.1", raises(SystemExit(3)), "your function failed"),             # exit() in a learner's function
    ("02.1", returns(torch.full((1, 5, 8), float("nan"))), None),
    ("03.1", returns((Raiser(), Raiser())), "wrong type"),
    ("05.3", returns(Liar()), "wrong type"),
    ("07.2", lambda hidden, mask: hidden.mean(dim=1).as_subclass(TensorLiar), None),
]


@pytest.mark.parametrize("exercise, answer, kind", HOSTILE, ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(HOSTILE)])
def test_an_answer_that_lies_or_raises_is_a_cross_with_a_message(exercise, answer, kind):
    result = bertlab.check(exercise, answer)
    assert isinstance(result, registry.Result)
    assert not result.right and result.answered, str(result)
    assert result.message and "Traceback" not in result.message
    if kind:
        assert result.kind == kind, str(result)
    str(result), result._repr_html_()                    # prints, in a terminal and in a notebook
    assert all_eval("minilm")


def test_torchs_global_switches_set_by_an_answer_are_put_back():
    right = solution("02.1")

    def switches(embeddings, input_ids, token_type_ids):
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(True)
        return right(embeddings, input_ids, token_type_ids)
    assert torch.get_default_dtype() == torch.float32
    with torch.no_grad():
        bertlab.check("02.1", switches)
        assert not torch.is_grad_enabled()
    assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()


def test_plain_reads_values_through_their_base_classes():
    assert type(registry.plain(AlwaysEqualInt(3))) is int and registry.plain(AlwaysEqualInt(3)) == 3
    assert registry.plain(LongList([1, 2, 3])) == [1, 2, 3] and type(registry.plain(LongList([1]))) is list
    assert type(registry.plain(ShoutingStr("a"))) is str
    t = registry.plain(torch.nn.Parameter(torch.ones(2)))
    assert type(t) is torch.Tensor and not t.requires_grad
    assert registry.plain(torch.Size([1, 2])) == (1, 2) and type(registry.plain(torch.Size([1]))) is tuple
    assert registry.plain({"a": (1, [2])}) == {"a": (1, [2])}
    assert callable(registry.plain(len)) and registry.plain(range(3)) == range(3)
    with pytest.raises(registry.Unreadable, match="class Liar"):
        registry.plain(Liar())
    with pytest.raises(registry.Unreadable, match="nested"):
        registry.plain(deep())


def test_a_learners_function_gets_copies_and_its_result_is_read_plainly():
    model = torch.nn.Linear(2, 2).eval()
    x = torch.ones(3)

    def editor(m, t):
        m.train()
        m.weight.data.zero_()
        t.add_(1)
        return AlwaysEqualInt(5)
    out, bad = registry.run_learner(editor, model, x)          # it edits its tensor in place: refused, by position
    assert out is None and bad.kind == "changed its input" and "input 2" in bad.message and "in place" in bad.message
    assert not model.training and model.weight.abs().sum() > 0 and torch.equal(x, torch.ones(3))
    out, bad = registry.run_learner(editor, model, x, edits_allowed=True)      # a hook's job is to edit
    assert bad is None and type(out) is int and out == 5
    assert not model.training and model.weight.abs().sum() > 0 and torch.equal(x, torch.ones(3))
    for arg, edit in ((torch.tensor([1.0, float("nan")]), lambda t: t.mul_(1)),      # NaN stays NaN: unchanged
                      ([1, [2, 3]], lambda v: v[1].append(4)), ({"n": 3}, lambda d: d.pop("n")), ("text", lambda t: t)):
        def edits(v, edit=edit):
            edit(v)
            return 1
        out, bad = registry.run_learner(edits, arg)
        assert (bad is None) == (isinstance(arg, str) or torch.is_tensor(arg)), (arg, bad and bad.message)
    out, bad = registry.run_learner(returns(Liar()))
    assert out is None and bad.kind == "wrong type"
