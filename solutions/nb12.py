"""Notebook 12 (cause and effect): answers to its checkable exercises, and known wrong answers.

12.4 (the metric decides what you see) and 12.5 (your own scoreboard) are open on purpose, as the notebook
says: what a map means under another metric, and which measure moves on your pairs, have no single answer.
"""

import bertlab

DOG, DOGS = "The dog [MASK] sleeping on the sofa.", "The dogs [MASK] sleeping on the sofa."


def _model():
    model, tokenizer = bertlab.load("bertlab-mini", device="cpu")
    return model.eval(), tokenizer


def ex_12_1():
    """The first 'layer l' row whose [MASK] cell is above 0.5."""
    model, tokenizer = _model()
    p = bertlab.patch(model, tokenizer, DOG, DOGS)
    m = p.tokens.index("[MASK]")
    r = next(r for r in range(len(p.rows)) if float(p.effect[r, m]) > 0.5)
    return int(p.rows[r].split()[1])


def wrong_12_1():
    layer = ex_12_1()
    return [(layer + 1, "row, not layer"), (4, "the other pair"), (9, "no such layer"), ("1", "an int")]


def ex_12_2():
    model, tokenizer = _model()
    row, col, _ = bertlab.patch(model, tokenizer, DOG, DOGS, site="head").top(1)[0]
    return (int(row.split()[1]), int(col.split()[1]))


def wrong_12_2():
    model, tokenizer = _model()
    second = bertlab.patch(model, tokenizer, DOG, DOGS, site="head").top(2)[1]
    layer, head = ex_12_2()
    return [((int(second[0].split()[1]), int(second[1].split()[1])), "not the top head"), ((5, 8), "the other pair"),
            ((layer + 1, head + 1), "counted from 1"), ((7, 0), "no such head"), ("1 9", "pair of ints")]


def ex_12_3():
    """The notebook's off-topic team sentence with one word of the kettle's scene added (P(IsNext) ≈ 0.98)."""
    return "The team lost the final pot."


def wrong_12_3():
    return [("The team lost the final boil.", "the notebook's"), ("The team lost the kettle final.", "shares kettle"),
            ("The team lost the final match.", "not fooled"), ("The team lost the final boiling.", "notebook's word"),
            # coherent continuations of A, which a check cannot tell from a fooling sentence: refused by the story
            ("Soon the water began to boil.", "the team's story"), ("The boil was loud.", "the team's story"),
            ("The big old team sadly lost the final match.", "too many words"), (42, "a str")]
