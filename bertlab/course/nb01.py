"""Notebook 01 (WordPiece): its checkable exercises.

All three compute their answer at check time from MiniLM's tokenizer (the released English uncased
vocabulary): 01.1 and 01.2 count tokens; 01.3 runs the learner's function on `word_ids` of its own texts.
"""

from __future__ import annotations

from .answers import whole_or_wrong
from .registry import exercise, loaded, not_a, right, run_learner, wrong

_PAIR = ("The river bank was muddy.", "We sat on the grass.")
_WORD = "강아지를"                    # "the puppy" with its object particle, from the notebook's Korean sentence


@exercise("01.1", "How many tokens of MiniLM's encoding of the pair are in segment B?", difficulty=1,
          importance=2, minutes=5,
          expects="an int: how many tokens have token_type_id 1 for the pair ('The river bank was muddy.', "
                  "'We sat on the grass.') with MiniLM's tokenizer",
          hints=["Segment B is everything after the first [SEP]. Which special tokens belong to it?",
                 "The pair is [CLS] A [SEP] B [SEP]: token_type_ids are 0 up to and including the first [SEP], "
                 "1 after it, so B's [SEP] counts for B.",
                 "sum(minilm_tok(a, b).token_type_ids), with a and b the two sentences"])
def _(answer):
    answer, bad = whole_or_wrong(answer)
    if bad:
        return bad
    _, tokenizer = loaded("minilm")
    enc = tokenizer(*_PAIR)
    b = sum(enc.token_type_ids)
    a = len(enc) - b
    if answer == b:
        return right("B's words and its closing [SEP]: the segment embedding B is added to each of them")
    if answer == b - 1:
        return wrong("you left out a special token: the final [SEP] belongs to segment B", kind="left out B's [SEP]")
    if answer == b + 1:
        # in this pair A ([CLS], 6 pieces, [SEP]) is exactly one longer than B: the count fits both mistakes
        also = ("; or, if you counted the 0s, that is segment A, and the question asks for B (type 1)"
                if answer == a else "")
        return wrong("the first [SEP] closes segment A and gets token_type_id 0" + also, kind="counted A's [SEP] for B")
    if answer == a or answer == a - 2:
        return wrong("that is segment A (type 0); the question asks for B (type 1)", kind="the wrong segment")
    if answer == len(enc):
        return wrong("that is the whole pair; count only the tokens with token_type_id 1", kind="the whole pair")
    if answer == len(_PAIR[1].split()):
        return wrong("that counts words split on spaces; the model reads WordPieces, punctuation and special "
                     "tokens", kind="counted words, not tokens")
    return wrong("print the tokens beside their token_type_ids and count the 1s", kind="off")


@exercise("01.2", "Into how many pieces does MiniLM's tokenizer cut the one word 강아지를?", difficulty=1,
          importance=2, minutes=5, expects="an int: the number of pieces of minilm_tok.tokenize('강아지를')",
          hints=["Four syllables. But what does the uncased tokenizer do to a Hangul syllable before the "
                 "vocabulary sees it?",
                 "Accent stripping decomposes each syllable (NFD) into its letters (jamo): two or three per "
                 "syllable, and each becomes a piece.",
                 "len(minilm_tok.tokenize('강아지를'))"])
def _(answer):
    answer, bad = whole_or_wrong(answer)
    if bad:
        return bad
    _, tokenizer = loaded("minilm")
    n = len(tokenizer.tokenize(_WORD))
    if answer == n:
        return right("one piece per letter (jamo): the uncased normaliser decomposed every syllable, and the "
                     "English vocabulary has no Korean syllables")
    if answer == len(_WORD):
        return wrong("that counts syllables; the uncased tokenizer decomposes each one into its letters first",
                     kind="counted syllables")
    if answer == n + 2:
        return wrong("tokenize() gives the pieces of the word alone, without [CLS] and [SEP]",
                     kind="counted [CLS]/[SEP]")
    _, tiny = loaded("bertlab-tiny")
    if answer == len(tiny.tokenize(_WORD)):
        return wrong("that is bertlab-tiny's split, which keeps syllables; the question is about MiniLM",
                     kind="the wrong tokenizer")
    return wrong("tokenize the word with MiniLM's tokenizer and count", kind="off")


def _first_subtokens(word_ids) -> list[int]:
    return [i for i, w in enumerate(word_ids) if w is not None and (i == 0 or word_ids[i - 1] != w)]


_TEXTS = (("Snorkelweed grows quickly.", None), ("An unbelievably grumpy goalkeeper waved.", "Nobody laughed."),
          ("The kettle whistled.", None))


@exercise("01.3", "Write first_subtokens(word_ids): the position of each word's first sub-token", difficulty=2,
          importance=2, minutes=10,
          expects="a function that takes an encoding's word_ids (a list, None for [CLS]/[SEP]) and returns "
                  "the list of positions of each word's first sub-token",
          hints=["A token starts a word when it belongs to a word (not None) and the token before it belongs "
                 "to a different word (or there is none).",
                 "Return positions in the full sequence, [CLS] at 0 included in the count, in order; in a "
                 "pair, B's words start again from word 0.",
                 "[i for i, w in enumerate(word_ids) if w is not None and (i == 0 or word_ids[i - 1] != w)]"])
def _(answer):
    if not callable(answer):
        return not_a(answer, type(len), what="a function first_subtokens(word_ids) -> list of positions")
    _, tokenizer = loaded("minilm")
    for text, pair in _TEXTS:
        enc = tokenizer(text, pair)
        word_ids = list(enc.word_ids)
        got, bad = run_learner(answer, list(word_ids))
        if bad:
            return bad
        truth = _first_subtokens(word_ids)
        where = f" (on {text!r}" + (f" + {pair!r})" if pair else ")")
        try:
            got = [int(x) for x in got]
        except (TypeError, ValueError):
            return wrong(f"return a list of int positions, got {type(got).__name__}{where}", kind="wrong type")
        if got == truth:
            continue
        specials = [i for i, w in enumerate(word_ids) if w is None]
        if set(got) - set(truth) and set(got) - set(truth) <= set(specials):
            return wrong("[CLS] and [SEP] are not words: their word_ids are None" + where,
                         kind="counted [CLS]/[SEP]")
        if got == [i - 1 for i in truth]:
            return wrong("positions are counted in the whole sequence, [CLS] at 0" + where, kind="off by one")
        last = [i for i, w in enumerate(word_ids) if w is not None and (i + 1 == len(word_ids) or word_ids[i + 1] != w)]
        if got == last:
            return wrong("those are the last sub-tokens of each word" + where, kind="last piece, not first")
        if len(got) < len(truth):
            return wrong("some words are missing; in a pair, B's word ids start again from 0" + where,
                         kind="words missing")
        return wrong("compare your positions with the tokens" + where, kind="off")
    return right("the paper's tagger reads exactly these positions: 'the representation of the first sub-token'")
