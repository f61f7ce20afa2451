"""The paper's ablations (Tables 5, 6 and 8, Figure 5) at toy scale: pre-train variants, score them on the same probes.

    .venv/bin/python scripts/ablations.py                 # the full harness → bertlab/assets/ablations/results.json
    .venv/bin/python scripts/ablations.py --jobs 2        # two processes; each job seeds everything itself
    .venv/bin/python scripts/ablations.py --quick --out /tmp/quick.json   # seconds: every code path, tiny budget

Every variant is pre-trained from scratch on the same data (the English demo corpus, bertlab-tiny's 4,000-piece
vocabulary), in the same order, with the same masks and the same budget (steps × batch × length); per seed,
only the one thing under study changes:

- **pre-training task** (Table 5): MLM + NSP (BERT), MLM only (No NSP), and a left-to-right LM (LTR & No NSP:
  `BertConfig(is_decoder=True)`, causal attention, each position predicts the next token). The paper's fourth
  row, LTR with a randomly initialised BiLSTM on top, is scored as a probe: the BiLSTM reads the LTR model's
  frozen states (feature-based, token tasks only), see `bilstm_probe`.
- **model size** (Table 6): two widths at two layers (hidden 32 and 64).
- **training steps** (Figure 5): the MLM + NSP and LTR runs are scored at a quarter, half and all of their
  steps (checkpoints of one run each; the learning rate is still high at the earlier ones, as in any
  mid-run checkpoint).
- **masking strategy** (Appendix C.2, Table 8): 100 % [MASK] and 100 % random besides BERT's 80/10/10.

Every model meets the same probes, chosen so that some answers are decided by the words to the *right*:

- `wsd_right` (feature-based, token level): the sense of an ambiguous word (bank, bat, …; bertlab's
  senses.tsv) when everything before it is the same: each sentence is cut to "the <word> <the words after
  it>". A left-to-right model's state at the word has then seen only "[CLS] the <word>" for both senses, so
  its probe is at the word-identity baseline by construction; a bidirectional model can read the cue words.
- `next_replaced` (feature-based, token level): from the state at position t of a held-out sentence, was
  the token at t + 1 replaced by a random one? Only the right context decides, so LTR is at chance by
  construction; 3,268 examples (two per held-out sentence, odd documents test), so the numbers are precise.
- `wsd` (feature-based): the same words in their full sentences (cues left and right).
- `pos` (feature-based): part of speech of every token of bertlab's pos.tsv (as the paper's feature-based NER).
- `pair` (fine-tuned, sentence pair): is B the sentence after A? Pairs from half the held-out documents
  train, the other half test (a QNLI/MNLI-like relation between two segments).
- `topic` (fine-tuned, single sentence): which of the nine corpus files a held-out sentence comes from (an
  SST-2-like single-sentence classification, where the words themselves go far).
- `mlm` / `nsp` on held-out text, beside the unigram and majority baselines, for models with those heads.

Feature-based probes read every layer (side by side) through a linear (logistic-regression) probe trained on a fixed
sentence split. Fine-tuned tasks train the whole model briefly from the pooled [CLS] state; for the LTR
model from the *last* token's state (as GPT classifies), through the same pooler layer, because its [CLS]
has seen nothing but itself. A model that was never pre-trained (`random init`) is scored too: it is the
floor that says how much of each number pre-training bought.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import platform
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import bertlab
from bertlab.model.heads import IGNORE
from bertlab.pretraining import PretrainingData, collate, evaluate, make_pairs, mask_tokens, read_documents
from bertlab.pretraining.schedule import lr_at, param_groups
from bertlab.probe.layers import _split, _token_span, load_probing_set, train_linear_probe

ROOT = Path(bertlab.__file__).resolve().parent
CORPUS = ROOT / "assets" / "corpus"
OUT = ROOT / "assets" / "ablations" / "results.json"
TRAIN = sorted(str(p) for p in (CORPUS / "train").glob("en_*.txt"))       # English only: the probes are English
HELDOUT = sorted(str(p) for p in (CORPUS / "heldout").glob("en_*.txt"))


# ---- what is compared -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    steps: int = 1200          # optimizer steps of every pre-training run
    batch_size: int = 32       # NSP pairs per step
    max_len: int = 32          # tokens per pair: short sequences, so a CPU sees many of them
    lr: float = 3e-3           # peak; 10 % linear warm-up then linear decay (the paper's schedule)
    finetune_epochs: int = 3
    finetune_lr: float = 1e-3


FULL = Budget()
QUICK = Budget(steps=24, batch_size=8, finetune_epochs=1)

# (layers, hidden, heads); feed-forward 4H. "L2/H64" is the base every other ablation uses.
SIZES = {"L2/H32": (2, 32, 1), "L2/H64": (2, 64, 1)}      # L2/H128 costs 2.5x a base run: over the CPU budget
BASE = "L2/H64"
BERT_SPLIT = (0.8, 0.1, 0.1)


@dataclass(frozen=True)
class Variant:
    name: str
    objective: str = "mlm_nsp"         # "mlm_nsp", "mlm" (No NSP), "ltr" (left-to-right LM, No NSP), "none" (random init)
    size: str = BASE
    replace: tuple = BERT_SPLIT        # mask_tokens' (mask, random, keep)
    checkpoints: tuple = (1.0,)        # fractions of the steps at which the model is scored
    group: tuple = ()                  # the tables it belongs to


VARIANTS = [
    Variant("MLM + NSP", checkpoints=(0.25, 0.5, 1.0), group=("tasks", "sizes", "masks", "steps")),
    Variant("No NSP", objective="mlm", group=("tasks",)),
    Variant("LTR & No NSP", objective="ltr", checkpoints=(0.25, 0.5, 1.0), group=("tasks", "steps")),
    Variant("random init", objective="none", group=("tasks",)),
    Variant("L2/H32", size="L2/H32", group=("sizes",)),
    Variant("100/0/0", replace=(1.0, 0.0, 0.0), group=("masks",)),
    Variant("0/0/100", replace=(0.0, 1.0, 0.0), group=("masks",)),
]

# The paper's numbers (Devlin et al. 2018, dev sets), for the notebook to put beside ours.
PAPER = {
    "table5": {"columns": ["MNLI-m", "QNLI", "MRPC", "SST-2", "SQuAD F1"],
               "rows": {"BERT-base": [84.4, 88.4, 86.7, 92.7, 88.5], "No NSP": [83.9, 84.9, 86.5, 92.6, 87.9],
                        "LTR & No NSP": [82.1, 84.3, 77.5, 92.1, 77.8],
                        "+ BiLSTM": [82.1, 84.1, 75.7, 91.6, 84.9]}},
    "table6": {"columns": ["L", "H", "A", "LM ppl", "MNLI-m", "MRPC", "SST-2"],
               "rows": [[3, 768, 12, 5.84, 77.9, 79.8, 88.4], [6, 768, 3, 5.24, 80.6, 82.2, 90.7],
                        [6, 768, 12, 4.68, 81.9, 84.8, 91.3], [12, 768, 12, 3.99, 84.4, 86.7, 92.9],
                        [12, 1024, 16, 3.54, 85.7, 86.9, 93.3], [24, 1024, 16, 3.23, 86.6, 87.8, 93.7]]},
    "table8": {"columns": ["MASK", "SAME", "RND", "MNLI fine-tune", "NER fine-tune", "NER feature-based"],
               "rows": [[80, 10, 10, 84.2, 95.4, 94.9], [100, 0, 0, 84.3, 94.9, 94.0], [80, 0, 20, 84.1, 95.2, 94.6],
                        [80, 20, 0, 84.4, 95.2, 94.7], [0, 20, 80, 83.7, 94.8, 94.6], [0, 0, 100, 83.6, 94.9, 94.6]]},
    "figure5": "MNLI dev accuracy of BERT-base: about +1.0 from 500k to 1M steps; MLM converges slightly slower "
               "than LTR at first but beats it in absolute accuracy almost immediately.",
}


# ---- pre-training -----------------------------------------------------------------------------------------

def make_config(tok, variant: Variant, budget: Budget) -> bertlab.BertConfig:
    layers, hidden, heads = SIZES[variant.size]
    extra = {"is_decoder": True} if variant.objective == "ltr" else {}
    return bertlab.BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                              num_attention_heads=heads, intermediate_size=4 * hidden,
                              max_position_embeddings=budget.max_len, pad_token_id=tok.pad_id, **extra)


def next_token_labels(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Left-to-right LM labels: position t predicts token t + 1; the last real token (and padding) predicts nothing."""
    labels = torch.full_like(input_ids, IGNORE)                                  # (B, T)
    labels[:, :-1] = torch.where(attention_mask[:, 1:].bool(), input_ids[:, 1:], IGNORE)
    return labels


