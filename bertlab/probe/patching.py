"""Activation patching: which activations *cause* a prediction, by moving them from one run into another.

    p = patch(model, tok, "He took his money to the [MASK] this morning.", "He took his boat to the [MASK] this morning.")
    p.target            # 'bank': the clean run's top guess (read it first: the metric is log P of this word)
    p.effect            # (layers + 1, T): how much of the clean prediction each (layer, position) restores
    p.top(3)            # the three cells that matter most, with their labels

Attention, rollout, saliency and probes are correlations: they say where a head looks or what a layer
encodes, not whether the model *uses* it. An intervention answers that. Run the model twice, on a clean
input and on a corrupted one that changes the prediction (a minimal pair: one word differs), then run the
corrupted input again with one activation taken from the clean run. If the prediction comes back, that
activation carried what the corruption removed (Vig et al. 2020, "causal mediation"; Meng et al. 2022,
"causal tracing"; Heimersheim & Nanda 2024 on how to read the results). This is *denoising*. *Noising* is
the reverse: run the clean input with one activation from the corrupted run, and see what breaks.

Both are reported on one scale: `effect` = (metric of the patched run − corrupt metric) / (clean metric −
corrupt metric), so 0 is the corrupt run's prediction and 1 the clean run's, whichever direction patched.
Denoising asks "is this enough to restore it?" (a high effect: yes); noising asks "is this needed?" (a low
effect: removing it breaks the clean prediction). The raw metric of every patched run is kept beside the
normalised one (`patched`), since a ratio hides how large the gap was.

What can be patched (`site`):
- `"resid"`: the residual stream, one position at a time: row 0 the embedding output, row l the output of
  layer l (hidden_states[l]). Shape (layers + 1, T).
- `"attn"`, `"mlp"`: what each sublayer adds to the stream, before its add & norm, one position at a
  time. Shape (layers, T).
- `"head"`: one head's output z at every position (before the output projection). Shape (layers, heads).

The metric is log P(target) at the text's single [MASK] for a masked-LM model (target: a one-piece word,
by default the clean run's top guess), or the NSP head's IsNext logit minus its NotNext logit when clean and
corrupt are sentence pairs. `metric=` takes any other function of the encoder's output (MiniLM has neither
head): `metric(out)` receives the `BertOutput` of a batch of B runs and returns B numbers.

Every patched run of a sweep goes into one batch (in chunks of `ROWS_PER_PASS`): each row is the base input
with a different cell replaced, so a sweep over every (layer, position) of a 16-token sentence is one
forward pass of ~100 rows, not 100 passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..hooks import act_name
from ..model.bert import BertOutput
from .running import base_model, has_mlm_head, has_nsp_head, inference, max_length, mlm_head

__all__ = ["patch", "Patching", "SITES", "DIRECTIONS"]

SITES = ("resid", "attn", "mlp", "head")
DIRECTIONS = ("denoise", "noise")
ROWS_PER_PASS = 256   # patched runs per forward pass: memory stays flat for long sentences

Metric = Callable[[BertOutput], torch.Tensor]


@dataclass
class Patching:
    """The result of a patching sweep. `effect` and `patched` share a shape: see `site`.

    `effect[r, c]` = (patched[r, c] − corrupt_metric) / (clean_metric − corrupt_metric): 0 is the corrupt
    run, 1 the clean run. `rows` and `columns` label the axes (columns: the clean token, with the corrupt
    one after a slash where they differ, e.g. "river/money"; or the head index).
    """
    effect: torch.Tensor
    patched: torch.Tensor
    clean_metric: float
    corrupt_metric: float
    site: str
    direction: str
    metric: str
    target: str | None
    tokens: list[str]
    corrupt_tokens: list[str]
    rows: list[str]
    columns: list[str]

    def top(self, k: int = 5, by_size: bool = False) -> list[tuple[str, str, float]]:
        """The `k` cells with the largest effect, as (row label, column label, effect), largest first.

        With `by_size=True` they are ranked by |effect| instead (a noising sweep's important cells have
        effects near 0 or below, so rank those by 1 − effect: `sorted(..., key=...)` on `effect` yourself).
        """
        flat = self.effect.flatten()
        order = (flat.abs() if by_size else flat).argsort(descending=True)[:k]
        n = self.effect.shape[1]
        return [(self.rows[i // n], self.columns[i % n], float(flat[i])) for i in order.tolist()]


# ---- inputs ---------------------------------------------------------------------------------------------

def _encode(tokenizer, text, name: str, limit: int):
    """One text or an (a, b) pair → (Encoding, is_pair), or a ValueError that says what to pass."""
    if isinstance(text, str):
        if not text.strip():
            raise ValueError(f"{name} is empty: pass a sentence (or an (a, b) pair of sentences)")
        enc, pair = tokenizer(text), False
    elif isinstance(text, (tuple, list)) and len(text) == 2 and all(isinstance(s, str) and s.strip() for s in text):
        enc, pair = tokenizer(text[0], text[1]), True
    else:
        raise ValueError(f"{name} must be a str or an (a, b) pair of non-empty str for next-sentence "
                         f"prediction, got {text!r}")
    if len(enc.input_ids) > limit:
        raise ValueError(f"{name} is {len(enc.input_ids)} tokens, more than the {limit} this model takes: "
                         "shorten it")
    return enc, pair


def _same_length(clean, corrupt) -> None:
    if len(clean.input_ids) != len(corrupt.input_ids):
        raise ValueError(
            "clean and corrupt must tokenize to the same number of tokens, so that every position of one run "
            f"has a partner in the other; clean has {len(clean.input_ids)}: {clean.tokens}, corrupt has "
            f"{len(corrupt.input_ids)}: {corrupt.tokens}. Swap in a word of the same number of WordPieces "
            "(or add/remove a word elsewhere to even them out)")


def _target_id(tokenizer, target: str) -> int:
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"target must be a word (str), got {target!r}")
    pieces = tokenizer.tokenize(target.strip())
    if len(pieces) != 1 or pieces[0] == "[UNK]":
        raise ValueError(f"target {target!r} is {' '.join(pieces)} in this vocabulary; the [MASK] predicts one "
                         "WordPiece: pick a word that is a single known token")
    return tokenizer.token_to_id(pieces[0])


def _metric(model, tokenizer, clean, corrupt, pair: bool, target, metric):
    """(metric function on a BertOutput → (B,), its name, the [MASK] position or None, target id or None)."""
    if metric is not None:
        if not callable(metric):
            raise ValueError(f"metric must be a function of the encoder's BertOutput returning one number per "
                             f"run, got {type(metric).__name__}")
        if target is not None:
            raise ValueError("target is for the built-in masked-LM metric; with metric= put the target inside "
                             "your function")
        return metric, getattr(metric, "__name__", "custom"), None, None
    if pair:
        if not has_nsp_head(model):
            raise ValueError(f"{type(model).__name__} has no next-sentence head, so a sentence pair has no "
                             "built-in metric: load bertlab-mini or bertlab-tiny, or pass metric=")
        if target is not None:
            raise ValueError("target is the word at a [MASK]; a sentence pair is scored by the NSP head "
                             "(IsNext − NotNext logit): drop target, or pass single texts with a [MASK]")
        nsp = model.cls.seq_relationship

        def is_next(out: BertOutput) -> torch.Tensor:
            logits = nsp(out.pooler_output).float()                     # (B, 2): 0 = IsNext, 1 = NotNext
            return logits[:, 0] - logits[:, 1]

        return is_next, "IsNext − NotNext logit", None, None
    if not has_mlm_head(model):
        raise ValueError(f"{type(model).__name__} has no masked-LM head, so there is no built-in metric: pass "
                         "metric=, a function of the encoder's BertOutput returning one number per run (e.g. "
                         "the cosine of a position's final vector to a reference), or load bertlab-mini")
    masks = [[i for i, t in enumerate(e.input_ids) if t == tokenizer.mask_id] for e in (clean, corrupt)]
    if len(masks[0]) != 1 or masks[0] != masks[1]:
        raise ValueError(f"the masked-LM metric needs exactly one [MASK], at the same position in both texts; "
                         f"clean has it at {masks[0]}, corrupt at {masks[1]} (tokens {clean.tokens} and "
                         f"{corrupt.tokens})")
    pos, head = masks[0][0], mlm_head(model)
    tid = None if target is None else _target_id(tokenizer, target)
    return head, "log P(target)", pos, tid


# ---- the sweep ------------------------------------------------------------------------------------------

def _cells(site: str, L: int, A: int, T: int) -> tuple[list[str], list[tuple[int, int]]]:
    """The hook point of each row and every (row, column) cell of the sweep."""
    if site == "resid":
        names = [act_name("normed")] + [act_name("resid_post", l) for l in range(L)]
    elif site == "attn":
        names = [act_name("attn_out", l) for l in range(L)]
    elif site == "mlp":
        names = [act_name("mlp_out", l) for l in range(L)]
    else:
        names = [act_name("z", l) for l in range(L)]
    width = A if site == "head" else T
    return names, [(r, c) for r in range(len(names)) for c in range(width)]


def _labels(site: str, L: int, A: int, clean_tokens, corrupt_tokens) -> tuple[list[str], list[str]]:
    if site == "resid":
        rows = ["embeddings"] + [f"layer {l}" for l in range(L)]
    else:
        rows = [f"layer {l}" + ("" if site == "head" else f" {site}") for l in range(L)]
    if site == "head":
        return rows, [f"head {h}" for h in range(A)]
    return rows, [a if a == b else f"{a}/{b}" for a, b in zip(clean_tokens, corrupt_tokens)]


def patch(model, tokenizer, clean, corrupt, target: str | None = None, site: str = "resid",
          direction: str = "denoise", metric: Metric | None = None) -> Patching:
    """Patch every cell of `site` from one run into the other and measure the metric (module docstring).

    `clean`, `corrupt`: texts that tokenize to the same length (a [MASK] at the same place for a masked
    LM), or (a, b) sentence pairs for the NSP head. `direction="denoise"` runs the corrupt input with one
    clean activation at a time; `"noise"` the clean input with one corrupt activation. The model's mode and
    weights are untouched, and every hook is removed afterwards, even after an error.
    """
    if site not in SITES:
        raise ValueError(f"site must be one of {', '.join(map(repr, SITES))}, got {site!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'denoise' (clean activations into the corrupt run) or 'noise' "
                         f"(corrupt into clean), got {direction!r}")
    bert = base_model(model)
    limit = max_length(model, tokenizer)
    clean_enc, pair = _encode(tokenizer, clean, "clean", limit)
    corrupt_enc, corrupt_pair = _encode(tokenizer, corrupt, "corrupt", limit)
    if pair != corrupt_pair:
        raise ValueError("clean and corrupt must both be single texts or both (a, b) pairs")
    _same_length(clean_enc, corrupt_enc)
    fn, metric_name, pos, tid = _metric(model, tokenizer, clean_enc, corrupt_enc, pair, target, metric)

    cfg = bert.config
    L, A, T = cfg.num_hidden_layers, cfg.num_attention_heads, len(clean_enc.input_ids)
    names, cells = _cells(site, L, A, T)
    inputs = [{k: v.to(bert.device) for k, v in e.to_tensors().items()} for e in (clean_enc, corrupt_enc)]
    both = {k: torch.cat([inputs[0][k], inputs[1][k]]) for k in inputs[0]}             # (2, T) each

    def score(out: BertOutput) -> torch.Tensor:                                         # → (B,)
        if pos is None:
            values = fn(out)
            if not isinstance(values, torch.Tensor) or values.numel() != out.last_hidden_state.shape[0]:
                shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
                raise ValueError(f"metric must return one number per run, a tensor of shape "
                                 f"({out.last_hidden_state.shape[0]},) for a batch of that many runs; got {shape}")
            return values.reshape(-1).float()
        return fn(out.last_hidden_state[:, pos]).float().log_softmax(-1)[:, tid]        # (B,)

    with inference(model):
        out, cache = bert.run_with_cache(**both, names=names)                           # clean row 0, corrupt row 1
        if pos is not None and tid is None:
            logits = fn(out.last_hidden_state[:1, pos])[0, :tokenizer.vocab_size]     # ids the tokenizer can spell
            tid = int(logits.argmax())                                                  # the clean run's top guess
        first = score(out)
        if abs(float(first[0] - first[1])) < 1e-6:
            raise ValueError(f"clean and corrupt give the same metric ({float(first[0]):.4g}), so there is no "
                             "difference for patching to explain: choose a corrupt text that changes the prediction")

        # every pass carries the two plain runs as rows 0 and 1 beside the patched rows: a row's numbers can
        # depend on the batch it is computed in (in the last bits), so each patched run is compared with the
        # plain runs of its own pass, and an unchanged cell reads exactly 0 (or 1), not 1e-5 off
        source, base = (0, 1) if direction == "denoise" else (1, 0)
        results, ends = [], None
        for start in range(0, len(cells), ROWS_PER_PASS):
            chunk = cells[start:start + ROWS_PER_PASS]
            n = len(chunk)
            batch = {k: torch.cat([v, v[base:base + 1].expand(n, -1)]) for k, v in both.items()}   # (2 + n, T)
            hooks = []
            for r, name in enumerate(names):
                rows = [2 + i for i, (rr, _) in enumerate(chunk) if rr == r]
                if not rows:
                    continue
                cols = torch.tensor([chunk[i - 2][1] for i in rows], device=bert.device)
                rows = torch.tensor(rows, device=bert.device)
                donor = cache[name][source]                   # (T, H), or (heads, T, Dh) for "head"

                def put(act, _name, rows=rows, cols=cols, donor=donor):
                    act = act.clone()
                    act[rows, cols] = donor[cols].to(act.dtype)   # row i gets the donor's position/head cols[i]
                    return act

                hooks.append((name, put))
            with bert.hooks(hooks):
                values = score(bert(**batch))
            if ends is None:
                ends = values[:2]
            results.append(values[2:] - values[base] + ends[base])   # on the first pass's scale
        patched = torch.cat(results).cpu()
        clean_m, corrupt_m = float(ends[0]), float(ends[1])

    shape = (len(names), A if site == "head" else T)
    patched = patched.view(shape)
    effect = (patched - corrupt_m) / (clean_m - corrupt_m)
    rows, columns = _labels(site, L, A, clean_enc.tokens, corrupt_enc.tokens)
    target_name = tokenizer.id_to_token(tid) if tid is not None else None
    return Patching(effect, patched, clean_m, corrupt_m, site, direction, metric_name, target_name,
                    list(clean_enc.tokens), list(corrupt_enc.tokens), rows, columns)
