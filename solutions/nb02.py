"""Notebook 02 (the input embeddings): answers to its checkable exercises, and known wrong answers.

Open on purpose (no check): 02.4 ([PAD] positions get vectors too: why is that harmless?) and 02.5 (the
sinusoids' rotation property), whose point is the explanation.
"""

import torch
import torch.nn.functional as F

import bertlab

A, B = "The kettle began to whistle.", "She poured the hot water over the tea."


def ex_02_1():
    def my_embedding_sum(embeddings, input_ids, token_type_ids):
        T = input_ids.shape[1]
        return (embeddings.word_embeddings.weight[input_ids] + embeddings.token_type_embeddings.weight[token_type_ids]
                + embeddings.position_embeddings.weight[:T])                    # (1, T, H)
    return my_embedding_sum


def _known_wrong_02_1():
    right = ex_02_1()

    def no_segment(e, ids, types):
        return e.word_embeddings.weight[ids] + e.position_embeddings.weight[: ids.shape[1]]

    def normed(e, ids, types):
        return e.LayerNorm(right(e, ids, types))

    def squeezed(e, ids, types):
        return right(e, ids, types)[0]

    def always_a(e, ids, types):
        return right(e, ids, torch.zeros_like(types))

    def the_layer_itself(e, ids, types):            # the embedding layer's own forward adds the parts for you
        return e(ids, types).sum

    def the_layers_output(e, ids, types):           # its whole output, unread: named as the library, not a type
        return e(ids, types)
    return [(no_segment, "segment"), (normed, "LayerNorm"), (squeezed, "shape"), (always_a, "segment always A"),
            ("sum", "function"), (the_layer_itself, "library's function"), (the_layers_output, "library's function")]


def ex_02_2():
    """Its position (it moves along) and its segment (it is now in B); the token row stays."""
    model, tokenizer = bertlab.load("bertlab-tiny", device="cpu")
    with torch.no_grad():
        before, after = tokenizer(A, B), tokenizer(B, A)
        p, q = model.bert(**before).embeddings, model.bert(**after).embeddings
    i, j = before.tokens.index("kettle"), after.tokens.index("kettle")
    return {part for part in ("token", "segment", "position")
            if not torch.allclose(getattr(p, part)[0, i], getattr(q, part)[0, j])}


def wrong_02_2():
    return [({"token", "segment", "position"}, "token part"), ({"segment"}, "missing"), ("position", "missing"),
            ({"colour"}, "unknown part"), (3, "set")]


def _distances():
    model, tokenizer = bertlab.load("bertlab-tiny", device="cpu")
    model.eval()
    enc = tokenizer(A, B)
    with torch.no_grad():
        real = model.bert(**enc).last_hidden_state[0]
        zeros = model.bert(enc["input_ids"], torch.zeros_like(enc["token_type_ids"])).last_hidden_state[0]
    return 1 - F.cosine_similarity(real, zeros, dim=-1), list(enc.token_type_ids).index(1)


def ex_02_3():
    d, i = _distances()
    return float(d[i])


def wrong_02_3():
    d, i = _distances()
    return [(1 - float(d[i]), "similarity"), (float(d[i - 1]), "[SEP]"), (ex_02_3() * 2, "factor"), ("far", "number"),
            # B's second token moves almost as far as the first [SEP]: each is named as itself
            (float(d[i + 1]), "second token of B"), (round(ex_02_3(), 2), "rounded further than asked"),
            # any other token is named as itself, not as a factor off: 'kettle' is about a third of the answer
            (float(d[2]), "'kettle' (position 2)"), (float(d.mean()), "average over every token")]


def wrong_02_1():
    """02.1's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_02_1() + _edits_02_1()


def _edits_02_1():
    def zeroes_the_segments(e, ids, types):     # right sum, but the caller's segment ids are spoiled
        out = ex_02_1()(e, ids, types.clone())
        types.zero_()
        return out
    return [(zeroes_the_segments, "in place")]