def pretrain_variant(tok, variant: Variant, seed: int, budget: Budget) -> dict[float, dict]:
    """Train one variant; return {fraction of steps: state_dict} at its checkpoints.

    Everything random is seeded from `seed` alone (initial weights, data order, masks, dropout), so two
    variants with the same seed differ only in what the variant changes. States are scored after training,
    so scoring (which draws random numbers for fine-tuning) cannot change the training trajectory.
    """
    torch.manual_seed(seed)
    random.seed(seed)
    model = bertlab.BertForPreTraining(make_config(tok, variant, budget), device="cpu")
    states = {}
    if variant.objective == "none":
        return {1.0: copy.deepcopy(model.state_dict())}
    model.train()
    stream = PretrainingData(TRAIN, tok, max_len=budget.max_len, seed=seed).batches(budget.batch_size)
    masks = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(param_groups(model, 0.01), lr=budget.lr, betas=(0.9, 0.999), eps=1e-6)
    at = {max(1, round(f * budget.steps)): f for f in variant.checkpoints}
    for step in range(budget.steps):
        batch = collate(next(stream), tok.pad_id)
        ids, types, attn = batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
        # the masks are drawn for every objective, so the data and mask streams stay in step across variants
        inputs, labels = mask_tokens(ids, tok, generator=masks, replace=variant.replace)
        if variant.objective == "ltr":
            inputs, labels = ids, next_token_labels(ids, attn)      # no corruption: the causal mask hides the future
        for g in opt.param_groups:
            g["lr"] = lr_at(step, budget.steps, max(1, budget.steps // 10), budget.lr)
        nsp = batch["next_sentence_label"] if variant.objective == "mlm_nsp" else None
        out = model(inputs, types, attn, labels=labels, next_sentence_label=nsp)
        loss = out.mlm_loss + out.nsp_loss if nsp is not None else out.mlm_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step + 1 in at:
            states[at[step + 1]] = copy.deepcopy(model.state_dict())
    return states


# ---- the probes -------------------------------------------------------------------------------------------

@dataclass
class TokenTask:
    """Examples (sentence, word) → label, with a fixed train/test split by sentence."""
    name: str
    examples: list
    labels: list
    test: set = field(default_factory=set)


def right_context_senses() -> tuple[list, list]:
    """senses.tsv cut to "the <word> <what follows it>": the same left context for every sense.

    Sentences with fewer than three words after the ambiguous word are left out (nothing to disambiguate by).
    """
    examples, labels = load_probing_set("senses")
    out_x, out_y = [], []
    for (sentence, word), label in zip(examples, labels):
        m = re.search(rf"\b{re.escape(word)}\b", sentence, flags=re.IGNORECASE)
        rest = sentence[m.end():].strip()
        if len(rest.split()) < 3:
            continue
        out_x.append((f"the {word} {rest}", word))
        out_y.append(label)
    return out_x, out_y


def token_tasks(quick: bool) -> list[TokenTask]:
    tasks = [TokenTask("wsd_right", *right_context_senses()), TokenTask("wsd", *load_probing_set("senses")),
             TokenTask("pos", *load_probing_set("pos"))]
    for t in tasks:
        if quick:       # a few sentences, still both splits
            keep = sorted({s for s, _ in t.examples})[:40]
            pairs = [(x, y) for x, y in zip(t.examples, t.labels) if x[0] in keep]
            t.examples, t.labels = [p[0] for p in pairs], [p[1] for p in pairs]
        t.test = _split([s for s, _ in t.examples], 0.3, seed=0)
    return tasks


def identity_baseline(task: TokenTask) -> float:
    """Test accuracy of answering each word's most frequent training label (the overall majority for a new word):
    what a probe that knows only *which word* it sees can reach."""
    def word(x):
        s, w = x
        return (s.split()[w] if isinstance(w, int) else w).lower()
    by_word: dict[str, Counter] = {}
    overall = Counter()
    for x, y in zip(task.examples, task.labels):
        if x[0] not in task.test:
            by_word.setdefault(word(x), Counter())[y] += 1
            overall[y] += 1
    top = overall.most_common(1)[0][0]
    hits = [(by_word[word(x)].most_common(1)[0][0] if word(x) in by_word else top) == y
            for x, y in zip(task.examples, task.labels) if x[0] in task.test]
    return sum(hits) / len(hits)


@torch.no_grad()
def sequence_states(bert, tok, examples, max_len: int):
    """Per distinct sentence: its states (T, (L + 1)·H), every layer side by side; per example: (sentence index,
    [start, end) span of its word).

    Every layer, from the embeddings up, as the paper's feature-based NER concatenates layers: the embedding
    output says which word it is, the encoder layers what its context adds, so a probe on them can always
    match the word-identity baseline and anything above it is context."""
    sentences = sorted({s for s, _ in examples})
    index = {s: i for i, s in enumerate(sentences)}
    states, spans = [], []
    bert.eval()
    for b in range(0, len(sentences), 64):
        batch = tok.batch(sentences[b:b + 64], max_length=max_len)
        out = bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], output_hidden_states=True)
        out = torch.cat(out.hidden_states, dim=-1)                                  # (B, T, (L + 1)·H)
        for j, enc in enumerate(batch.encodings):
            states.append(out[j, :len(enc.input_ids)].clone())
    encodings = {}
    for k, (s, w) in enumerate(examples):
        if s not in encodings:
            encodings[s] = tok(s, max_length=max_len, truncation=True)
        spans.append((index[s], _token_span(tok, s, w, encodings[s], k)))
    return sentences, states, spans


