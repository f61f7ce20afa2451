"""Notebook 13 (features and changes): answers to its checkable exercises, and known wrong answers.

13.5 (your own autoencoder, and its random control) is open on purpose: which layer and width, and what the
features of a random model look like, is the learner's to measure.
"""

import json

import torch

import bertlab
from bertlab.inside import SparseAutoencoder, assets, heldout_sentences, load_card_rows, pos_corpus, trace

BANK = "He took his money to the bank this morning."      # the notebook's sentence
RIVER = "The boat drifted to the muddy bank."             # 13.1's sentence


def _model():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    return model.eval(), tokenizer


def ex_13_1():
    """The argmax of the trace's row at 'bank' in the river sentence."""
    model, tokenizer = _model()
    tokens, z = trace(model, tokenizer, SparseAutoencoder.load(assets()["sae"]), RIVER)
    return int(z[tokens.index("bank")].argmax())


def wrong_13_1():
    model, tokenizer = _model()
    sae = SparseAutoencoder.load(assets()["sae"])
    tokens, z = trace(model, tokenizer, sae, RIVER)
    money_tokens, money_z = trace(model, tokenizer, sae, BANK)
    money_feature = int(money_z[money_tokens.index("bank")].argmax())      # printed in the notebook
    row = z[tokens.index("bank")]
    second = int(row.argsort(descending=True)[1])
    at_boat = int(z[tokens.index("boat")].argmax())
    others = [] if at_boat == ex_13_1() or at_boat in row.argsort(descending=True)[:32].tolist() else \
        [(at_boat, "another token")]
    # a 0-d tensor (what .argmax() gives) is read as the int it holds; a float, even a whole one, is no feature
    return [(second, "not the largest"), (torch.tensor(second), "not the largest"), (5000, "no such feature"),
            ("7", "an int"), (float(ex_13_1()), "an int"), (money_feature, "the money sentence")] + others


def _loss_recovered(n=40):
    """On the first n held-out sentences: 13.2 asks 40, since the notebook prints the 60-sentence value."""
    model, tokenizer = _model()
    sae = SparseAutoencoder.load(assets()["sae"])
    return bertlab.sae_report(model, tokenizer, sae, heldout_sentences(n)).loss_recovered


def ex_13_2():
    return round(_loss_recovered(), 3)


def wrong_13_2():
    x = ex_13_2()
    on_120 = load_card_rows()["sae: bertlab-mini"]["loss_recovered"]        # the card's row: 120 sentences
    return [(round(100 * x, 1), "percent"), (round(1 - x, 3), "one minus"), ("half", "a number"),
            (round(_loss_recovered(), 1), "rounded further than asked"),
            (round(_loss_recovered(), 2), "rounded further than asked"), (on_120, "120 sentences"),
            (round(_loss_recovered(60), 3), "60 sentences")]


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
