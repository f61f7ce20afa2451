"""Notebook 13 (features and changes): answers to its checkable exercises, and known wrong answers.

13.5 (your own autoencoder, and its random control) is open on purpose: which layer and width, and what the
features of a random model look like, is the learner's to measure.
"""

import json

import torch

import bertlab
from bertlab.inside import SparseAutoencoder, assets, heldout_sentences, pos_corpus, trace

BANK = "He took his money to the bank this morning."


def _model():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    return model.eval(), tokenizer


def ex_13_1():
    """The argmax of the trace's row at 'bank'."""
    model, tokenizer = _model()
    tokens, z = trace(model, tokenizer, SparseAutoencoder.load(assets()["sae"]), BANK)
    return int(z[tokens.index("bank")].argmax())


def wrong_13_1():
    model, tokenizer = _model()
    tokens, z = trace(model, tokenizer, SparseAutoencoder.load(assets()["sae"]), BANK)
    row = z[tokens.index("bank")]
    second = int(row.argsort(descending=True)[1])
    at_money = int(z[tokens.index("money")].argmax())
    others = [] if at_money == ex_13_1() or at_money in row.argsort(descending=True)[:32].tolist() else \
        [(at_money, "another token")]
    # a 0-d tensor (what .argmax() gives) is read as the int it holds; a float, even a whole one, is no feature
    return [(second, "not the largest"), (torch.tensor(second), "not the largest"), (5000, "no such feature"),
            ("7", "an int"), (float(ex_13_1()), "an int")] + others


def _loss_recovered():
    model, tokenizer = _model()
    sae = SparseAutoencoder.load(assets()["sae"])
    return bertlab.sae_report(model, tokenizer, sae, heldout_sentences(60)).loss_recovered


def ex_13_2():
    return round(_loss_recovered(), 2)


def wrong_13_2():
    x = ex_13_2()
    return [(round(100 * x, 1), "percent"), (round(1 - x, 2), "one minus"), ("half", "a number"),
            (round(_loss_recovered(), 1), "rounded further than asked")]


def ex_13_3():
    """The task the card's mystery row was fine-tuned on (the notebook's lens shows names, places and months)."""
    card = json.loads(assets()["card"].read_text(encoding="utf-8"))
    return card["variants"]["diff: fine-tuned on ?"]["settings"]["task"]


def wrong_13_3():
    return [("topic", "the open one"), ("sentiment", "no such task"), (3, "a str")] + \
        [(t, "another task") for t in ("follows", "qa", "choice", "tagging") if t != ex_13_3()][:1]


def ex_13_4():
    model, tokenizer = _model()
    texts, _ = pos_corpus()
    layer, head, _ = bertlab.head_atlas(model, tokenizer, texts[:60]).top("previous", 1)[0]
    return (layer, head)


def wrong_13_4():
    model, tokenizer = _model()
    texts, _ = pos_corpus()
    atlas = bertlab.head_atlas(model, tokenizer, texts[:60])
    second = atlas.top("previous", 2)[1][:2]
    layer, head = ex_13_4()
    return [(second, "not the top head"), ((layer + 1, head + 1), "counted from 1"), ((9, 0), "no such"),
            ((torch.tensor(layer + 1), torch.tensor(head + 1)), "counted from 1"), ((float(layer), float(head)), "pair"),
            ("0 2", "pair")]