def linear_probe(features: torch.Tensor, y: torch.Tensor, is_test: torch.Tensor, n_classes: int) -> float:
    mean, std = features[~is_test].mean(0), features[~is_test].std(0).clamp_min(1e-6)
    x = (features - mean) / std
    probe = train_linear_probe(x[~is_test], y[~is_test], n_classes, l2=1e-2, steps=100)
    with torch.no_grad():
        return float((probe(x[is_test]).argmax(-1) == y[is_test]).float().mean())


class BiLSTMProbe(nn.Module):
    """A randomly initialised one-layer BiLSTM over frozen states, then a linear layer at the word.

    The paper's "+ BiLSTM" row adds one on top of the LTR model during fine-tuning; here it reads frozen
    states (feature-based), which is enough to ask the question the row asks: can a right-to-left reader on
    top give a left-to-right model back the context to its right?
    """

    def __init__(self, hidden: int, n_classes: int, width: int = 16):
        super().__init__()
        self.lstm = nn.LSTM(hidden, width, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * width, n_classes)

    def forward(self, states, lengths, spans):               # states (B, T, H)
        packed = nn.utils.rnn.pack_padded_sequence(states, lengths, batch_first=True, enforce_sorted=False)
        seq, _ = self.lstm(packed)
        seq, _ = nn.utils.rnn.pad_packed_sequence(seq, batch_first=True)             # (B, T, 2w)
        weight = torch.zeros(len(spans), seq.shape[1])                                # (N, T): mean over the word
        for n, (_, (s, e)) in enumerate(spans):
            weight[n, s:e] = 1.0 / (e - s)
        rows = torch.tensor([b for b, _ in spans])
        words = torch.einsum("nt,ntd->nd", weight, seq[rows])                          # (N, 2w)
        return self.out(words)


