"""Notebook 01 (WordPiece): answers to its checkable exercises, and known wrong answers.

Open on purpose (no check): 01.4 (vocabularies of 500 and 8,000: how the splits change), 01.5 (the
likelihood score on Korean jamo), whose point is the explanation.
"""

import bertlab

A, B = "The river bank was muddy.", "We sat on the grass."


def _tok(name="minilm"):
    return bertlab.load(name, device="cpu")[1]


def ex_01_1():
    """B's words and its closing [SEP]: 7."""
    return sum(_tok()(A, B).token_type_ids)


def wrong_01_1():
    n = ex_01_1()
    # n + 1 is also segment A's count in this pair: the diagnosis names both readings
    return [(n - 1, "[SEP]"), (n + 1, "A's [SEP]"), (n + 1, "that is segment A"), (len(_tok()(A, B)), "whole pair"),
            (5, "words"), ("7", "int")]


def ex_01_2():
    """One piece per jamo letter: 10."""
    return len(_tok().tokenize("강아지를"))


def wrong_01_2():
    return [(4, "syllables"), (ex_01_2() + 2, "[CLS]/[SEP]"), (len(_tok("bertlab-tiny").tokenize("강아지를")), "tokenizer"),
            (1, "")]


def ex_01_3():
    def first_subtokens(word_ids):
        return [i for i, w in enumerate(word_ids) if w is not None and (i == 0 or word_ids[i - 1] != w)]
    return first_subtokens


def _known_wrong_01_3():
    def with_specials(word_ids):
        return [i for i, w in enumerate(word_ids) if i == 0 or word_ids[i - 1] != w]

    def without_cls(word_ids):
        return [i - 1 for i in ex_01_3()(word_ids)]

    def last(word_ids):
        return [i for i, w in enumerate(word_ids) if w is not None and (i + 1 == len(word_ids) or word_ids[i + 1] != w)]

    def unique(word_ids):                   # one position per word id: loses B's words in a pair
        seen, out = set(), []
        for i, w in enumerate(word_ids):
            if w is not None and w not in seen:
                seen.add(w)
                out.append(i)
        return out

    def crashes(word_ids):
        return word_ids.index(None, 1) / 0
    return [(with_specials, "[CLS]/[SEP]"), (without_cls, "off by one"), (last, "last piece"), (unique, "missing"),
            (crashes, "raised"), ([1, 2], "function")]


def wrong_01_3():
    """01.3's known wrong answers, and right answers that edit their input in place (refused: they spoil the caller's data)."""
    return _known_wrong_01_3() + _edits_01_3()


def _edits_01_3():
    def edits_its_input(word_ids):              # right positions, but the caller's list is emptied
        out = ex_01_3()(list(word_ids))
        word_ids.clear()
        return out
    return [(edits_its_input, "in place")]
