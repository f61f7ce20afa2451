"""Notebook 07 (contextual embeddings): answers to its checkable exercises, and known wrong answers.

07.4 (사랑해요 in sentences of your own) and 07.5 (mean against [CLS] pooling on bertlab-tiny) are open on
purpose: the learner writes the sentences, and the question is what the pattern means.
"""


import torch

import bertlab

BANK = ["Grace walked along the muddy bank of the river.",
        "We had a picnic on the grassy bank by the stream.",
        "The canoe drifted toward the far bank of the lake.",
        "Tom went to the bank to open a savings account.",
        "The bank lends money to small shops in town.",
        "She paid the cheque into her bank on Monday."]
SENSES = ["river"] * 3 + ["money"] * 3


def _distances(sentences):
    model, tokenizer = bertlab.load("minilm", device="cpu")
    model.eval()
    return bertlab.cosine_distances(bertlab.word_vectors(model, tokenizer, sentences, "bank", layer="all"))


def _same_different():
    d = _distances(BANK)
    same = torch.tensor([[a == b for b in SENSES] for a in SENSES]) & ~torch.eye(6, dtype=torch.bool)
    return d[:, same].mean(-1), d[:, ~torch.tensor([[a == b for b in SENSES] for a in SENSES])].mean(-1)


def ex_07_1():
    """The first row of the notebook's table where different − same is above 0.10."""
    same, different = _same_different()
    return int(((different - same) > 0.10).nonzero()[0])


def wrong_07_1():
    same, different = _same_different()
    first = ex_07_1()
    return [(int(different.argmax()), "the largest distance"), (0, "no context"), (7, "no such layer"),
            ("3", "an int"), (int((different - same).argmax()), "not the first"), (first - 1, "too early"),
            (3.0, "an int")]


def ex_07_2():
    def mean_pool(hidden, attention_mask):
        m = attention_mask[..., None].float()
        return (hidden * m).sum(1) / m.sum(1)
    return mean_pool


def _known_wrong_07_2():
    return [(lambda h, m: h.mean(1), "padding counted"), (lambda h, m: (h * m[..., None]).sum(1), "not divided"),
            (lambda h, m: (h * m[..., None]).sum(1) / h.shape[1], "divided by t"),
            (lambda h, m: h[:, 0], "[cls] pooling"), (lambda h, m: h.mean(2), "wrong shape"),
            (lambda h, m: h.mean(), "wrong shape")]


def ex_07_3():
    """Row 6 (the new sentence), columns 3 to 5 (money), last layer; asked to three decimals."""
    d = _distances(BANK + ["We met at the bank."])
    return float(d[-1, 6, 3:6].mean())


def wrong_07_3():
    d = _distances(BANK + ["We met at the bank."])
    return [(float(d[-1, 6, 0:3].mean()), "the other group"), (1 - float(d[-1, 6, 3:6].mean()), "similarity"),
            (float(d[3, 6, 3:6].mean()), "the wrong layer"), (2.0, "off"),
            (float(d[-1, 6, 3:].mean()), "itself included"),
            (round(float(d[-1, 6, 3:6].mean()), 1), "rounded further than asked"),
            (round(float(d[-1, 6, 3:6].mean()), 2), "rounded further than asked"),
            # at two decimals these passed as the mean (0.13) or as the mean cut off (0.12): three decimals tell them apart
            (round(float(d[-1, 6, 3:6].median()), 3), "the median"), (round(float(d[-1, 6, 3:6].min()), 3), "smallest"),
            (float(d[-1, 6, 3:6].max()), "largest")]


def wrong_07_2():
    """07.2's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_07_2() + _edits_07_2()


def _edits_07_2():
    def masks_in_place(hidden, attention_mask):  # right means, but the caller's hidden states lose their padding
        hidden *= attention_mask[..., None]
        return hidden.sum(1) / attention_mask.sum(1, keepdim=True)

    first = []

    def the_first_answer_again(hidden, attention_mask):     # right on one batch: hands back what it found first
        if not first:
            first.append(ex_07_2()(hidden, attention_mask))
        return first[0].clone()
    return [(masks_in_place, "in place"), (the_first_answer_again, "second batch")]
