"""Notebook 00 (a first look at BERT): answers to its checkable exercises, and known wrong answers.

00.5 (compare `bank`'s vector at layer 0 and layer 6) is open on purpose: notebook 07 answers it properly.
"""

import math

import torch

import bertlab


def count_parameters(c):
    """The notebook's formula: (embeddings, layers, pooler) parameters from the config alone."""
    H, I = c.hidden_size, c.intermediate_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * H + 2 * H
    attention = 4 * (H * H + H) + 2 * H
    feed_forward = (H * I + I) + (I * H + H) + 2 * H
    return embeddings, c.num_hidden_layers * (attention + feed_forward), H * H + H


def ex_00_1():
    """BERT-base's embedding block: three tables of H columns and a LayerNorm (23,837,184)."""
    return count_parameters(bertlab.BertConfig.preset("base"))[0]


def wrong_00_1():
    c = bertlab.BertConfig.preset("base")
    H = c.hidden_size
    n = ex_00_1()
    return [(n - 2 * H, "LayerNorm"), (c.vocab_size * H, "token table"), (n - c.type_vocab_size * H, "table"),
            (round(n / 1e6, 1), "millions"), (n * 2, "factor"), (count_parameters(bertlab.load("minilm")[0].config)[0],
                                                                 "MiniLM"), ("23837184", "int"),
            # the segment table and the LayerNorm are both 2 × H: the diagnosis names both, not one by chance
            (n - c.type_vocab_size * H, "segment table"), (float(n), "an int"),
            (n - (c.vocab_size - 30_000) * H, "paper's round vocabulary"), (n + H * H + H, "pooler")]


def _attention(text="The river bank was muddy after the rain."):
    model, tokenizer = bertlab.load("minilm", device="cpu")
    model.eval()
    with torch.no_grad():
        out = model(**tokenizer(text), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions])          # (layers, heads, T, T)


def ex_00_2():
    """The head whose words' rows put the most weight on the next token, on the notebook's sentence: (1, 8)."""
    att = _attention("The trophy did not fit in the suitcase because it was too big.")
    T = att.shape[-1]
    i = torch.arange(1, T - 2)
    nxt = att[:, :, i, i + 1].mean(-1)                          # (layers, heads)
    k = int(nxt.argmax())
    return (k // nxt.shape[1], k % nxt.shape[1])


def wrong_00_2():
    layer, head = ex_00_2()
    return [((0, 2), "previous token"), ((layer + 1, head + 1), "from 1"), ((4, 5), "[CLS]"), ((6, 0), "layers 0 to 5"),
            ("1, 8", "pair of ints"), ((2, 3), "")]


def ex_00_3():
    """The largest mean weight any MiniLM head's word rows put on [SEP] (about 0.2: no [SEP] head)."""
    return float(_attention()[:, :, 1:-1, -1].mean(-1).max())


def wrong_00_3():
    att = _attention()
    return [(float(att[..., -1].mean(-1).max()), "rows too"), (float(att[:, :, 1:-1, 0].mean(-1).max()), "[CLS]"),
            (ex_00_3() * 100, "percentage"), (float(att[:, :, 1:-1, -1].mean()), "average over all heads"),
            (0.5, ""),   # (rounded to 0.2 it is still right to two decimals: 0.20)
            (math.trunc(ex_00_3() * 100) / 100, "cut off after two decimals")]


def ex_00_4():
    """Table 1: BERT-base minus OpenAI GPT, task by task; the largest gain (RTE, +10.4)."""
    tasks = ["MNLI-m", "MNLI-mm", "QQP", "QNLI", "SST-2", "CoLA", "STS-B", "MRPC", "RTE"]
    base = [84.6, 83.4, 71.2, 90.5, 93.5, 52.1, 85.8, 88.9, 66.4]
    gpt = [82.1, 81.4, 70.3, 87.4, 91.3, 45.4, 80.0, 82.3, 56.0]
    return max(tasks, key=lambda t: base[tasks.index(t)] - gpt[tasks.index(t)])


def wrong_00_4():
    return [("CoLA", "BERT-large"), ("MRPC", "not the most"), ("WNLI", "nine columns"), (4, "str")]
