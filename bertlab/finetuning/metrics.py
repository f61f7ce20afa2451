"""Scoring a fine-tuned head: accuracy, entity F1, and SQuAD 2.0's exact match with the no-answer rule.

The no-answer rule is the paper's, written once here for every caller (the study, notebook 08, the CLI):

    answer the best span (i, j) when  ŝ_ij > s_null + τ,  else say "no answer"

where s_null = S·h[CLS] + E·h[CLS] and ŝ_ij = S·h_i + E·h_j is the best span inside the passage with
i ≤ j < i + max_answer. τ is chosen on the validation set (`choose_tau`), never on test.
"""

from __future__ import annotations

import math

import torch

from .tasks import IGNORE, encode

MAX_ANSWER = 8        # longest answer span, in tokens


def entity_f1(predicted: torch.Tensor, gold: torch.Tensor) -> float:
    """F1 over entity words (any tag but 0 = O), per word: a hit is an entity word tagged with its own tag."""
    hits = ((predicted == gold) & (gold > 0)).sum().item()
    return 2 * hits / max(1, (predicted > 0).sum().item() + (gold > 0).sum().item())


@torch.no_grad()
def qa_scores(model, tokenizer, records, batch_size: int = 32, max_answer: int = MAX_ANSWER) -> list[tuple]:
    """Per question: (best span (i, j) inside the passage, its score ŝ_ij, the null score s_null, the gold span)."""
    out = []
    for i in range(0, len(records), batch_size):
        batch = encode("qa", records[i:i + batch_size], tokenizer)
        gold = list(zip(batch.pop("start_positions").tolist(), batch.pop("end_positions").tolist()))
        encodings = batch.pop("encodings")
        o = model(**{k: v.to(model.device) for k, v in batch.items()})
        for b, enc in enumerate(encodings):
            T = len(enc)
            start, end = o.start_logits[b, :T].float().cpu(), o.end_logits[b, :T].float().cpu()
            in_passage = torch.tensor([s == 1 for s in enc.sequence_ids])
            score = (start[:, None] + end[None, :]).masked_fill(~(in_passage[:, None] & in_passage[None, :]), -1e9)
            allowed = torch.ones(T, T, dtype=torch.bool).triu() & ~torch.ones(T, T, dtype=torch.bool).triu(max_answer)
            score = score.masked_fill(~allowed, -1e9)                                  # (T, T): i ≤ j < i + max
            s, e = divmod(int(score.argmax()), T)
            out.append(((s, e), float(score[s, e]), float(start[0] + end[0]), gold[b]))
    return out


def qa_exact_match(scored, tau: float) -> float:
    """Exact match under the rule ŝ_ij > s_null + τ: the gold span, or "no answer" when there is none."""
    right = 0
    for span, best, null, gold in scored:
        said = span if best > null + tau else (0, 0)
        right += said == gold
    return right / len(scored)


def choose_tau(scored) -> float:
    """The τ with the best exact match on these (validation) questions, as SQuAD 2.0's evaluation picks it.

    Only the margins ŝ_ij − s_null matter, so the candidates are the margins themselves (τ = m answers every
    question whose margin is above m) and ±∞ (never / always answer); ties go to the τ nearest 0.
    """
    candidates = [math.inf, -math.inf] + sorted({best - null + 1e-6 for _, best, null, _ in scored})
    return max(candidates, key=lambda t: (qa_exact_match(scored, t), -abs(t) if math.isfinite(t) else -1e9))


@torch.no_grad()
def evaluate_task(model, tokenizer, records, *, task: str, tau: float = 0.0, names: list | None = None,
                  batch_size: int = 32) -> dict:
    """Score a fine-tuned head on records of `task`: {"accuracy"} (classify, choice), {"entity_f1"} (tag),
    {"exact_match", "tau"} (qa; `tau` is the no-answer threshold, 0 unless chosen on validation).

    `names` maps string labels to ids, as `FineTuneResult.labels` holds them. The model is put in eval mode
    (and back as it was). Checked first (checks.py): the records, that `model` is the head `task` is scored
    with and has an output for each of their labels, and that each fits the model's positions.
    """
    from . import checks
    checks.check_records(task, records, "records")
    checks.check_head(task, model, records, names)
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or math.isnan(tau):
        raise ValueError(f"tau must be a number (the no-answer threshold, e.g. result.tau; ±inf: never / always "
                         f"answer), got {tau!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
    checks.check_tokenizer(tokenizer)
    checks.check_encodable(task, records, tokenizer, model.config.max_position_embeddings, "records")
    was_training = model.training
    model.eval()
    try:
        if task == "qa":
            return {"exact_match": qa_exact_match(qa_scores(model, tokenizer, records, batch_size), tau), "tau": tau}
        predicted, gold = [], []
        for i in range(0, len(records), batch_size):
            batch = encode(task, records[i:i + batch_size], tokenizer, names)
            labels = batch.pop("labels")
            logits = model(**{k: v.to(model.device) for k, v in batch.items()}).logits.cpu()
            if task == "tag":
                keep = labels != IGNORE
                predicted.append(logits.argmax(-1)[keep]), gold.append(labels[keep])
            else:
                predicted.append(logits.argmax(-1)), gold.append(labels)
        predicted, gold = torch.cat(predicted), torch.cat(gold)
        if task == "tag":
            return {"entity_f1": entity_f1(predicted, gold)}
        return {"accuracy": (predicted == gold).float().mean().item()}
    finally:
        model.train(was_training)