def bilstm_probe(states, spans, y, is_test, n_classes, seed: int, epochs: int = 30) -> float:
    torch.manual_seed(seed)
    padded = nn.utils.rnn.pad_sequence(states, batch_first=True)                      # (S, T, H)
    padded = (padded - padded.mean((0, 1))) / padded.std((0, 1)).clamp_min(1e-6)
    lengths = torch.tensor([len(s) for s in states])
    probe = BiLSTMProbe(padded.shape[-1], n_classes)
    opt = torch.optim.Adam(probe.parameters(), lr=1e-2, weight_decay=1e-4)
    train = [i for i in range(len(spans)) if not is_test[i]]
    test = [i for i in range(len(spans)) if is_test[i]]

    def run(rows):
        sent = sorted({spans[i][0] for i in rows})
        where = {s: j for j, s in enumerate(sent)}
        return probe(padded[sent], lengths[sent], [(where[spans[i][0]], spans[i][1]) for i in rows])

    for _ in range(epochs):
        opt.zero_grad()
        F.cross_entropy(run(train), y[train]).backward()
        opt.step()
    with torch.no_grad():
        return float((run(test).argmax(-1) == y[test]).float().mean())


@dataclass
class NextReplaced:
    """Token ids with one position t each, labelled 1 where the token at t + 1 was replaced by a random one.

    The probe reads the state at t, never at t + 1: whether the next word fits is decided entirely by the
    context to the right, so a left-to-right model is at chance here by construction (its state at t is the
    same whatever comes next), and a bidirectional one can only beat chance if pre-training taught it which
    words follow which.
    """
    name: str
    rows: list          # (ids, t, label, is_test)


