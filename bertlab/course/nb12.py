"""Notebook 12 (cause and effect): its checkable exercises.

12.1 and 12.2 run `patch` on the agreement pair at check time and compare with the learner's reading;
12.3 runs the learner's sentence (the notebook's off-topic team sentence with at most two words added, so it
cannot be a real continuation) through the NSP head and judges it by what it does. No answer is stored.
"""

from __future__ import annotations

import re

from .answers import pair, whole_or_wrong
from .registry import exercise, head_pair, loaded, normalise, not_a, right, wrong

_DOG, _DOGS = "The dog [MASK] sleeping on the sofa.", "The dogs [MASK] sleeping on the sofa."
_BANK, _BOAT = "He took his money to the [MASK] this morning.", "He took his boat to the [MASK] this morning."
_KETTLE = "She put the kettle on the stove."
_NOTEBOOKS_OWN = "The team lost the final boil."


def _first_layer_over_half(clean: str, corrupt: str) -> int | None:
    """The first encoder layer whose output at the [MASK] alone restores more than half (denoising)."""
    from ..probe import patch
    model, tokenizer = loaded("bertlab-mini")
    p = patch(model, tokenizer, clean, corrupt)
    m = p.tokens.index("[MASK]")
    for r in range(1, len(p.rows)):                     # row 0 is the embeddings, row l + 1 is layer l
        if float(p.effect[r, m]) > 0.5:
            return r - 1
    return None


@exercise("12.1", "Agreement: from which layer does the [MASK] alone restore more than half?", difficulty=1,
          importance=3, minutes=10,
          expects="an int: the encoder layer (0 to 5, as the rows 'layer 0' … 'layer 5' are named)",
          hints=["p = bertlab.patch(model, tok, 'The dog [MASK] sleeping on the sofa.', 'The dogs [MASK] sleeping on "
                 "the sofa.'), then read the [MASK] column as the notebook does for the bank pair.",
                 "p.effect[r, m] with m = p.tokens.index('[MASK]'); row r is named p.rows[r], and row 0 is the "
                 "embeddings.",
                 "The first r with p.effect[r, m] > 0.5; the answer is the number in p.rows[r]."])
def _(answer):
    answer, bad = whole_or_wrong(answer, "an int: a layer number, 0 to 5")
    if bad:
        return bad
    truth = _first_layer_over_half(_DOG, _DOGS)
    if answer == truth:
        bank = _first_layer_over_half(_BANK, _BOAT)
        return right(f"much earlier than the bank pair (layer {bank}): number is a simple feature, copied to the "
                     "[MASK] in the first layers, where a word's sense takes the middle layers")
    if answer == truth + 1:
        return wrong("that is the row index; row 0 is the embeddings, so the layer is one less", kind="row, not layer")
    if answer == _first_layer_over_half(_BANK, _BOAT):
        return wrong("that is where it happens for the bank pair; patch the dog / dogs pair", kind="the other pair")
    if not 0 <= answer <= 5:
        return wrong("bertlab-mini's layers are 0 to 5", kind="no such layer")
    return wrong("read the [MASK] column from the top and stop at the first value above 0.5", kind="off")


def _top_heads(clean: str, corrupt: str, k: int = 3) -> list[tuple[int, int]]:
    from ..probe import patch
    model, tokenizer = loaded("bertlab-mini")
    p = patch(model, tokenizer, clean, corrupt, site="head")
    return [(int(row.split()[1]), int(col.split()[1])) for row, col, _ in p.top(k)]


@exercise("12.2", "The head that carries number", difficulty=2, importance=2, minutes=15,
          expects="a (layer, head) pair of bertlab-mini: the head whose patching restores most on the dog / dogs pair",
          hints=["The same sweep as for the pronoun, with site='head', on the dog / dogs pair.",
                 "h = bertlab.patch(model, tok, DOG, DOGS, site='head'); h.top(1) names the best cell as "
                 "('layer L', 'head H', effect).",
                 "Turn the two labels of h.top(1)[0] into ints, as the notebook does for the pronoun head."])
