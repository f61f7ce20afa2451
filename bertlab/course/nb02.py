"""Notebook 02 (the input embeddings): its checkable exercises.

02.1 runs the learner's function on two models' embedding tables and inputs of its own; 02.2 and 02.3
compute their answers at check time from bertlab-tiny.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .answers import _places, method_calls, nearest, rounded_message, to_decimals, truncated_message
from .registry import as_number, exercise, loaded, not_a, ratio_kind, right, run_learner, wrong

_INPUTS = (("The kettle began to whistle.", "She poured the tea."), ("We pitched the tent.", None),
           ("Grace walked along the muddy bank with her brother and their old dog.", "It rained."))


def _encoder(model):
    return getattr(model, "bert", model)


@exercise("02.1", "Write my_embedding_sum(embeddings, input_ids, token_type_ids): token + segment + position",
          difficulty=1, importance=3, minutes=10,
          expects="a function of (embeddings, input_ids, token_type_ids) returning the (1, T, H) sum, where "
                  "embeddings is model.bert.embeddings and the ids are (1, T) tensors",
          hints=["Three lookups: each table's .weight indexed by the right ids.",
                 "The position ids are 0, 1, …, T-1, whatever the text: the first T rows of the position table.",
                 "embeddings.word_embeddings.weight[input_ids] + embeddings.token_type_embeddings.weight"
                 "[token_type_ids] + embeddings.position_embeddings.weight[:T]"])
def _(answer):
    if not callable(answer):
        return not_a(answer, type(len), what="a function my_embedding_sum(embeddings, input_ids, token_type_ids)")
    for name in ("bertlab-tiny", "minilm"):
        model, tokenizer = loaded(name)
        bert = _encoder(model)
        emb = bert.embeddings
        for a, b in _INPUTS:
            enc = tokenizer(a, b)
            ids, types = enc["input_ids"], enc["token_type_ids"]                   # (1, T)
            with torch.no_grad(), method_calls(type(emb), "forward") as ran:
                got, bad = run_learner(answer, emb, ids, types)
            if ran:                             # before `bad`: handing back the layer's own output is unreadable too
                # the layer's own forward adds the parts (and keeps them as out.embeddings.sum): handing its
                # result back is the library doing the exercise, whatever the function does around it
                return wrong("your function calls the embedding layer itself (embeddings(...)), which adds the "
                             "parts for you: look up the three rows in its tables and add them yourself",
                             kind="the library's function")
            if bad:
                return bad
            with torch.no_grad():
                parts = bert(**enc).embeddings
            where = f" ({name}, {a!r}" + (" + B)" if b else ")")
            if not isinstance(got, torch.Tensor):
                return wrong(f"return a tensor, got {type(got).__name__}{where}", kind="wrong type")
            if got.shape != parts.sum.shape:
                if got.shape == parts.sum.shape[1:]:
                    return wrong(f"keep the batch dimension: (1, T, H), got {tuple(got.shape)}{where}",
                                 kind="wrong shape")
                return wrong(f"the sum has one H-vector per token: {tuple(parts.sum.shape)}, got "
                             f"{tuple(got.shape)}{where}", kind="wrong shape")
            got = got.detach().to(parts.sum.dtype)
            if torch.allclose(got, parts.sum, atol=1e-5):
                continue
            if torch.allclose(got, parts.normed, atol=1e-4):
                return wrong("that is after LayerNorm; the question asks for the sum that goes into it" + where,
                             kind="LayerNorm applied")
            for left_out, rest in (("segment", parts.token + parts.position), ("position", parts.token + parts.segment),
                                   ("token", parts.segment + parts.position)):
                if torch.allclose(got, rest, atol=1e-5):
                    return wrong(f"the {left_out} part is missing" + where, kind=f"left out the {left_out} embedding")
            if b and torch.allclose(got, parts.token + parts.position + emb.token_type_embeddings.weight[0], atol=1e-5):
                return wrong("every token got segment A's row: use token_type_ids" + where, kind="segment always A")
            return wrong("compare your sum, part by part, with out.embeddings (token, segment, position)" + where,
                         kind="off")
    return right("on two models and three inputs: the sum BERT's Figure 2 draws")


_A, _B = "The kettle began to whistle.", "She poured the hot water over the tea."
_PARTS = ("token", "segment", "position")


@exercise("02.2", "Swap sentences A and B: which parts of 'kettle''s input vector change?", difficulty=1,
          importance=2, minutes=5,
          expects="a set of part names from {'token', 'segment', 'position'}, e.g. {'token'}",
          hints=["Each part is a lookup: which id does each part look up, and which of those ids moves with "
                 "the swap?",
                 "The token id of 'kettle' is the same wherever it stands. Its position and its sentence are not.",
                 "Compare out.embeddings.token / .segment / .position at kettle's position in "
                 "model.bert(**tokenizer(A, B)) and model.bert(**tokenizer(B, A))."])
def _(answer):
    if isinstance(answer, str):
        answer = {answer}
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(x, str) for x in answer):
        return not_a(answer, set, what="a set of part names such as {'segment'}")
    picked = {x.strip().lower() for x in answer}
    if not picked <= set(_PARTS):
        return wrong(f"the parts are called 'token', 'segment' and 'position'; got {sorted(picked - set(_PARTS))}",
                     kind="unknown part")
    model, tokenizer = loaded("bertlab-tiny")
    bert = _encoder(model)
    changed = set()
    with torch.no_grad():
        before, after = tokenizer(_A, _B), tokenizer(_B, _A)
        i, j = before.tokens.index("kettle"), after.tokens.index("kettle")
        p, q = bert(**before).embeddings, bert(**after).embeddings
        for part in _PARTS:
            if not torch.allclose(getattr(p, part)[0, i], getattr(q, part)[0, j]):
                changed.add(part)
    if picked == changed:
        return right("the token row is the word's own; the swap moves it to another position and into the other "
                     "segment")
    if "token" in picked and "token" not in changed:
        return wrong("the token part is looked up by the token id, and 'kettle' is the same id in both orders",
                     kind="the token part does not move")
    missing = changed - picked
    return wrong(("a part that changes is" if len(missing) == 1 else f"{len(missing)} parts that change are")
                 + " missing: where does 'kettle' stand, and in which sentence, after the swap?",
                 kind="a changed part missing")


def _moves():
    """Cosine distances of each token of the pair (A, B) between real segment ids and all zeros."""
    model, tokenizer = loaded("bertlab-tiny")
    bert = _encoder(model)
    enc = tokenizer(_A, _B)
    with torch.no_grad():
        real = bert(**enc).last_hidden_state[0]                                        # (T, H)
        zeros = bert(enc["input_ids"], torch.zeros_like(enc["token_type_ids"])).last_hidden_state[0]
    first_b = list(enc.token_type_ids).index(1)
    return 1 - F.cosine_similarity(real, zeros, dim=-1), first_b, enc.tokens


@exercise("02.3", "All-zero segment ids: how far does B's first token move?", difficulty=2, importance=1,
          minutes=10,
          expects="a float, to three decimals: the cosine distance (1 − cosine similarity) of last_hidden_state at B's "
                  "first token, "
                  "bertlab-tiny, pair A = 'The kettle began to whistle.', B = 'She poured the hot water over the "
                  "tea.', real segment ids against all zeros",
          hints=["Two forward passes of model.bert: one with the pair's token_type_ids, one with "
                 "torch.zeros_like(token_type_ids).",
                 "B's first token is the first position with token_type_id 1 (just after the first [SEP]); "
                 "cosine distance is 1 − F.cosine_similarity.",
                 "1 - F.cosine_similarity(real[0, i], zeros[0, i], dim=-1) with i = token_type_ids.index(1)"])
def _(answer):
    value = as_number(answer)
    if value is None:
        return not_a(answer, float, what="a number (a cosine distance)")
    moves, i, tokens = _moves()
    truth = float(moves[i])
    said = to_decimals(value, truth, 3)
    if said == "rounded":
        return wrong(rounded_message(3), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(3), kind="cut off, not rounded")
    if said == "right":
        return right("segment B's row changes every token of B, and through attention the tokens of A too")
    # the nearest known mistake, and only when one fits: the first [SEP] and B's second token move by
    # nearly the same amount, so a loose first match used to name the wrong one
    found = nearest(value, [(1 - truth, "that is the cosine similarity; the distance is 1 minus it",
                             "similarity, not distance")]
                    + [(float(moves[j]), f"that is the distance at {what}: take the first token of B", "the wrong token")
                       for j, what in ((i - 1, "the first [SEP], which belongs to A"), (i + 1, "the second token of B"),
                                       (0, "[CLS]"))]
                    + [(float(moves.mean()), "that is the average over every token: take B's first token alone",
                        "averaged over the tokens")], 0.0005)
    if not found:
        # any other token: name the one it is (its word and position, not the answer), rather than a ratio
        found = nearest(value, [(float(moves[j]), f"that is the distance at '{tokens[j]}' (position {j}): take the "
                                 "first token of B, just after the first [SEP]", "the wrong token")
                                for j in range(len(tokens)) if j not in (i, i - 1, i + 1, 0)],
                        # A's words move by nearly the same amount ('kettle' and 'to' 1e-5 apart): an answer is
                        # matched to half a unit of its own last decimal, so a full-precision one names its one
                        # token, and one at three decimals may fit several, which are all named
                        max(0.5 * 10 ** -min(_places(value), 10), 1e-7))
    if found:
        return wrong(*found)
    kind = ratio_kind(value, truth)
    if kind:
        return wrong("compare with 1 − cosine similarity", kind=kind)
    return wrong("run model.bert twice (real and zero token_type_ids) and compare last_hidden_state at B's "
                 "first token", kind="off")
