"""Notebook 00 (a first look at BERT): its checkable exercises.

00.1 and 00.3 compute their answers at check time (from the config, from MiniLM's attention); 00.2 runs
the learner's (layer, head) on sentences of its own; 00.4 compares a salted hash, since its answer is
read off the paper's Table 1, which no model computes.
"""

from __future__ import annotations

import torch

from ..config import BertConfig
from .answers import nearest, pair, rounded_message, to_decimals, truncated_message, whole_or_wrong
from .registry import as_number, exercise, loaded, matches, not_a, ratio_kind, right, wrong

# sentences the checks run on: not the notebook's, so an answer fitted to one sentence does not pass by luck
_SENTENCES = ("My brother bought three apples at the market yesterday.",
              "The old dog slept under the kitchen table all afternoon.",
              "We walked to the station because the bus was late again.",
              "Scientists measured the temperature of the lake every morning.")


def _embedding_parts(c: BertConfig) -> dict[str, int]:
    H = c.hidden_size
    return {"token": c.vocab_size * H, "position": c.max_position_embeddings * H, "segment": c.type_vocab_size * H,
            "LayerNorm": 2 * H}


@exercise("00.1", "How many parameters are in BERT-base's embedding block?", difficulty=1, importance=2,
          minutes=5, expects="an int: the exact count for BERT-base (L=12, H=768)",
          hints=["The embedding block is everything before the first layer: the lookup tables and what "
                 "normalises their sum.",
                 "There are three tables (token, position, segment), each with H columns, and one LayerNorm "
                 "with a weight and a bias of H numbers each.",
                 "count_parameters(bertlab.BertConfig.preset('base')) in the notebook returns three numbers: "
                 "the first one is the answer."])
def _(answer):
    answer, bad = whole_or_wrong(answer, "an int (the exact count, not millions)")
    if bad:
        return bad
    base = _embedding_parts(BertConfig.preset("base"))
    truth = sum(base.values())
    if answer == truth:
        return right("three tables of 768 columns plus the LayerNorm's weight and bias: about a fifth of "
                     "BERT-base, most of it the 30,522-row token table")
    if answer == truth - base["LayerNorm"]:
        # the segment table (2 rows × H) and the LayerNorm (weight and bias, 2 × H) are the same size in
        # BERT-base, so this count cannot say which of the two was left out: name both
        return wrong("2 × H parameters are missing: either the segment table (2 rows of H) or the LayerNorm "
                     "after the sum (a weight and a bias of H each), which are the same size; count both",
                     kind="left out the LayerNorm or the segment table")
    if answer in (base["token"], base["token"] + base["LayerNorm"]):
        return wrong("BERT adds three embeddings, not one: the token table is only one of them",
                     kind="only the token table")
    if answer in (truth - base["position"], truth - base["segment"] - base["LayerNorm"],
                  truth - base["position"] - base["LayerNorm"]):
        return wrong("one of the three tables is missing: token, position and segment are all added",
                     kind="a table left out")
    mini = sum(_embedding_parts(BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6,
                                           num_attention_heads=12, intermediate_size=1536)).values())
    if answer == mini:
        return wrong("that is MiniLM's embedding block (H = 384); the question is about BERT-base",
                     kind="the wrong model")
    if answer < 1000:
        return wrong("give the exact count as a whole number, not in millions", kind="units")
    if answer in (truth - (base["token"] - 30_000 * 768), truth - (base["token"] - 30_000 * 768) - base["LayerNorm"]):
        return wrong("that counts the paper's round 30,000 WordPieces; BERT-base's released vocabulary, the one "
                     "in BertConfig.preset('base'), has a few hundred more rows", kind="the paper's round vocabulary")
    H = BertConfig.preset("base").hidden_size
    if answer == truth + H * H + H:
        return wrong("that adds the pooler (an H × H layer and its bias), which reads the last layer's [CLS]; the "
                     "embedding block ends at the LayerNorm after the sum", kind="counted the pooler")
    kind = ratio_kind(answer, truth)
    if kind:
        return wrong("check the table sizes: rows × hidden size, for each table", kind=kind)
    if abs(answer - truth) / truth < 0.05:
        return wrong("close, but not exact: each table is rows × H, and the LayerNorm has 2 × H", kind="close")
    return wrong("count rows × hidden size for each table of the embedding block, then the LayerNorm",
                 kind="off")


