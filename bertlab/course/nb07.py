"""Notebook 07 (contextual embeddings): its checkable exercises.

07.1 and 07.3 compute their answers at check time from MiniLM and the notebook's sentences; 07.2 runs the
learner's pooling function on a padded batch of the check's own and compares it with a reference computed
there. No answer is stored.
"""

from __future__ import annotations

import torch

from .answers import nearest, rounded_message, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, loaded, not_a, right, run_learner, wrong

# the notebook's six sentences: the exercises are about its measurement
_BANK = ["Grace walked along the muddy bank of the river.",
         "We had a picnic on the grassy bank by the stream.",
         "The canoe drifted toward the far bank of the lake.",
         "Tom went to the bank to open a savings account.",
         "The bank lends money to small shops in town.",
         "She paid the cheque into her bank on Monday."]
_UNCLEAR = "We met at the bank."
_PADDED = ["A short one.", "This sentence is quite a bit longer than the first one.", "Middle length here, yes."]


def _gaps():
    """(same, different) mean cosine distance per layer for the notebook's bank sentences: each (L + 1,)."""
    from ..probe import cosine_distances, word_vectors
    model, tokenizer = loaded("minilm")
    d = cosine_distances(word_vectors(model, tokenizer, _BANK, "bank", layer="all"))       # (L+1, 6, 6)
    senses = [0, 0, 0, 1, 1, 1]
    same = torch.tensor([[a == b for b in senses] for a in senses]) & ~torch.eye(6, dtype=torch.bool)
    different = torch.tensor([[a != b for b in senses] for a in senses])
    return d[:, same].mean(-1), d[:, different].mean(-1)


def _layer(answer, n_layers):
    """(the row as an int, None) or (None, what is wrong with it)."""
    answer, bad = whole_or_wrong(answer, "an int: a row of the notebook's table, 0 (embeddings) to 6")
    if bad:
        return None, bad
    if not 0 <= answer < n_layers:
        return None, wrong(f"the table's rows are 0 (the embeddings) to {n_layers - 1}", kind="no such layer")
    return answer, None


_ENOUGH = 0.10          # 07.1's threshold: the rows on either side of the answer are ≥ 0.02 from it


@exercise("07.1", "From which layer on are the two senses of 'bank' clearly apart?", difficulty=1, importance=3,
          minutes=5, expects="an int: the first row of the same-vs-different table (0 = embeddings … 6) where the "
                             "different-sense distance minus the same-sense distance is above 0.10",
          hints=["A large 'different sense' number alone is not enough: the last layer spreads every vector out.",
                 "For each row, subtract the same-sense distance from the different-sense distance (a difference, "
                 "not a ratio), and go down the rows.",
                 "int(((different - same) > 0.10).nonzero()[0]) with the notebook's same_vs_different(distances, SENSES)"])
def _(answer):
    same, different = _gaps()
    answer, bad = _layer(answer, len(same))
    if bad:
        return bad
    gap = different - same                                   # (L + 1,)
    truth = int((gap > _ENOUGH).nonzero()[0])
    if answer == truth:
        return right("context sorts the senses within the first layers; after that the gap stays about the same "
                     "(read the table: it moves by a few hundredths, while both distances grow at the last layer)")
    if answer == int(gap.argmax()):
        return wrong("that row has the largest gap, but an earlier one already passes 0.10: the question asks for "
                     "the first", kind="the largest gap, not the first")
    if answer == int(different.argmax()):
        return wrong("that row has the largest different-sense distance, but its same-sense distance is large too: "
                     "the question is about the difference between them", kind="the largest distance, not the gap")
    if answer == 0:
        return wrong("row 0 is the embeddings, before any context: the senses cannot be apart there",
                     kind="no context yet")
    if answer < truth:
        return wrong("the difference at that row is not above 0.10 yet", kind="too early")
    return wrong("an earlier row already passes 0.10: compute different − same for every row, from the top",
                 kind="not the first")


@exercise("07.2", "Mean pooling that ignores padding", difficulty=2, importance=3, minutes=15,
          expects="a function mean_pool(hidden, attention_mask) → (B, H): hidden is (B, T, H), attention_mask "
                  "(B, T) with 1 for real tokens and 0 for padding",
          hints=["A padded batch has [PAD] vectors at the end of the shorter rows; they must not count.",
                 "Multiply the hidden states by the mask (as (B, T, 1)), sum over T, and divide by the number of "
                 "real tokens in each row.",
                 "m = attention_mask[..., None].float(); return (hidden * m).sum(1) / m.sum(1)"])
def _(answer):
    if not callable(answer):
        return wrong(f"this exercise takes your function itself (mean_pool, without brackets), got "
                     f"{type(answer).__name__}", kind="wrong type")
    model, tokenizer = loaded("minilm")
    batch = tokenizer.batch(_PADDED)
    with torch.no_grad():
        hidden = model(input_ids=batch.input_ids, token_type_ids=batch.token_type_ids,
                       attention_mask=batch.attention_mask).last_hidden_state          # (3, T, 384)
    # and a batch of other shapes: a function that hands back one stored (B, H) answer is right on one only
    g = torch.Generator().manual_seed(7)
    other = torch.randn(2, 5, 6, generator=g)                                          # (2, 5, 6)
    other_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    for h, m, where in ((hidden, batch.attention_mask.clone(), ""),
                        (other, other_mask, " (on a second batch of the check's own: hidden (2, 5, 6), one row padded)")):
        verdict = _judge_pool(answer, h, m)
        if verdict is not None:
            verdict.message += where
            return verdict
    return right("padding left out, every real token (with [CLS] and [SEP]) counted once: the pooling "
                 "MiniLM was trained with")


