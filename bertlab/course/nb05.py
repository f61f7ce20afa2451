"""Notebook 05 (next-sentence prediction): its checkable exercises.

05.1 runs the learner's pair builder on documents of its own and judges every pair it returns; 05.2 and 05.4
compute their answers at check time (from the held-out corpus and the tokenizer, from the config); 05.3 runs
the learner's rule on balanced pairs the notebook never showed (the odd-numbered held-out documents) and
needs it to beat the notebook's shared-word rule there. No answer is stored.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .answers import nearest, rounded_message, runs_a_model, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, loaded, not_a, ratio_kind, right, run_learner, wrong

# documents the check builds sentence-order pairs from: its own, so a builder fitted to the notebook's cannot pass by luck
_DOCUMENTS = [[f"Document {d} sentence {s} tells part {s} of story {d}." for s in range(n)]
              for d, n in enumerate((4, 5, 3, 6, 4, 5, 2, 4, 6, 3, 5, 4))]


def _heldout():
    """The English held-out documents, as the notebook reads them."""
    from ..pretraining import read_documents
    corpus = Path(__file__).resolve().parent.parent / "assets" / "corpus" / "heldout"
    return list(read_documents(sorted(corpus.glob("en_*.txt"))))


def _texts(example, tokenizer) -> tuple[str, str]:
    """A and B of a PairExample as text, cut where the token type changes (as the notebook's `segments`)."""
    pairs = list(zip(example.input_ids, example.token_type_ids))
    a = [i for i, t in pairs if t == 0][1:-1]
    b = [i for i, t in pairs if t == 1][:-1]
    return tokenizer.decode(a), tokenizer.decode(b)


@exercise("05.1", "Build sentence-order pairs (ALBERT's task) from a document", difficulty=2, importance=2,
          minutes=15, expects="a function order_pairs(document) → list of (a, b, label): a document is a list of "
                              "sentences; label 0 = two neighbours in order, 1 = the same two swapped",
          hints=["Walk over neighbouring sentences: document[i] and document[i + 1].",
                 "For each neighbouring pair flip a coin (random.random() < 0.5): keep the order with label 0, or "
                 "swap the two with label 1. Label 0 means 'in order', like IsNext.",
                 "[(d[i], d[i + 1], 0) if random.random() < 0.5 else (d[i + 1], d[i], 1) for i in range(len(d) - 1)]"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (order_pairs, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    labels = set()
    for attempt in range(3):                        # a random builder may give one label by chance: try again
        for doc in _DOCUMENTS:
            out, bad = run_learner(answer, list(doc))
            if bad:
                return bad
            if not isinstance(out, (list, tuple)) or not out and len(doc) > 1:
                return wrong("return a list of (a, b, label) triples, at least one for a document of two or more "
                             "sentences", kind="nothing returned")
            for item in out:
                if not (isinstance(item, (list, tuple)) and len(item) == 3):
                    return wrong(f"each pair is a triple (a, b, label), got {item!r:.60}", kind="wrong shape")
                a, b, label = item
                if label not in (0, 1) or isinstance(label, bool):
                    return wrong(f"a label is 0 (in order) or 1 (swapped), got {label!r}", kind="wrong label type")
                if a not in doc or b not in doc:
                    return wrong("a and b must be two sentences of the document, as they are (not joined, not "
                                 "tokenized)", kind="not the document's sentences")
                i, j = doc.index(a), doc.index(b)
                if abs(i - j) != 1:
                    return wrong("the two sentences of a pair must be neighbours in the document: ALBERT keeps the "
                                 "topic and tests only the order", kind="not neighbours")
                if (j == i + 1) != (label == 0):
                    return wrong("a pair in the document's order has label 0 (like IsNext) and a swapped pair label "
                                 "1; yours are the other way round", kind="labels reversed")
                labels.add(label)
        if labels == {0, 1}:
            return right("every pair is two neighbours, and the label says whether they were swapped: the topic "
                         "is the same in both classes, so only order can tell them apart")
    return wrong("every pair you built has the same label: swap about half of them (a coin flip per pair)",
                 kind="one label only")


@exercise("05.2", "The NotNext share of Google's held-out pairs at 64 tokens", difficulty=1, importance=2,
          minutes=5, expects="a float between 0 and 1, to three decimals: the share of NotNext pairs",
          hints=["The notebook's `label_split` counts the labels of `make_pairs` output; here use the held-out "
                 "documents, max_len=64 and Google's recipe (no balance).",
                 "made = bertlab.make_pairs(heldout, tokenizer, max_len=64, generator=torch.Generator().manual_seed(0))",
                 "sum(e.next_sentence_label for e in made) / len(made): label 1 is NotNext."])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number (a share between 0 and 1)")
    from ..pretraining.pairs import make_pairs
    _, tokenizer = loaded("bertlab-mini")
    heldout = _heldout()

    def share(docs, max_len, balance=False):
        made = make_pairs(docs, tokenizer, max_len=max_len, generator=torch.Generator().manual_seed(0), balance=balance)
        return sum(e.next_sentence_label for e in made) / len(made)

    truth = share(heldout, 64)
    said = to_decimals(x, truth, 3)
    if said == "rounded":
        return wrong(rounded_message(3), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(3), kind="cut off, not rounded")
    if said == "right":
        return right("more NotNext than IsNext, as on the 128-token pairs: a chunk with one sentence can only be "
                     "NotNext, and NotNext pairs leave text for more pairs. Always answering NotNext scores this")
    if to_decimals(x, 100 * truth, 1):
        return wrong("give a share between 0 and 1, not a percentage", kind="percent, not a share")
    found = nearest(x, [(1 - truth, "that is the IsNext share: label 0 is IsNext, label 1 NotNext", "the other label"),
                        (0.5, "that is what balance=True gives; the question is about Google's recipe", "balanced pairs"),
                        (share(heldout, 128), "that is at max_len=128, the notebook's length; the question asks for "
                         "64 tokens", "the wrong length")], 0.0005)
    if found:
        return wrong(*found)
    if x > 1:
        return wrong("a share is between 0 and 1", kind="not a share")
    return wrong("count label 1 over all the pairs that make_pairs builds from the held-out documents at 64 tokens, "
                 "with generator=torch.Generator().manual_seed(0)", kind="off")


def _order_free_pairs():
    """Balanced pairs from the odd-numbered held-out documents (the notebook used the even ones), as text."""
    from ..pretraining.pairs import make_pairs
    _, tokenizer = loaded("bertlab-mini")
    made = make_pairs(_heldout()[1::2], tokenizer, max_len=128, generator=torch.Generator().manual_seed(0), balance=True)
    return [(*_texts(e, tokenizer), e.next_sentence_label) for e in made]


def _notebook_rule(a: str, b: str) -> bool:
    def words(t):
        return {w for w in (x.strip(".,;:!?\"'()") for x in t.split()) if len(w) >= 4 and w.isalpha()}
    return bool(words(a) & words(b))


@exercise("05.3", "A rule with no model that beats the shared-word rule", difficulty=2, importance=2, minutes=20,
          expects="a function same_topic(a, b) → bool: True when you judge that b follows a (IsNext)",
          hints=["The notebook's rule says IsNext when A and B share a word of four letters or more. Which shared "
                 "words say nothing about the topic?",
                 "Frequent words (would, could, their, about, there, ...) are shared by unrelated texts too: "
                 "leave a list of them out before comparing.",
                 "Keep the notebook's four-letter rule, but drop a stop-word list of 30-50 frequent words (would, "
                 "could, their, there, about, after, ...) from both sets before comparing."])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (same_topic, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    pairs = _order_free_pairs()
    said = []
    for a, b, _label in pairs:
        result, bad = run_learner(runs_a_model, answer, a, b)
        if bad:
            return bad
        out, ran = result
        if ran:
            return wrong("your rule runs a model (a torch module's forward ran while it judged a pair): this "
                         "exercise asks how far a rule with no model gets, so compare the two texts yourself",
                         kind="a model, not a rule")
        if not isinstance(out, (bool, int)) and not hasattr(out, "item"):
            return wrong(f"return True (IsNext) or False (NotNext), got {type(out).__name__}", kind="wrong type")
        said.append(bool(out))
    if len(set(said)) == 1:
        return wrong("your rule gives the same answer for every pair, which scores exactly 0.5 on balanced pairs",
                     kind="a constant")
    accuracy = sum((not s) == bool(label) for s, (_, _, label) in zip(said, pairs)) / len(pairs)
    baseline = sum((not _notebook_rule(a, b)) == bool(label) for a, b, label in pairs) / len(pairs)
    if accuracy < 0.5:
        return wrong(f"your rule scores {accuracy:.3f}, below chance: True should mean IsNext (same topic)",
                     kind="reversed")
    if accuracy >= 0.70:
        return right(f"{accuracy:.3f} on {len(pairs)} pairs the notebook never showed, against {baseline:.3f} for "
                     "the notebook's rule: topic alone, with no model, goes a long way on NSP")
    return wrong(f"your rule scores {accuracy:.3f} on the check's {len(pairs)} pairs, the notebook's rule "
                 f"{baseline:.3f}; reach 0.70", kind="not yet better")


@exercise("05.4", "How many numbers does the NSP head read for a batch of 8 pairs?", difficulty=1, importance=2,
          minutes=5, expects="an int: the number of values in bertlab-mini's pooled output for 8 pairs",
          hints=["The NSP head reads the pooled output, not the hidden state of every token.",
                 "The pooled output has one vector per pair: its shape is (batch, hidden).",
                 "8 × model.config.hidden_size"])
def _(answer):
    answer, bad = whole_or_wrong(answer, "an int (a count of numbers)")
    if bad:
        return bad
    model, _ = loaded("bertlab-mini")
    H = model.config.hidden_size
    truth = 8 * H
    if answer == truth:
        return right("one hidden-size vector per pair, whatever the pairs' length: all the NSP head ever sees of "
                     "A and B")
    if answer == H:
        return wrong("that is one pair; the batch holds 8", kind="one pair")
    if answer == 16:
        return wrong("those are the NSP logits (two per pair), what the head returns, not what it reads",
                     kind="the logits")
    if answer == 8 * 768 or answer == 768:
        return wrong("768 is BERT-base's hidden size; bertlab-mini's is in model.config", kind="the wrong model")
    tiny = loaded("bertlab-tiny")[0].config.hidden_size
    if answer in (8 * tiny, tiny):
        return wrong(f"{tiny} is bertlab-tiny's hidden size; bertlab-mini's is in model.config", kind="the wrong model")
    if answer > truth and answer % truth == 0:
        return wrong("that counts a vector for every token; the pooled output is one vector per pair, from [CLS]",
                     kind="every token counted")
    kind = ratio_kind(answer, truth)
    return wrong("the pooled output's shape is (batch, hidden): multiply", kind=kind or "off")