def _head(answer, model):
    """(layer, head) from the learner's answer, or a `wrong` verdict saying what was wrong with it."""
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) for x in answer):
        layer, head = answer
        L, A = model.config.num_hidden_layers, model.config.num_attention_heads
        if not (0 <= layer < L and 0 <= head < A):
            return None, wrong(f"MiniLM has layers 0 to {L - 1} and heads 0 to {A - 1} (counted from 0, as "
                               "out.attentions[layer][0, head] and the explorer's sliders count)",
                               kind="no such head")
        return (layer, head), None
    return None, wrong(f"this exercise takes a (layer, head) pair of ints, e.g. (3, 7); got {answer!r:.40}",
                       kind="wrong type")


def _where_heads_look(model, tokenizer) -> dict[str, torch.Tensor]:
    """For every head, the mean weight a word's row puts on: the next token, the previous one, itself,
    [CLS], [SEP]; averaged over the words of the check's own sentences. Each (layers, heads)."""
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    acc = {k: torch.zeros(L, A) for k in ("next", "previous", "itself", "[CLS]", "[SEP]")}
    with torch.no_grad():
        for s in _SENTENCES:
            enc = tokenizer(s)
            att = torch.stack([a[0] for a in model(**enc, output_attentions=True).attentions])  # (L, A, T, T)
            T = att.shape[-1]
            r = torch.arange(1, T - 1)                                   # the words' rows, not [CLS] / [SEP]
            acc["next"] += att[:, :, r, r + 1].mean(-1)
            acc["previous"] += att[:, :, r, r - 1].mean(-1)
            acc["itself"] += att[:, :, r, r].mean(-1)
            acc["[CLS]"] += att[:, :, r, 0].mean(-1)
            acc["[SEP]"] += att[:, :, r, T - 1].mean(-1)
    return {k: v / len(_SENTENCES) for k, v in acc.items()}


@exercise("00.2", "Find a head whose rows put most of their weight on the next token", difficulty=1,
          importance=2, minutes=10, expects="a (layer, head) pair of MiniLM, counted from 0, e.g. (3, 7)",
          hints=["Use the explorer with a longer sentence; in a next-token head the dark cells sit just "
                 "right of the diagonal.",
                 "'all heads (grid)' shows all 72 heads at once: look for a grid cell with a dark stripe one "
                 "step right of the diagonal. It is in an early layer.",
                 "In code: for each layer and head, average out.attentions[layer][0, head, i, i + 1] over the "
                 "words i, and take the largest."])
def _(answer):
    model, tokenizer = loaded("minilm")
    head, bad = _head(pair(answer), model)
    if bad:
        return bad
    look = _where_heads_look(model, tokenizer)
    layer, h = head
    nxt = float(look["next"][layer, h])
    if nxt >= 0.5:
        return right(f"on the check's own sentences its rows put {nxt:.2f} of their weight on the next token, "
                     "on average: a positional head, the same whatever the words")
    if layer >= 1 and h >= 1 and float(look["next"][layer - 1, h - 1]) >= 0.5:
        return wrong("you may be counting layers and heads from 1: out.attentions and the sliders count "
                     "from 0", kind="counted from 1")
    best = max(look, key=lambda k: float(look[k][layer, h]))
    if best != "next" and float(look[best][layer, h]) >= 0.4:
        where = {"previous": "the previous token", "itself": "the token itself"}.get(best, best)
        return wrong(f"this head's rows mostly look at {where}, not the next token", kind=f"looks at {where}")
    return wrong(f"this head spreads its weight: only {nxt:.2f} on the next token on average, over sentences "
                 "of the check's own", kind="not a next-token head")


