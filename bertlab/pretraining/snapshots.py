"""Snapshots: what a model being pre-trained makes of one fixed sentence, recorded every N steps.

    model, tok = pretrain("corpus/", "runs/tiny", steps=2000, snapshot_every=100,
                          snapshot_text="The river [MASK] was muddy after the rain.")
    shots = read_snapshots("runs/tiny")           # one Snapshot per recorded step, step 0 first
    shots[-1].guesses[0][:3]                      # what the finished model guesses at the [MASK]

The loss curve says *that* a model learns; snapshots show *what* it learns, and in which order: when the
[MASK] guesses turn from frequent words ("the", ".") into the word the sentence needs, when the heads
stop looking everywhere and settle into patterns (the previous token, [SEP], themselves), and how
similar the sentence's token vectors become (`intra_similarity`, Ethayarajh 2019's intra-sentence
similarity: a vector for every token that points the same way is a sign of collapse; contextual models
keep them apart). Notebook 06 replays them with a slider.

A snapshot is taken in eval mode without gradients and draws no random numbers, so recording snapshots
changes nothing in the run: the losses are identical with and without them (tested). Each is one line of
`out/snapshots.jsonl`; resume drops the lines after the step it restarts from, as it does for metrics.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import files

FILE = "snapshots.jsonl"
DEFAULT_TEXT = "The river [MASK] was muddy after the rain."
TOP_K = 5


@dataclass
class Snapshot:
    """The model at one step, seen through one sentence.

    `attentions[l][h][i][j]`: how much token i attends to token j in head h of layer l (softmax rows);
    `guesses[m]`: the top-5 (token, probability) pairs at the m-th [MASK];
    `intra_similarity[l]`: mean cosine between each token vector and the sentence's mean vector, after the
    embeddings (l = 0) and after each layer (special tokens excluded).
    """
    step: int
    text: str
    tokens: list[str]
    attentions: list[list[list[list[float]]]]
    guesses: list[list[tuple[str, float]]]
    intra_similarity: list[float]

    @property
    def attention(self) -> torch.Tensor:
        """The attention weights as one tensor (layers, heads, T, T)."""
        return torch.tensor(self.attentions)


def check_text(text, tokenizer, max_len: int) -> None:
    """Fail before training, not at the first snapshot, when the sentence cannot be recorded."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"snapshot_text must be a non-empty sentence, got {text!r}")
    n = len(tokenizer(text).input_ids)
    if n > max_len:
        raise ValueError(f"snapshot_text is {n} tokens long with [CLS] and [SEP], more than max_len {max_len}: "
                         "use a shorter sentence")


def take(model, tokenizer, text: str, step: int) -> Snapshot:
    """Run `text` through `model` (a BertForPreTraining) once and record attention, guesses and similarity."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            enc = tokenizer(text)
            device = next(model.parameters()).device
            ids = torch.tensor([enc.input_ids], device=device)                       # (1, T)
            out = model.bert(ids, torch.tensor([enc.token_type_ids], device=device),
                             output_attentions=True, output_hidden_states=True)
            masks = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
            guesses = []
            if masks:
                probs = model.cls.predictions(out.last_hidden_state[0, masks]).float().softmax(-1)  # (M, V)
                probs = probs[:, :tokenizer.vocab_size]      # an --init model's ids past the tokenizer's: no token
                p, top = probs.topk(min(TOP_K, probs.shape[-1]), dim=-1)
                guesses = [[(tokenizer.id_to_token(int(i)), round(float(q), 4)) for q, i in zip(pr, ir)]
                           for pr, ir in zip(p.cpu(), top.cpu())]
            words = [i for i, t in enumerate(enc.input_ids) if t not in tokenizer.special_ids]
            similarity = []
            for h in out.hidden_states:                                              # each (1, T, H)
                v = h[0, words].float()                                              # (W, H)
                similarity.append(round(float(F.cosine_similarity(v, v.mean(0, keepdim=True)).mean()), 4))
            attentions = torch.stack(out.attentions)[:, 0].float().cpu()            # (L, heads, T, T)
    finally:
        model.train(was_training)
    return Snapshot(step, text, list(enc.tokens), attentions.round(decimals=4).tolist(), guesses, similarity)


def append(out: Path, snapshot: Snapshot) -> None:
    files.append_line(Path(out) / FILE, json.dumps(asdict(snapshot)), f"the run's {FILE}")   # never through a link


def read_snapshots(out) -> list[Snapshot]:
    """Every snapshot a run recorded, in step order (a last line cut short by a kill is skipped)."""
    path = Path(out) / FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: pre-train with snapshot_every=N (the command line's "
                                "--snapshot-every N) to record snapshots")
    shots = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        d["guesses"] = [[tuple(g) for g in mask] for mask in d["guesses"]]
        shots.append(Snapshot(**d))
    return sorted(shots, key=lambda s: s.step)
