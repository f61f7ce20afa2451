"""The probes every ablation variant meets (scripts of the paper's Tables 5, 6, 8 at toy scale).

Chosen so that some answers are decided by the words to the *right*:

- `wsd_right` (feature-based, token level): the sense of an ambiguous word (bank, bat, …; bertlab's
  senses.tsv) when everything before it is the same: each sentence is cut to "the <word> <the words after
  it>". A left-to-right model's state at the word has then seen only "[CLS] the <word>" for both senses, so
  its probe is at the word-identity baseline by construction; a bidirectional model can read the cue words.
- `next_replaced` (feature-based, token level): from the state at position t of a held-out sentence, was
  the token at t + 1 replaced by a random one? Only the right context decides, so LTR is at chance by
  construction; 3,268 examples (two per held-out sentence, odd documents test).
- `wsd` (feature-based): the same words in their full sentences (cues left and right).
- `pos` (feature-based): part of speech of every token of bertlab's pos.tsv (as the paper's feature-based NER).
- `pair` (fine-tuned, sentence pair): is B the sentence after A? Pairs from half the held-out documents
  train, the other half test (a QNLI/MNLI-like relation between two segments).
- `topic` (fine-tuned, single sentence): which of the nine corpus files a held-out sentence comes from.

Feature-based probes read every layer side by side through a linear (logistic-regression) probe trained on
a fixed sentence split. Fine-tuned tasks train the whole model briefly from the pooled [CLS] state; the LTR
model from its *last* token's state (as GPT classifies), because its [CLS] has seen nothing but itself.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..optim import adamw, clip_and_step, lr_at, set_lr, warmup_count
from ..pretraining import make_pairs, read_documents
from ..probe.layers import _split, _token_span, load_probing_set, train_linear_probe

CORPUS = Path(__file__).resolve().parent.parent / "assets" / "corpus"
HELDOUT = sorted(str(p) for p in (CORPUS / "heldout").glob("en_*.txt"))
TOPICS = [Path(f).stem for f in HELDOUT]
WARMUP = 0.1    # the share of the steps spent warming up, as pretrain's and finetune's default (the cards' runs)


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

    def encode(ps):
        return [(p.input_ids, p.token_type_ids, p.next_sentence_label) for p in ps]

    if quick:
        train, test = train[:32], test[:32]
    return encode(train), encode(test)




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


def fine_tune(model, tok, task, ltr: bool, seed: int, epochs: int, lr: float, clip: float | None) -> float:
    """Train a `SentenceClassifier` on the task's train rows for `epochs`; its test accuracy.

    The optimizer, schedule and clipping are `bertlab.optim`'s. The shipped card ran with `clip` None and
    AdamW's epsilon at PyTorch's default (1e-8), as this harness always had; see the card's notes.
    """
    train, test = task
    torch.manual_seed(seed)
    clf = SentenceClassifier(model, last_token=ltr, n_classes=1 + max(r[2] for r in train)).train()
    opt = adamw(clf, lr, 0.01, eps=1e-8)
    rng = random.Random(seed)
    batch_size = 16
    steps = epochs * ((len(train) + batch_size - 1) // batch_size)
    step = 0
    for _ in range(epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for b in range(0, len(order), batch_size):
            ids, types, attn, y = _batch([train[i] for i in order[b:b + batch_size]], tok.pad_id)
            set_lr(opt, lr_at(step, steps, warmup_count(steps, WARMUP), lr))
            loss = F.cross_entropy(clf(ids, types, attn), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clip_and_step(clf, opt, clip)
            step += 1
    clf.eval()
    right = 0
    with torch.no_grad():
        for b in range(0, len(test), 64):
            ids, types, attn, y = _batch(test[b:b + 64], tok.pad_id)
            right += int((clf(ids, types, attn).argmax(-1) == y).sum())
    return right / len(test)