@exercise("00.3", "MiniLM has no [SEP] head: how much weight does its most [SEP]-minded head give [SEP]?",
          difficulty=1, importance=1, minutes=10,
          expects="a float between 0 and 1, to two decimals",
          hints=["For the notebook's sentence, take each head's rows for the words (not [CLS] or [SEP]) and "
                 "their weight in the [SEP] column, the last one.",
                 "Average that weight over the words' rows, for every one of the 6 × 12 heads; the answer is "
                 "the largest of the 72 averages.",
                 "torch.stack([a[0] for a in out.attentions])[:, :, 1:-1, -1].mean(-1).max()"])
def _(answer):
    value = as_number(answer)
    if value is None:
        return not_a(answer, float, what="a number between 0 and 1")
    model, tokenizer = loaded("minilm")
    with torch.no_grad():
        att = torch.stack([a[0] for a in model(**tokenizer("The river bank was muddy after the rain."),
                                                    output_attentions=True).attentions])  # (L, A, T, T)
    words = att[:, :, 1:-1]
    truth = float(words[..., -1].mean(-1).max())
    said = to_decimals(value, truth, 2)
    if said == "rounded":
        return wrong(rounded_message(2), kind="rounded too far")
    if said == "truncated":
        return wrong(truncated_message(2), kind="cut off, not rounded")
    if said == "right":
        return right("even the most [SEP]-minded head gives it a small share: MiniLM's heads park their spare "
                     "attention on [CLS] instead (Clark et al. found [SEP] heads in BERT-base, not here)")
    candidates = {
        "averaged over the [CLS] and [SEP] rows too: use only the words' rows":
            float(att[..., -1].mean(-1).max()),
        "that is the weight on [CLS] (the first column), not [SEP] (the last)":
            float(words[..., 0].mean(-1).max()),
        "that is the largest single weight on [SEP]; the question asks for a head's average over the words":
            float(words[..., -1].max()),
        "that is the average over all heads; the question asks for the largest head's average":
            float(words[..., -1].mean()),
    }
    found = nearest(value, [(v, m, "a different quantity") for m, v in candidates.items()], 0.005)
    if found:
        return wrong(*found)
    if abs(value / 100 - truth) <= 0.005:
        return wrong("give a fraction between 0 and 1, not a percentage", kind="off by a factor of 100")
    if not 0 <= value <= 1:
        return wrong("an attention weight lies between 0 and 1", kind="out of range")
    return wrong("compute, for each head, the mean of the [SEP] column over the words' rows, then take the "
                 "largest", kind="off")


_RTE = "a51940fee730b53c0857b8f2286568103c4ab52f25d6530998cb77a07cfa8659"    # digest("00.4", the task)
_COLUMNS = "MNLI-m, MNLI-mm, QQP, QNLI, SST-2, CoLA, STS-B, MRPC, RTE"            # Table 1's nine, all of them


@exercise("00.4", "On which GLUE task does BERT-base gain the most over OpenAI GPT?", difficulty=1,
          importance=2, minutes=5, expects="a task name as the table spells it, e.g. 'QNLI'",
          hints=["BERT-base and GPT have the same size, so this gain is the one that is not about size.",
                 "Subtract GPT's row from BERT-base's, task by task, in the GLUE dict.",
                 "max(TASKS, key=lambda t: GLUE['BERT-base'][0][TASKS.index(t)] - GLUE['OpenAI GPT'][0][TASKS.index(t)])"])
def _(answer):
    if (bad := not_a(answer, str, what="a task name (a str)")):
        return bad
    if matches("00.4", answer, _RTE):
        return right("the smallest task gains the most: with 2.5k training examples, what pre-training "
                     "brings matters most")
    name = answer.strip().lower()
    if name == "cola":
        return wrong("CoLA is BERT-large's largest gain over GPT (the notebook prints it); compare BERT-base's "
                     "row instead", kind="the wrong BERT")
    if name not in _COLUMNS.lower().split(", "):
        return wrong(f"that is not one of the nine columns: {_COLUMNS}", kind="not a task")
    return wrong("that task gains, but not the most: subtract GPT's score from BERT-base's for every task",
                 kind="not the largest gain")