def next_replaced_task(tok, max_len: int, quick: bool) -> NextReplaced:
    g = torch.Generator().manual_seed(0)
    pool = [i for i in range(tok.vocab_size) if i not in tok.special_ids]
    rows = []
    for d, doc in enumerate(read_documents(HELDOUT)):
        for sentence in doc:
            ids = tok(sentence, max_length=max_len, truncation=True).input_ids
            if len(ids) < 6:
                continue
            for _ in range(2):      # two draws per sentence: more examples, each with its own position and coin
                t = int(torch.randint(1, len(ids) - 3, (1,), generator=g))       # t + 1 is a real token, not [SEP]
                label = int(torch.rand(1, generator=g) < 0.5)
                new = list(ids)
                if label:
                    new[t + 1] = pool[int(torch.randint(len(pool), (1,), generator=g))]
                rows.append((new, t, label, d % 2 == 1))
    if quick:
        rows = rows[::50]
    return NextReplaced("next_replaced", rows)


@torch.no_grad()
def id_states(bert, rows, pad_id: int):
    """States (T, (L + 1)·H) of each row's ids and the span [t, t + 1) the probe reads."""
    bert.eval()
    states = []
    for b in range(0, len(rows), 64):
        chunk = rows[b:b + 64]
        T = max(len(r[0]) for r in chunk)
        ids = torch.tensor([r[0] + [pad_id] * (T - len(r[0])) for r in chunk])
        attn = torch.tensor([[1] * len(r[0]) + [0] * (T - len(r[0])) for r in chunk])
        out = bert(ids, torch.zeros_like(ids), attn, output_hidden_states=True)
        out = torch.cat(out.hidden_states, dim=-1)                                  # (B, T, (L + 1)·H)
        states += [out[j, :len(r[0])].clone() for j, r in enumerate(chunk)]
    return states, [(i, (r[1], r[1] + 1)) for i, r in enumerate(rows)]


BILSTM_TASKS = ("wsd_right", "next_replaced")     # the right-context tasks, where the BiLSTM row is a question


