"""Notebook 09 (the ablations at toy scale): answers to its checkable exercises, and known wrong answers.

09.4 (the mask-rate experiment at 200 steps, and a replayed row) and 09.5 (the paper's other masking
strategies) are open on purpose: the learner runs the experiment and judges what it can and cannot say.
"""

import torch

from bertlab.experiments import ablations, clear_of_noise, read_card


def ex_09_1():
    def next_token_labels(input_ids, attention_mask):
        labels = torch.full_like(input_ids, -100)                              # (B, T)
        labels[:, :-1] = torch.where(attention_mask[:, 1:].bool(), input_ids[:, 1:], -100)
        return labels
    return next_token_labels


def _known_wrong_09_1():
    def padding_predicted(ids, mask):
        labels = torch.full_like(ids, -100)
        labels[:, :-1] = ids[:, 1:]
        return labels

    def backwards(ids, mask):
        labels = torch.full_like(ids, -100)
        labels[:, 1:] = ids[:, :-1]
        return labels

    def zero_not_ignored(ids, mask):
        labels = torch.zeros_like(ids)
        labels[:, :-1] = torch.where(mask[:, 1:].bool(), ids[:, 1:], 0)
        return labels

    return [(lambda ids, mask: ids.clone(), "not shifted"), (backwards, "the wrong way"),
            (padding_predicted, "padding predicted"), (zero_not_ignored, "not ignored"),
            (lambda ids, mask: ids[:, 1:], "wrong shape"), ("shift by one", "wrong type"),
            (ablations.next_token_labels, "bertlab's own next_token_labels"),
            (lambda ids, mask: ablations.next_token_labels(ids, mask), "the library's function")]


def ex_09_2():
    def clear(a, b):
        return a["n"] > 1 and b["n"] > 1 and abs(a["mean"] - b["mean"]) > a["std"] + b["std"]
    return clear


def _known_wrong_09_2():
    return [(lambda a, b: abs(a["mean"] - b["mean"]) > a["std"] + b["std"], "one seed"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and abs(a["mean"] - b["mean"]) > max(a["std"], b["std"]), "one spread"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and a["mean"] - b["mean"] > a["std"] + b["std"], "direction"),
            (lambda a, b: a["mean"] != b["mean"], "no spread"),
            (lambda a, b: a["n"] > 1 and b["n"] > 1 and abs(a["mean"] - b["mean"]) > (a["std"] ** 2 + b["std"] ** 2) ** 0.5,
             "quadrature"), (lambda a, b: True, "off"),
            (lambda a, b: None, "wrong type"),
            (lambda a, b: a["n"] > 2 and b["n"] > 2 and abs(a["mean"] - b["mean"]) > a["std"] + b["std"], "two seeds"),
            (lambda a, b: abs(a["mean"] - b["mean"]) > max(a["std"], b["std"]), "one spread, one seed"), (clear_of_noise, "bertlab's own clear_of_noise"),
            (lambda a, b: bool(clear_of_noise(a, b)), "the library's function")]


def _pos_at_last_step():
    card = read_card(ablations.CARD)
    last = {}
    for key, stats in card["summary"].items():
        name, step = key.rsplit(" @ ", 1)
        if "pos" in stats and int(step) >= last.get(name, (-1, 0))[0]:
            last[name] = (int(step), stats["pos"]["mean"])
    return last


def ex_09_3():
    last = _pos_at_last_step()
    return max(last, key=lambda n: last[n][1])


def wrong_09_3():
    last = _pos_at_last_step()
    runner_up = sorted(last, key=lambda n: last[n][1])[-2]
    return [("MLM + NSP", "the expected winner"), ("random init", "the lowest"), (runner_up, "not the highest"),
            ("BERT-large", "no such variant"), (3, "a str")]


def wrong_09_1():
    """09.1's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_09_1() + _edits_09_1()


def _edits_09_1():
    def shifts_in_place(input_ids, attention_mask):   # right labels, but the caller's ids are shifted
        out = ex_09_1()(input_ids.clone(), attention_mask)
        input_ids[:, :-1] = input_ids[:, 1:].clone()
        return out

    first = []

    def the_first_answer_again(input_ids, attention_mask):  # right on one batch: hands back what it found first
        if not first:
            first.append(ex_09_1()(input_ids, attention_mask))
        return first[0].clone()
    return [(shifts_in_place, "in place"), (the_first_answer_again, "second batch")]


def wrong_09_2():
    """09.2's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_09_2() + _edits_09_2()


def _edits_09_2():
    def pops_n(a, b):                            # right verdicts, but the caller's cells lose their n
        na, nb = a.pop("n"), b.pop("n")
        return na > 1 and nb > 1 and abs(a["mean"] - b["mean"]) > a["std"] + b["std"]
    return [(pops_n, "in place")]