def _(answer):
    model, _ = loaded("bertlab-mini")
    head, bad = head_pair(pair(answer), model)
    if bad:
        return bad
    top = _top_heads(_DOG, _DOGS)
    if head == top[0]:
        return right("now switch it off with bertlab.ablate and compare with ten random heads: does the guess flip "
                     "as it did for the pronoun? (that part is yours to judge)")
    if head in top[1:]:
        return wrong("that head is among the top three, but not the first", kind="not the top head")
    if head in _top_heads(_BANK, _BOAT, 1) or head in _top_heads("The girl hurt [MASK] knee when she fell.",
                                                                "The girl hurt [MASK] knee when he fell.", 1):
        return wrong("that is the top head of one of the notebook's pairs; patch the dog / dogs pair",
                     kind="the other pair")
    if (head[0] - 1, head[1] - 1) == top[0]:
        return wrong("layers and heads count from 0", kind="counted from 1")
    return wrong("run the head sweep on the dog / dogs pair and take its top cell", kind="off")


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4}


_STORY = ("team", "lost", "final")                     # the notebook's off-topic B: "The team lost the final match."


@exercise("12.3", "Fool the NSP head: a sentence about a team's lost final, judged IsNext", difficulty=2,
          importance=2, minutes=10,
          expects="a str: a sentence B that keeps the words team, lost and final (B is about a team losing a final, "
                  "so it cannot continue 'She put the kettle on the stove.'), adds at most two words of your own "
                  "(not 'boil' or a form of it, the notebook's), shares no word of four letters or more with A, and gets "
                  "P(IsNext) above 0.9",
          hints=["The patching map of the kettle pair showed which single word of B carried the judgement.",
                 "The sentence stays about a team that lost a final; one or two words from the scene of a kettle on a stove "
                 "(not a word of A's, and not 'boil') can still make the head say IsNext.",
                 "Start from 'The team lost the final.' and put in one or two words from the scene of boiling water "
                 "(an adjective before 'final', a noun after it); test each with bertlab.next_sentence."])
def _(answer):
    # why B must keep the team's story: a check cannot judge whether a free sentence continues A (the notebook's
    # own real continuation, "Soon the water began to boil.", passes any word rule), but a sentence about a team
    # losing a final does not continue a kettle put on a stove, whatever words are added to it
    if (bad := not_a(answer, str, what="a str: your sentence B")):
        return bad
    if normalise(answer) == normalise(_NOTEBOOKS_OWN):
        return wrong("that is the notebook's own sentence: write one of yours", kind="the notebook's sentence")
    words = re.findall(r"[a-z]+", answer.lower())
    missing = [w for w in _STORY if w not in words]
    if missing:
        return wrong(f"B must stay about the team that lost the final (keep the words {', '.join(_STORY)}; "
                     f"missing: {', '.join(missing)}), so that it cannot be a real continuation of A",
                     kind="not the team's story")
    added = len(words) - len("the team lost the final".split())
    if added > 2:
        return wrong(f"add at most two words to 'The team lost the final.'; yours adds {added}", kind="too many words")
    if any(w.startswith("boil") for w in words):
        return wrong("'boil' is the notebook's word: find another one", kind="the notebook's word")
    shared = _content_words(answer) & _content_words(_KETTLE)
    if shared:
        return wrong(f"B shares {', '.join(sorted(shared))} with A: no word of A's may be repeated, the point is "
                     "a word of the scene, not a copied word", kind="shares a word with A")
    from ..probe import next_sentence
    model, tokenizer = loaded("bertlab-mini")
    p = next_sentence(model, tokenizer, _KETTLE, answer)
    if p > 0.9:
        return right(f"P(IsNext) = {p:.3f} for a sentence about a team that lost a final: the head rewards a word of the "
                     "kettle's scene, not coherence")
    return wrong(f"P(IsNext) = {p:.3f}: not yet above 0.9; put in a word from the scene of a kettle on a stove",
                 kind="not fooled")