def score_token_tasks(model, tok, tasks, max_len, ltr: bool, seed: int) -> dict:
    scores = {}
    for t in tasks:
        if isinstance(t, NextReplaced):
            states, spans = id_states(model.bert, t.rows, tok.pad_id)
            classes, labels = [0, 1], [r[2] for r in t.rows]
            is_test = torch.tensor([r[3] for r in t.rows])
        else:
            _, states, spans = sequence_states(model.bert, tok, t.examples, max_len)
            classes, labels = sorted(set(t.labels)), t.labels
            is_test = torch.tensor([s in t.test for s, _ in t.examples])
        y = torch.tensor([classes.index(l) for l in labels])
        features = torch.stack([states[i][s:e].mean(0) for i, (s, e) in spans])       # (N, H)
        scores[t.name] = linear_probe(features, y, is_test, len(classes))
        if ltr and t.name in BILSTM_TASKS:
            scores[t.name + "+bilstm"] = bilstm_probe(states, spans, y, is_test, len(classes), seed)
    return scores


# ---- fine-tuned sentence tasks -----------------------------------------------------------------------------

def pair_task(tok, max_len: int, quick: bool):
    """Held-out next-sentence pairs (exactly half IsNext): even documents train, odd documents test."""
    docs = list(read_documents(HELDOUT))
    g = torch.Generator().manual_seed(0)
    train = make_pairs(docs[0::2], tok, max_len, generator=g, balance=True)
    test = make_pairs(docs[1::2], tok, max_len, generator=g, balance=True)
    encode = lambda ps: [(p.input_ids, p.token_type_ids, p.next_sentence_label) for p in ps]
    if quick:
        train, test = train[:32], test[:32]
    return encode(train), encode(test)


TOPICS = [Path(f).stem for f in HELDOUT]


def topic_task(tok, max_len: int, quick: bool):
    """Which of the nine corpus files (home, travel, people, …) a held-out sentence comes from: a single-sentence
    classification, as SST-2 is, where a bag of words goes far. Even documents of each file train, odd ones test."""
    splits = ([], [])
    for label, path in enumerate(HELDOUT):
        for d, doc in enumerate(read_documents(path)):
            for sentence in doc:
                enc = tok(sentence, max_length=max_len, truncation=True)
                splits[d % 2].append((enc.input_ids, enc.token_type_ids, label))
    train, test = splits
    if quick:
        train, test = train[::40], test[::40]
    return train, test


class SentenceClassifier(nn.Module):
    """The pre-trained encoder and its pooler, then a new linear layer: from [CLS], or (LTR) the last token."""

    def __init__(self, pretrained, last_token: bool, n_classes: int):
        super().__init__()
        self.bert = copy.deepcopy(pretrained.bert)
        self.last_token = last_token
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(self.bert.config.hidden_size, n_classes)
        nn.init.normal_(self.classifier.weight, std=0.02)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, ids, types, attn):
        h = self.bert(ids, types, attn).last_hidden_state                           # (B, T, H)
        if self.last_token:
            last = attn.sum(1) - 1                                                   # (B,) the final [SEP]
            h0 = h[torch.arange(len(h)), last]                                       # (B, H)
        else:
            h0 = h[:, 0]                                                             # (B, H) [CLS]
        pooled = torch.tanh(self.bert.pooler.dense(h0))                         # the pooler's layer, on h0
        return self.classifier(self.dropout(pooled))


def _batch(rows, pad_id):
    T = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [pad_id] * (T - len(r[0])) for r in rows])
    types = torch.tensor([r[1] + [0] * (T - len(r[1])) for r in rows])
    attn = torch.tensor([[1] * len(r[0]) + [0] * (T - len(r[0])) for r in rows])
    return ids, types, attn, torch.tensor([r[2] for r in rows])


