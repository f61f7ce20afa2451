"""Predict and Quiz, driven from Python as a learner drives them: nothing of the result shows (or is even
computed) before the learner commits; a quiz answer shows every option's explanation and locks."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from bertlab.viz import Predict, Quiz  # noqa: E402


def test_predict_reveals_only_after_commit_and_beside_the_prediction():
    calls = []
    p = Predict("first guess?", choices=["door", "window"], answer=lambda: calls.append(1) or "door",
                explain="it reads both sides")
    assert not calls and p.reveal.value == "" and p.result is None and not p.committed
    p.commit.click()                                     # nothing chosen yet: a message, no reveal
    assert not p.committed and not calls and "pick one" in p.reveal.value
    p.choice.value = "window"
    p.commit.click()
    assert calls == [1] and p.committed and p.result == "door" and p.prediction == "window" and p.matched is False
    assert "window" in p.reveal.value and "door" in p.reveal.value and "both sides" in p.reveal.value
    assert p.choice.disabled and p.commit.disabled     # the prediction cannot be changed after the reveal
    p.commit.click()
    assert calls == [1]


def test_predict_a_number_within_tolerance_matches():
    p = Predict("how many?", number=True, answer=110.0, tolerance=0.1, unit="M")
    p.commit.click()
    assert not p.committed and "type a number" in p.reveal.value
    p.choice.value = "a hundred"                       # not a number: a nudge, still not committed
    p.commit.click()
    assert not p.committed and "type a number" in p.reveal.value
    p.choice.value = "105"
    p.commit.click()
    assert p.matched and p.prediction == 105.0 and "110" in p.reveal.value and "105" in p.reveal.value
    q = Predict("how many?", number=True, answer=110.0, tolerance=0.1)
    q.choice.value = "1,050"
    q.commit.click()
    assert q.matched is False


def test_predict_a_failing_answer_is_a_message_not_a_traceback():
    p = Predict("?", choices=["a", "b"], answer=lambda: 1 / 0)
    p.choice.value = "a"
    p.commit.click()
    assert not p.committed and "ZeroDivisionError" in p.reveal.value


@pytest.mark.parametrize("kwargs, words", [(dict(choices=["a"]), "two or more"),
                                           (dict(choices=["a", "b"], number=True), "not both"),
                                           (dict(), "not both or neither"),
                                           (dict(choices=["a", "b"], answer=None), "needs the answer")])
def test_predict_bad_arguments_say_what_to_do(kwargs, words):
    kwargs.setdefault("answer", "a")
    with pytest.raises(ValueError, match=words):
        Predict("?", **kwargs)


QUESTIONS = [("Why mask?", [("to see both sides", True, "the masked word cannot see itself"),
                            ("to go faster", False, "it is slower: 15 % of tokens give a loss")]),
             ("Which is bigger?", [("base", False, "110 M"), ("large", True, "340 M"), ("tiny", False, "1 M")])]


def test_a_quiz_answer_explains_every_option_and_locks():
    q = Quiz(QUESTIONS, title="test", shuffle=False)
    assert all(fb.value == "" for fb in q.feedback) and q.score == (0, 0, 2)
    assert q.answer(0, 1) is False
    shown = q.feedback[0].value
    assert "the masked word cannot see itself" in shown and "15 % of tokens" in shown and "your answer" in shown
    assert q.feedback[1].value == "" and q.choices[0].disabled
    q.choices[0].value = 0                             # locked: a second click changes nothing
    assert q.score == (0, 1, 2) and q.picked[0] == 1
    q.choices[1].value = 1                             # a click, as the browser sends it
    assert q.score == (1, 2, 2) and "1 of 2 right" in q.summary.value and "340 M" in q.feedback[1].value
    with pytest.raises(IndexError, match="questions 0 to 1"):
        q.answer(5, 0)


def test_quiz_options_are_shuffled_the_same_way_every_time():
    many = [(f"question {n}?", [("right", True, "yes")] + [(f"wrong {k}", False, "no") for k in range(3)])
            for n in range(12)]
    first = [[o[0] for o in options] for _, options in Quiz(many).questions]
    assert first == [[o[0] for o in options] for _, options in Quiz(many).questions]     # stable
    assert len({row.index("right") for row in first}) > 1        # the right option is not always in one place
    assert sorted(first[0]) == sorted(o[0] for o in many[0][1])  # nothing lost
    q = Quiz(many)
    k = [o[0] for o in q.questions[0][1]].index("right")
    assert q.answer(0, k) is True and "your answer" in q.feedback[0].value


@pytest.mark.parametrize("questions, words", [([], "list of"),
                                              ([("q", [("a", True, "x")])], "at least two"),
                                              ([("q", [("a", True, "x"), ("b", True, "y")])], "exactly one"),
                                              ([("q", [("a", True, "x"), ("b", False, " ")])], "explanation"),
                                              ([("q", ["a", "b"])], "question, \\[")])
def test_quiz_bad_questions_say_what_to_write(questions, words):
    with pytest.raises(ValueError, match=words):
        Quiz(questions)
