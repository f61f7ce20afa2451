"""Notebook 11 (looking inside): its checkable exercises.

11.1 measures MiniLM's heads at check time on the notebook's 40 sentences; 11.2 runs the learner's merging
function on attention maps of the check's own sentences and compares it with bertlab's own rule. No answer is
stored.
"""

from __future__ import annotations

import torch

from .answers import library_call, pair
from .registry import exercise, loaded, right, run_learner, wrong

# the check's own sentences for 11.2: several words split into pieces
_SPLIT = ["The playwright quietly rewrote the unfinished manuscript.",
          "Unbelievably, the zookeeper photographed seventeen flamingos."]


def _cls_shares():
    from ..probe.head_types import head_types
    from ..probe.layers import load_probing_set
    model, tokenizer = loaded("minilm")
    sentences = sorted({s for s, _ in load_probing_set("senses").examples})[:40]       # as the notebook
    return head_types(model, tokenizer, sentences).share


@exercise("11.1", "One of MiniLM's two heads that give [CLS] the largest share", difficulty=1, importance=2,
          minutes=5, expects="a (layer, head) pair of MiniLM, counted from 0: either of the two heads with the "
                             "largest share on [CLS]",
          hints=["The notebook's `ht` holds each head's average share of attention on [CLS]: ht.share['[CLS]'], "
                 "shape (layers, heads).",
                 "Take the largest entries of that (6, 12) tensor and turn a flat index into (layer, head); the top "
                 "two are within a few thousandths of each other, so either counts.",
                 "s = ht.share['[CLS]']; divmod(int(s.argmax()), s.shape[1])"])
def _(answer):
    answer = pair(answer)
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in answer)):
        return wrong(f"this exercise takes a (layer, head) pair of ints, e.g. (3, 7); got {answer!r:.40}",
                     kind="wrong type")
    share = _cls_shares()
    cls, sep = share["[CLS]"], share["[SEP]"]
    L, A = cls.shape
    layer, head = answer
    if not (0 <= layer < L and 0 <= head < A):
        return wrong(f"MiniLM has layers 0 to {L - 1} and heads 0 to {A - 1}, counted from 0", kind="no such head")
    # the top two differ by about 0.002, far less than the sentences' own noise; the third is 0.02 below them,
    # so the question asks for either of the two and the margin to a wrong answer is ≥ 0.01
    ranked = [divmod(int(i), A) for i in cls.flatten().argsort(descending=True)]
    if (layer, head) in ranked[:2]:
        return right(f"it gives [CLS] {float(cls[layer, head]):.2f} of its attention on average: a head with "
                     "little to do, parked where it mixes in no word")
    if (layer, head) == divmod(int(sep.argmax()), A):
        return wrong("that is the head with the largest [SEP] share", kind="[SEP], not [CLS]")
    if (layer - 1, head - 1) in ranked[:2]:
        return wrong("layers and heads count from 0", kind="counted from 1")
    if float(cls[layer, head]) >= 0.5:
        return wrong("that head does park on [CLS] (over half its attention), but two others park more",
                     kind="a [CLS] head, not the top two")
    return wrong("look for the largest values of ht.share['[CLS]']", kind="off")


def _reference(weights: torch.Tensor, tokens: list[str]) -> torch.Tensor:
    from ..probe.attention_maps import merge_word_pieces
    return merge_word_pieces(weights, tokens)[1]


@exercise("11.2", "Attention per word: sum the keys, average the queries", difficulty=2, importance=2, minutes=20,
          expects="a function merge(weights, groups) → (W, W) tensor: weights is a (T, T) attention map, groups a "
                  "list of W lists of token positions, one per word",
          hints=["A word made of several pieces receives the attention of all its pieces, and looks where its "
                 "pieces look on average.",
                 "First merge the columns (keys) of each group by summing them: (T, W). Then merge the rows "
                 "(queries) of each group by averaging them: (W, W). Every row still sums to 1.",
                 "cols = torch.stack([weights[:, g].sum(1) for g in groups], 1); "
                 "return torch.stack([cols[g].mean(0) for g in groups])"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (merge, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    from ..probe.attention_maps import attention_map, merge_word_pieces, word_groups
    if (name := library_call(answer, merge_word_pieces, attention_map)):
        return wrong(f"your function is, or calls, bertlab's own {name}: the exercise is to write the merge "
                     "yourself (the check compares with that one)", kind="the library's function")
    model, tokenizer = loaded("minilm")
    for text in _SPLIT:
        enc = tokenizer(text)
        with torch.no_grad():
            att = model(**enc, output_attentions=True).attentions[2][0, 4]          # (T, T): layer 2, head 4
        groups = word_groups(enc.tokens)
        out, bad = run_learner(answer, att.clone(), [list(g) for g in groups])
        if bad:
            return bad
        if not isinstance(out, torch.Tensor):
            return wrong(f"return a tensor, got {type(out).__name__}", kind="wrong type")
        W = len(groups)
        if tuple(out.shape) != (W, W):
            return wrong(f"one row and one column per word: ({W}, {W}) here, got {tuple(out.shape)}",
                         kind="wrong shape")
        truth = _reference(att, enc.tokens)
        out = out.float()
        if torch.allclose(out, truth, atol=1e-5):
            continue
        if torch.allclose(out, truth.T, atol=1e-5):
            return wrong("rows and columns are swapped: rows are queries (where a word looks), columns keys",
                         kind="transposed")
        first = [g[0] for g in groups]
        if torch.allclose(out, att[first][:, first], atol=1e-5):
            return wrong("that keeps each word's first piece only, so the attention to and from its other pieces is "
                         "lost: use every piece of a word", kind="first piece only")
        rows = out.sum(-1)
        if (rows > 1 + 1e-4).any():
            return wrong("some rows sum to more than 1: average a word's query rows, do not add them",
                         kind="queries summed")
        if (rows < 1 - 1e-4).any():
            return wrong("some rows sum to less than 1: the attention a word receives is the sum over its pieces, "
                         "not their mean", kind="keys averaged")
        return wrong("rows sum to 1, but the values differ from the rule: sum the key columns of each word, then "
                     "average the query rows", kind="off")
    return right("every row still sums to 1 and a split word gets the attention all its pieces received: "
                 "the rule attention_map(..., words=True) uses")