def fine_tune(model, tok, task, ltr: bool, seed: int, budget: Budget) -> float:
    train, test = task
    torch.manual_seed(seed)
    clf = SentenceClassifier(model, last_token=ltr, n_classes=1 + max(r[2] for r in train)).train()
    opt = torch.optim.AdamW(param_groups(clf, 0.01), lr=budget.finetune_lr)
    rng = random.Random(seed)
    batch_size = 16
    steps = budget.finetune_epochs * ((len(train) + batch_size - 1) // batch_size)
    step = 0
    for _ in range(budget.finetune_epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for b in range(0, len(order), batch_size):
            ids, types, attn, y = _batch([train[i] for i in order[b:b + batch_size]], tok.pad_id)
            for g in opt.param_groups:
                g["lr"] = lr_at(step, steps, max(1, steps // 10), budget.finetune_lr)
            loss = F.cross_entropy(clf(ids, types, attn), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
    clf.eval()
    right = 0
    with torch.no_grad():
        for b in range(0, len(test), 64):
            ids, types, attn, y = _batch(test[b:b + 64], tok.pad_id)
            right += int((clf(ids, types, attn).argmax(-1) == y).sum())
    return right / len(test)


# ---- one job: a variant and a seed ------------------------------------------------------------------------

def run_one(variant: Variant, seed: int, budget: Budget, quick: bool) -> list[dict]:
    torch.set_num_threads(1)
    t0 = time.process_time()
    _, tok = bertlab.load("bertlab-tiny", device="cpu")
    states = pretrain_variant(tok, variant, seed, budget)
    t1 = time.process_time()
    tasks = token_tasks(quick) + [next_replaced_task(tok, budget.max_len, quick)]
    pair, topic = pair_task(tok, budget.max_len, quick), topic_task(tok, budget.max_len, quick)
    ltr = variant.objective == "ltr"
    rows = []
    for fraction, state in sorted(states.items()):
        t2 = time.process_time()
        model = bertlab.BertForPreTraining(make_config(tok, variant, budget), device="cpu")
        model.load_state_dict(state)
        model.eval()
        row = {"variant": variant.name, "seed": seed, "fraction": fraction,
               "step": round(fraction * budget.steps) if variant.objective != "none" else 0}
        if variant.objective in ("mlm_nsp", "mlm", "none"):
            r = evaluate(model, tok, HELDOUT, max_len=budget.max_len, seed=0, passes=1 if quick else 2)
            row.update(mlm_top1=r.mlm_top1, unigram_top1=r.unigram_top1)
            if variant.objective != "mlm":
                row.update(nsp=r.nsp_accuracy, nsp_majority=r.nsp_majority)
        row.update(score_token_tasks(model, tok, tasks, budget.max_len, ltr, seed))
        row["pair"] = fine_tune(model, tok, pair, ltr, seed, budget)
        row["topic"] = fine_tune(model, tok, topic, ltr, seed, budget)
        row["cpu_seconds_probes"] = time.process_time() - t2
        rows.append(row)
    for row in rows:
        row["cpu_seconds_pretrain"] = t1 - t0
    return rows


def _job(args):
    *work, log = args
    rows = run_one(*work)
    if log is not None:         # one line per finished job, so an interrupted harness can resume
        with open(log, "a") as f:
            f.write(json.dumps(rows) + "\n")
    print(f"done: {work[0].name}, seed {work[1]}, {rows[-1]['cpu_seconds_pretrain']:.0f} s CPU pre-training", flush=True)
    return rows


# ---- the whole harness ------------------------------------------------------------------------------------

METRICS = ["mlm_top1", "nsp", "wsd_right", "wsd_right+bilstm", "next_replaced", "next_replaced+bilstm",
           "wsd", "pos",
           "pair", "topic"]


def summarise(rows: list[dict]) -> dict:
    """Mean, standard deviation (over seeds) and min / max of every metric, per variant and checkpoint."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["step"]), []).append(r)
    out = {}
    for (name, step), rs in groups.items():
        cell = {"variant": name, "step": step, "seeds": sorted(r["seed"] for r in rs)}
        for m in METRICS:
            values = [r[m] for r in rs if m in r]
            if values:
                t = torch.tensor(values, dtype=torch.float64)
                cell[m] = {"mean": float(t.mean()), "std": float(t.std()) if len(values) > 1 else 0.0,
                           "min": float(t.min()), "max": float(t.max())}
        out[f"{name} @ {step}"] = cell
    return out


def baselines(quick: bool, budget: Budget) -> dict:
    """What each probe scores without a model: word identity (token tasks), the majority label (sentence tasks)."""
    _, tok = bertlab.load("bertlab-tiny", device="cpu")
    out = {t.name: identity_baseline(t) for t in token_tasks(quick)}
    test = [r[2] for r in next_replaced_task(tok, budget.max_len, quick).rows if r[3]]
    out["next_replaced"] = max(sum(test), len(test) - sum(test)) / len(test)     # the majority label
    for name, (train, test) in (("pair", pair_task(tok, budget.max_len, quick)),
                                ("topic", topic_task(tok, budget.max_len, quick))):
        top = Counter(r[2] for r in train).most_common(1)[0][0]
        out[name] = sum(r[2] == top for r in test) / len(test)
    return out


def run(seeds, quick: bool, jobs: int, only=None, log: Path | None = None) -> dict:
    """Every (variant, seed) job; with `log`, finished jobs found there are not run again."""
    budget = QUICK if quick else FULL
    variants = [v for v in VARIANTS if only is None or v.name in only]
    done = {}
    if log is not None and log.exists():
        for line in log.read_text().splitlines():
            rows = json.loads(line)
            done[(rows[0]["variant"], rows[0]["seed"])] = rows
    work = [(v, s, budget, quick, log) for s in seeds for v in variants if (v.name, s) not in done]
    t0 = time.time()
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_job, work, chunksize=1)
    else:
        results = [_job(w) for w in work]
    fresh = {(rs[0]["variant"], rs[0]["seed"]): rs for rs in results}
    rows = [r for s in seeds for v in variants for r in {**done, **fresh}[(v.name, s)]]
    c1 = time.process_time()
    base = baselines(quick, budget)
    # each job times its own process; the checkpoint rows of one run share its pre-training time
    cpu = (sum(r["cpu_seconds_pretrain"] for r in rows if r["fraction"] == 1.0)
           + sum(r["cpu_seconds_probes"] for r in rows) + time.process_time() - c1)
    return {
        "command": "python scripts/ablations.py " + " ".join(sys.argv[1:]),
        "budget": budget.__dict__,
        "sizes": {k: {"layers": l, "hidden": h, "heads": a} for k, (l, h, a) in SIZES.items()},
        "variants": [{"name": v.name, "objective": v.objective, "size": v.size, "replace": list(v.replace),
                      "checkpoints": list(v.checkpoints), "group": list(v.group)} for v in variants],
        "seeds": list(seeds),
        "baselines": base,
        "rows": rows,
        "summary": summarise(rows),
        "paper": PAPER,
        "cpu_seconds": cpu,
        "wall_seconds": time.time() - t0,        # of this invocation (a resumed run: the rest only)
        "hardware": f"{platform.machine()} {platform.processor() or ''}".strip() + f", torch {torch.__version__}, "
                    f"{jobs} process(es) × 1 thread",
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny budget and subsets of the probes: seconds")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=1, help="processes (each single-threaded)")
    parser.add_argument("--only", nargs="+", help="variant names to run (default: all)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    names = {v.name for v in VARIANTS}
    if args.only and not set(args.only) <= names:
        parser.error(f"unknown variant(s) {sorted(set(args.only) - names)}: choose from {sorted(names)}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    torch.set_num_threads(1)
    log = None if args.quick else args.out.with_suffix(".rows.jsonl")
    result = run(args.seeds, args.quick, args.jobs, args.only, log=log)
    # one --quick cell, recorded so that tests/test_ablations.py can recompute it in seconds and prove that
    # the code which wrote this file still gives its numbers
    quick = run([0], quick=True, jobs=1, only=["No NSP"])
    result["quick_check"] = {"seeds": [0], "only": ["No NSP"], "rows": quick["rows"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    if log is not None:
        log.unlink(missing_ok=True)      # every job is in the results now
    print(f"wrote {args.out}: {len(result['rows'])} rows, {result['cpu_seconds']:.0f} s CPU, "
          f"{result['wall_seconds']:.0f} s wall")


if __name__ == "__main__":
    main()
