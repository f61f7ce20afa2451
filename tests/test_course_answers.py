"""How the checks read an answer (bertlab/course/answers.py), the same for every exercise: an int exercise takes
`tensor(7)` as a float one takes `tensor(0.5)`; a (layer, head) pair of 0-d tensors counts; a float question
says its precision and takes the answer rounded to it; a function exercise refuses bertlab's own function and
a thin wrapper of it; the helpers' bad inputs get an answer, never a traceback."""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import bertlab
from bertlab.course import answers

REPO = Path(__file__).resolve().parents[1]
PRECISION = re.compile(r"to (one|two|three) decimals|to three significant figures")


def solution(exercise: str):
    nn, k = exercise.split(".")
    spec = importlib.util.spec_from_file_location(f"solutions_nb{nn}_answers", REPO / "solutions" / f"nb{nn}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"ex_{nn}_{k}")()


ALL = [e.id for e in bertlab.course.exercises()]


@pytest.fixture(scope="module")
def solved():
    return {e: solution(e) for e in ALL}


def test_every_int_and_pair_answer_counts_as_a_0d_tensor_too(solved):
    ints = [e for e, a in solved.items() if isinstance(a, int) and not isinstance(a, bool)]
    pairs = [e for e, a in solved.items() if isinstance(a, tuple) and len(a) == 2 and all(isinstance(x, int) for x in a)]
    assert len(ints) >= 8 and len(pairs) >= 4, (ints, pairs)
    for e in ints:
        assert bertlab.check(e, torch.tensor(solved[e])).right, e
    for e in pairs:
        assert bertlab.check(e, tuple(torch.tensor(x) for x in solved[e])).right, e
        assert bertlab.check(e, list(solved[e])).right, e


def test_a_float_is_not_a_count(solved):
    e = next(e for e, a in solved.items() if isinstance(a, int) and not isinstance(a, bool) and a > 10)
    r = bertlab.check(e, float(solved[e]))
    assert not r.right and r.kind == "wrong type" and "int" in r.message


def test_every_float_question_says_its_precision_and_takes_the_answer_rounded_to_it(solved):
    floats = [e for e, a in solved.items() if isinstance(a, float)]
    assert len(floats) >= 8, floats
    words = {"one": 1, "two": 2, "three": 3}
    for e in floats:
        expects = bertlab.course.get(e).expects
        said = PRECISION.search(expects)
        assert said, f"{e}: the question must say its precision ('to two decimals'): {expects}"
        truth = solved[e]
        rounded = (float(f"{truth:.3g}") if "significant" in said.group(0)
                   else round(truth, words[said.group(1)]))
        assert bertlab.check(e, rounded).right, (e, rounded)
        assert bertlab.check(e, torch.tensor(truth)).right, e


@pytest.mark.parametrize("exercise, library", [("09.1", "bertlab.experiments.ablations.next_token_labels"),
                                               ("09.2", "bertlab.experiments.clear_of_noise"),
                                               ("11.2", "bertlab.probe.attention_maps.merge_word_pieces"),
                                               ("03.1", "torch.nn.functional.scaled_dot_product_attention")])
def test_a_function_exercise_refuses_the_librarys_own_function(exercise, library):
    module, name = library.rsplit(".", 1)
    fn = getattr(importlib.import_module(module), name)
    for given in (fn, functools.partial(fn), lambda *a: fn(*a)):
        r = bertlab.check(exercise, given)
        assert not r.right and r.kind == "the library's function" and name in r.message, r


def test_the_embedding_sum_refuses_the_embedding_layers_own_forward_however_it_is_wrapped():
    """02.1: the layer's forward returns the parts it added (`.sum`): handing that back is the library doing the
    exercise, found by running it (the learner's function gets a copy of the layer, so by the layer's class)."""
    def own(e, ids, types):
        return e(ids, types).sum

    def via_forward(e, ids, types):
        return e.forward(ids, types).sum

    def in_a_helper(e, ids, types):
        parts = (lambda m: m(ids, types))(e)
        return parts.token + parts.segment + parts.position
    for given in (own, via_forward, in_a_helper):
        r = bertlab.check("02.1", given)
        assert not r.right and r.kind == "the library's function" and "embeddings(...)" in r.message, r


@pytest.mark.parametrize("given", [lambda row: torch.distributions.Categorical(probs=row).entropy(),
                                   lambda row: torch.special.entr(row).sum(),
                                   functools.partial(torch.distributions.Categorical.entropy)])
def test_the_entropy_exercise_refuses_torchs_own_entropy(given):
    r = bertlab.check("06.2", given)
    assert not r.right and r.kind == "the library's function", r


def test_library_call_reads_a_name_for_functions_that_call_themselves_otherwise():
    assert torch.special.entr.__name__ != "entr"                     # why a name is needed at all
    assert answers.library_call(lambda row: torch.special.entr(row).sum(), "entr") == "entr"
    assert answers.library_call(lambda row: -(row * row.log()).sum(), "entr") is None
    assert answers.library_call(lambda row: row, "entr", len) is None


def test_method_calls_counts_every_way_in_and_puts_the_method_back():
    class Layer(torch.nn.Module):
        def forward(self, x):
            return x + 1
    layer, original = Layer(), Layer.__dict__["forward"]
    with answers.method_calls(Layer, "forward") as calls:
        layer(torch.ones(1)), layer.forward(torch.ones(1)), copy.deepcopy(layer)(torch.ones(1))
    assert len(calls) == 3
    with pytest.raises(ZeroDivisionError), answers.method_calls(Layer, "forward") as calls:
        1 / 0
    assert Layer.__dict__["forward"] is original and calls == []     # put back even when the block raised


# ---- the helpers, and their bad inputs ------------------------------------------------------------------------

@pytest.mark.parametrize("given, expected", [
    (7, 7), (torch.tensor(7), 7), (torch.tensor(7, dtype=torch.uint8), 7), (-3, -3),
    (True, None), (torch.tensor(True), None), (7.0, None), (torch.tensor(7.0), None), ("7", None), (None, None),
    ([7], None), (torch.tensor([7]), None), (torch.zeros(2, 2, dtype=torch.long), None), (float("nan"), None),
    (object(), None)])
def test_whole_reads_ints_in_every_form_and_nothing_else(given, expected):
    assert answers.whole(given) == expected


def test_pair_reads_tensors_and_leaves_the_rest_for_head_pair_to_refuse():
    assert answers.pair((torch.tensor(2), 3)) == (2, 3)
    # a 1-D integer tensor or array of two: what `(s == s.max()).nonzero()[0]` gives (the second review)
    assert answers.pair(torch.tensor([4, 11])) == (4, 11) and answers.pair(np.array([4, 5])) == (4, 5)
    for odd in ((True, 1), (1.0, 2), "1, 2", (1, 2, 3), None, (torch.tensor([1]), 2), torch.tensor([4.0, 5.0]),
                np.array([True, False]), torch.tensor([[4, 11]]), torch.tensor([1, 2, 3])):
        assert answers.pair(odd) is odd


@pytest.mark.parametrize("x, truth, decimals, said", [
    (0.13, 0.12613, 2, "right"), (0.126, 0.12613, 2, "right"), (0.1, 0.12613, 2, "rounded"),
    (10.33, 10.326, 2, "right"), (10.3, 10.326, 2, "rounded"), (10, 10.326, 2, "rounded"), (1.3, 1.2876, 2, "rounded"),
    (1.29, 1.2876, 2, "right"), (1.28, 1.2876, 2, "truncated"), (0.19, 0.1978, 2, "truncated"),
    (10.32, 10.326, 2, "truncated"), (-0.19, -0.1978, 2, "truncated"), (0.1, 0.1978, 2, None), (1.27, 1.2876, 2, None), (0.2, 0.12613, 2, None), (1.0, 0.662, 2, None),
    (0.2, 0.1978, 2, "right"), (float("nan"), 0.5, 2, None), (float("inf"), 0.5, 2, None)])
def test_to_decimals_calls_a_rounding_a_rounding(x, truth, decimals, said):
    assert answers.to_decimals(x, truth, decimals) == said


def test_nearest_names_one_mistake_only_when_one_fits():
    one = [(0.0545, "the first [SEP]", "the wrong token"), (0.0564, "B's second token", "the wrong token")]
    assert answers.nearest(0.0564, one, 0.0005) == ("B's second token", "the wrong token")
    both = answers.nearest(1.0, [(1.0, "another head", "a"), (0.999997, "the whole table", "b")], 0.005)
    assert "another head" in both[0] and "whole table" in both[0] and both[1] == "a different quantity"
    assert answers.nearest(0.5, one, 0.0005) is None
    assert answers.nearest(0.5, [], 0.1) is None and answers.nearest(0.5, [(None, "m", "k")], 0.1) is None


def _own(ids, mask):
    return ids


def test_library_call_sees_through_wrappers_but_not_a_learners_own_function_of_the_same_name():
    from bertlab.experiments import ablations
    lib = ablations.next_token_labels
    alias = lib

    def nested(ids, mask):
        def inner():
            return bertlab.experiments.ablations.next_token_labels(ids, mask)
        return inner()

    for fn in (lib, functools.partial(lib), lambda i, m: ablations.next_token_labels(i, m), lambda i, m: alias(i, m),
               nested, functools.wraps(lib)(lambda i, m: None)):
        assert answers.library_call(fn, lib) == "next_token_labels", fn
    next_token_labels = _own                                                    # a learner's own, same name
    for fn in (_own, lambda i, m: next_token_labels(i, m), print, len, 42, None):
        assert answers.library_call(fn, lib) is None, fn


def test_runs_a_model_notices_any_module_and_cleans_up():
    layer = torch.nn.Linear(2, 2)
    assert answers.runs_a_model(lambda x: layer(x).sum(), torch.ones(2))[1] is True
    assert answers.runs_a_model(lambda a, b: a == b, "x", "y") == (False, False)
    with pytest.raises(ZeroDivisionError):
        answers.runs_a_model(lambda: 1 / 0)
    assert answers.runs_a_model(lambda: 1)[1] is False            # the hook did not outlive the call that raised


def test_whole_or_wrong_says_what_the_exercise_takes():
    n, bad = answers.whole_or_wrong("a lot", "an int (a count)")
    assert n is None and bad.kind == "wrong type" and "an int (a count)" in bad.message and "str" in bad.message
    n, bad = answers.whole_or_wrong("x" * 500)
    assert len(bad.message) < 120


def test_the_notebooks_ask_for_the_precision_the_checks_compare_at(solved):
    """A float exercise's text in its notebook says the precision its check compares at, as its `expects` does."""
    import json
    for e in (e for e, a in solved.items() if isinstance(a, float)):
        nn = e.split(".")[0]
        path = next((REPO / "notebooks").glob(f"{nn}_*.ipynb"))
        text = next("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                    if c["cell_type"] == "markdown" and "".join(c["source"]).startswith(f"**{e}**"))
        asked = PRECISION.search(" ".join(text.split()))
        said = PRECISION.search(bertlab.course.get(e).expects)
        assert asked and asked.group(0) == said.group(0), (e, asked and asked.group(0), said.group(0))


def _edits_after_answering(fn):
    """The right function, which then edits what it was given in place (the caller's data spoiled)."""
    def edited(*args):
        out = fn(*copy.deepcopy(args))
        for a in args:
            if torch.is_tensor(a):
                a.add_(1)
            elif isinstance(a, (list, dict)):
                a.clear()
        return out
    return edited


def test_every_function_exercise_refuses_a_right_function_that_edits_its_input(solved):
    # 05.3's rule reads two str (nothing to edit) and 10.1's hook is meant to change z: they are left out
    functions = [e for e, a in solved.items() if callable(a) and e not in ("05.3", "10.1")]
    assert len(functions) >= 9, functions
    for e in functions:
        assert bertlab.check(e, solved[e]).right, e
        r = bertlab.check(e, _edits_after_answering(solved[e]))
        assert not r.right and r.kind == "changed its input" and "in place" in r.message, (e, str(r))


@pytest.mark.parametrize("exercise", ["00.4", "09.3", "13.3"])
def test_a_name_is_read_alike_in_every_exercise_that_asks_for_one(exercise, solved):
    name = solved[exercise]
    for given in (name, name.lower(), name.upper(), f"  '{name}'. ", f'"{name}"'):
        assert bertlab.check(exercise, given).right, (exercise, given)
    r = bertlab.check(exercise, name + " x")                  # a name with more in it is no name
    assert not r.right and r.kind in ("not a task", "no such variant", "no such task"), str(r)


def test_the_variant_name_takes_and_for_the_ampersand_and_a_hyphen_for_a_space(solved):
    name = solved["09.3"]
    assert "&" in name and name.count(" ") >= 2, name          # a name this test can respell
    for given in (name.replace("&", "and"), name.replace(" ", "-"), name.replace(" ", "").lower()):
        assert bertlab.check("09.3", given).right, given
    assert bertlab.check("09.3", name.split()[0]).kind == "no such variant"