def _judge_pool(answer, hidden, mask):
    """07.2 on one batch: a `wrong` verdict naming the mistake, or None when the pooling is right."""
    out, bad = run_learner(answer, hidden.clone(), mask.clone())
    if bad:
        return bad
    if not isinstance(out, torch.Tensor):
        return wrong(f"return a tensor of shape (B, H), got {type(out).__name__}", kind="wrong type")
    B, T, H = hidden.shape
    if tuple(out.shape) != (B, H):
        return wrong(f"the result should have one vector per sentence, shape (B, H) = ({B}, {H}); got "
                     f"{tuple(out.shape)}", kind="wrong shape")
    m = mask[..., None].float()
    truth = (hidden * m).sum(1) / m.sum(1)
    out = out.float()
    if torch.allclose(out, truth, atol=1e-5):
        return None
    if torch.allclose(out, hidden.mean(1), atol=1e-5):
        return wrong("that averages over every position, [PAD] included: a short sentence in a long batch is "
                     "pulled towards the padding vectors", kind="padding counted")
    if torch.allclose(out, (hidden * m).sum(1), atol=1e-4):
        return wrong("that is the sum; divide by the number of real tokens of each row", kind="not divided")
    if torch.allclose(out, (hidden * m).sum(1) / T, atol=1e-5):
        return wrong("divide by each row's number of real tokens, not by the padded length T", kind="divided by T")
    if torch.allclose(out, hidden[:, 0], atol=1e-5):
        return wrong("that is the [CLS] vector, not the mean", kind="[CLS] pooling")
    return wrong("compare with the hints: mask, sum over tokens, divide by the real-token count", kind="off")


@exercise("07.3", "How far is the unclear 'bank' from the money sentences at the last layer?", difficulty=2,
          importance=2, minutes=10,
          expects="a float, to three decimals: the mean cosine distance, at the last layer, from 'bank' in 'We met at the bank.' "
                  "to 'bank' in the three money sentences",
          hints=["Add the sentence as a seventh to the notebook's six and compute word_vectors(..., layer='all') "
                 "and cosine_distances again.",
                 "The new sentence is row 6 of the (L + 1, 7, 7) distances; the money sentences are columns 3, 4 and 5.",
                 "float(d[-1, 6, 3:6].mean()) with d = bertlab.cosine_distances(vectors of all seven)"])
def _(answer):
    x = as_number(answer)
    if x is None:
        return not_a(answer, float, what="a number (a mean cosine distance)")
    from ..probe import cosine_distances, word_vectors
    model, tokenizer = loaded("minilm")
    d = cosine_distances(word_vectors(model, tokenizer, _BANK + [_UNCLEAR], "bank", layer="all"))   # (L+1, 7, 7)
    money, river = float(d[-1, 6, 3:6].mean()), float(d[-1, 6, 0:3].mean())
    # three decimals, not two: the median (0.131) and the largest (0.132) of the three money distances round to the
    # mean's 0.13 as well, and the smallest (0.116) to a number that looks like the mean cut off
    three = d[-1, 6, 3:6]                                     # the three money distances, last layer
    other = nearest(x, [(float(three.median()), "that is the median of the three money distances; the question asks "
                         "for their mean", "the median, not the mean"),
                        (float(three.max()), "that is the largest of the three money distances; average all three",
                         "one distance, not the mean"),
                        (float(three.min()), "that is the smallest of the three money distances; average all three",
                         "one distance, not the mean")], 0.001)
    said = to_decimals(x, money, 3)
    if said == "right":
        closer = "money" if money < river else "river"
        return right(f"now compare it with the river sentences: the unclear bank sits closer to the {closer} group")
    if said == "rounded":                                    # 0.13: the mean to two decimals, before the median's 0.131
        return wrong(rounded_message(3), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(3), kind="cut off, not rounded")
    if other:
        return wrong(*other)
    itself = float(d[-1, 6, 3:].mean())                      # columns 3 to 6: the new sentence's own 0 included
    if abs(x - itself) < 5e-4:
        return wrong("that mean has four numbers: columns 3 onwards include the new sentence itself (distance 0); "
                     "average its distances to the three money sentences only", kind="itself included")
    found = nearest(x, [(river, "that is the distance to the river sentences (columns 0 to 2)", "the other group"),
                        (1 - money, "that is the cosine similarity; the distance is 1 − similarity",
                         "similarity, not distance")]
                    + [(float(d[layer, 6, 3:6].mean()), "that is an earlier layer; the question asks for the last one",
                        "the wrong layer") for layer in range(d.shape[0] - 1)], 0.005)
    if found:
        return wrong(*found)
    return wrong("take row 6 (the new sentence), columns 3 to 5 (the money sentences), at the last layer, and "
                 "average", kind="off")
