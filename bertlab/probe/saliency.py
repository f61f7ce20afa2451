"""Saliency: how much each input token supports a prediction (LIT's gradient and integrated-gradient salience).

    s = saliency(model, tokenizer, "The river [MASK] was muddy after the rain.", target="bank")
    s.tokens, s.scores        # one score per token: its share of log P("bank" at the [MASK])
    s.delta                   # integrated gradients' completeness gap (shrinks as `steps` grows)

Attention weights say where a head *looks*; they do not say what *matters* for the output (Jain & Wallace
2019; Wiegreffe & Pinter 2019). Attribution asks the second question directly: how does the prediction
f change with each token's input vector? Three answers, from cheapest to soundest:

- `"gradient"`: ‖∂f/∂e_t‖₂, the Euclidean norm over the hidden dimensions of the gradient of f with respect
  to token t's input vector e_t (Simonyan et al. 2014; Li et al. 2016 for text): how sensitive f is to that
  token. Unsigned, and it says nothing about the token actually present.
- `"grad_x_input"`: ∂f/∂e_t · (e_t − b_t), summed over the hidden dimensions (Shrikumar et al. 2016, measured
  from the same baseline b as integrated gradients): signed, a first-order guess of what replacing the token
  by the baseline would do. The textbook ∂f/∂e_t · e_t (what `baseline="zero"` gives) is exactly 0 in BERT: a
  LayerNorm follows the sum and is blind to the scale of each e_t, so the gradient is orthogonal to e_t
  (Euler's theorem for a scale-invariant function).
- `"integrated_gradients"` (Sundararajan, Taly & Yan 2017, "Axiomatic Attribution for Deep Networks"): the
  gradient averaged along the straight path from a baseline input b to the real input x, times (x − b). Its
  scores add up to f(x) − f(b) ("completeness"), up to the error of approximating the path integral with
  `steps` points (the midpoint rule, error O(1/steps²)): that error is `delta`.

What is attributed: the input embedding sum (token + segment + position, before the LayerNorm; the hook
point `embeddings.hook_sum`), which is where a token enters the network. The baseline (`baseline="pad"`,
the default) is the same sequence with every word replaced by [PAD]: [CLS], [SEP], [MASK], positions and
segments stay, so the baseline asks the same question ("what goes at the [MASK]?") with no words to go on,
x − b is non-zero only at the words, and the scores measure what the *words* contribute. `baseline="zero"`
(all-zero embeddings, the textbook choice for images) is degenerate in BERT for the same LayerNorm reason:
along the path αx the normalised input is the same for every α > 0, so f is flat, every gradient is
orthogonal to x and every score is 0; all of f(x) − f(0) is a jump at α = 0 (where LayerNorm's eps takes
over) that no number of `steps` sees, so `delta` is the whole gap. It is kept so a learner can see that.

f is log P(target) at the single [MASK] for a masked-LM model (log-probability, not the logit: the
softmax's competition with every other word is part of the prediction), and the chosen label's logit for a
sequence classifier. The interpolation points run as batches of `CHUNK`, so integrated gradients with 16
steps is one forward and one backward pass of 18 rows: the 16 points, and x and b themselves for f(x) and f(b).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from ..model.heads import BertForSequenceClassification
from .running import base_model, has_mlm_head, max_length, mlm_head

METHODS = ("integrated_gradients", "gradient", "grad_x_input")
BASELINES = ("pad", "zero")
CHUNK = 32   # interpolation points per forward pass: memory stays flat however many `steps`


@dataclass
class Saliency:
    """One score per token (`scores`, shape (T,), beside `tokens`) for the prediction `target`.

    `target` is the word at the [MASK] (a masked LM) or the label index as a str (a classifier), and
    `mask_position` the [MASK]'s index in `tokens` (None for a classifier). `f_input` is f at the real input;
    for integrated gradients `f_baseline` is f at the baseline and `delta = |scores.sum() − (f_input −
    f_baseline)|`, the completeness gap (0.0 for the other methods, which promise no such sum).
    """
    tokens: list[str]
    scores: torch.Tensor
    delta: float
    method: str
    target: str
    f_input: float
    f_baseline: float | None = None
    steps: int | None = None
    baseline: str | None = None
    mask_position: int | None = None


def _target_id(tokenizer, target) -> int:
    """The vocabulary id of a one-piece target word, or a ValueError that says why it cannot be one."""
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"target must be a word (str) for a masked-LM model, got {target!r}")
    pieces = tokenizer.tokenize(target.strip())
    if len(pieces) != 1:
        raise ValueError(f"target {target!r} is {len(pieces)} WordPieces ({' '.join(pieces)}) in this vocabulary; "
                         "the [MASK] predicts one: pick a word that is a single token")
    if pieces[0] == "[UNK]":
        raise ValueError(f"target {target!r} is not in this vocabulary (it tokenizes to [UNK]): pick another word")
    return tokenizer.token_to_id(pieces[0])


def _readout(model, tokenizer, enc, target):
    """(readout, target id or None, mask position): readout maps the encoder's output to the scores f picks
    from, (B, V) log-probabilities at the [MASK] or (B, labels) logits. Checks the request; runs nothing."""
    if has_mlm_head(model):
        masks = [i for i, t in enumerate(enc.input_ids) if t == tokenizer.mask_id]
        if len(masks) != 1:
            raise ValueError(f"saliency on a masked-LM model needs exactly one [MASK] in the text, found "
                             f"{len(masks)}: e.g. 'The river [MASK] was muddy.'")
        pos, head = masks[0], mlm_head(model)
        tid = None if target is None else _target_id(tokenizer, target)

        def readout(batch, bert):
            hidden = bert(**batch).last_hidden_state                        # (B, T, H)
            return head(hidden[:, pos]).float().log_softmax(-1)             # (B, V)

        return readout, tid, pos
    if isinstance(model, BertForSequenceClassification):
        n = model.classifier.out_features
        if target is not None and (isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < n):
            raise ValueError(f"target must be a label index 0 … {n - 1} for this classifier, got {target!r}")

        def readout(batch, bert):
            return model(**batch).logits.float()                            # (B, labels)

        return readout, target, None
    raise ValueError(f"saliency needs a model with a masked-LM head (bertlab.load('bertlab-mini')) or a "
                     f"BertForSequenceClassification, got {type(model).__name__}")


def _check(method: str, steps, baseline: str, text) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be 'pad' (words replaced by [PAD]) or 'zero', got {baseline!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int (16 is quick, 50 usual, 200 precise), got {steps!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str, got {text!r}")


@contextlib.contextmanager
def _eval(model):
    """Eval mode (no dropout: the same f at every point) for the body; each module's own mode afterwards."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


class _Input:
    """What every method needs for one text: the encoding, f's readout, the input x and the baseline b
    (embedding sums, (1, T, H)), and `scores_at(e)`, f's scores with e in place of the embedding sum."""

    def __init__(self, model, tokenizer, text: str, target, baseline: str):
        bert = base_model(model)
        enc = tokenizer(text)
        limit = max_length(model, tokenizer)
        if len(enc.input_ids) > limit:
            raise ValueError(f"{len(enc.input_ids)} tokens is more than the {limit} this model takes: shorten the text")
        self.readout, self.tid, self.pos = _readout(model, tokenizer, enc, target)
        self.bert, self.enc, self.tokenizer, self.baseline = bert, enc, tokenizer, baseline
        self.inputs = {k: v.to(bert.device) for k, v in enc.to_tensors().items()}        # each (1, T)
        with torch.no_grad(), _eval(model):                   # e = token + segment + position, before LayerNorm
            ids, types = self.inputs["input_ids"], self.inputs["token_type_ids"]
            self.x = bert.embeddings(ids, types).sum.float()                               # (1, T, H)
            if baseline == "pad":
                keep = torch.tensor(sorted({tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id}), device=ids.device)
                blank = ids.masked_fill(~torch.isin(ids, keep), tokenizer.pad_id)
                self.b = bert.embeddings(blank, types).sum.float()                         # (1, T, H)
            else:
                self.b = torch.zeros_like(self.x)

    def scores_at(self, e: torch.Tensor) -> torch.Tensor:   # e: (n, T, H) replaces the embedding sum → (n, V)
        batch = {k: v.expand(e.shape[0], -1) for k, v in self.inputs.items()}
        with self.bert.hooks([("embeddings.hook_sum", lambda a, _: e.to(a.dtype))]):
            return self.readout(batch, self.bert)


class IntegratedGradients:
    """Integrated gradients for one text, ready for any target: `IntegratedGradients(model, tok, text)(target)`.

    The forward pass along the path does not depend on the target (only which output is differentiated
    does), so with up to `CHUNK` steps it runs once, here, and is kept: each target then costs one backward
    pass. That is what lets SaliencyExplorer answer a new target word in half the time. The real input x and
    the baseline b ride along in the same batch as rows 0 and 1, for f at both ends. With more steps than
    `CHUNK` each call runs the path in chunks (memory stays flat) and nothing is kept.
    """

    def __init__(self, model, tokenizer, text: str, steps: int = 50, baseline: str = "pad"):
        _check("integrated_gradients", steps, baseline, text)
        self.model, self.steps = model, steps
        self._in = _Input(model, tokenizer, text, None, baseline)
        x, b = self._in.x, self._in.b
        self._alphas = (torch.arange(steps, dtype=torch.float32, device=x.device) + 0.5) / steps   # midpoints
        self._kept = None
        if steps <= CHUNK:
            with torch.enable_grad(), _eval(model):           # works inside a caller's torch.no_grad() too
                path = (b + self._alphas.view(-1, 1, 1) * (x - b)).requires_grad_(True)      # (n, T, H)
                out = self._in.scores_at(torch.cat([x, b, path]))                             # (2 + n, V)
            self._kept = (path, out)

    def __call__(self, target=None) -> Saliency:
        """The attribution of `target` (a one-piece word for a masked LM, a label index for a classifier; None:
        the model's top prediction at x)."""
        inp = self._in
        _, tid, _ = _readout(self.model, inp.tokenizer, inp.enc, target)    # the same checks as saliency()
        x, b, total = inp.x, inp.b, torch.zeros_like(inp.x)
        with torch.enable_grad(), _eval(self.model):
            if self._kept is not None:
                path, out = self._kept
                tid = int(out[0].argmax()) if tid is None else tid
                (grad,) = torch.autograd.grad(out[2:, tid].sum(), path, retain_graph=True)
                total += grad.sum(0, keepdim=True)
            else:
                out = None
                for chunk in self._alphas.split(CHUNK):
                    path = (b + chunk.view(-1, 1, 1) * (x - b)).requires_grad_(True)           # (n, T, H)
                    rows = path if out is not None else torch.cat([x, b, path])
                    scores = inp.scores_at(rows)
                    if out is None:
                        out = scores[:2].detach()
                        tid = int(out[0].argmax()) if tid is None else tid
                        scores = scores[2:]
                    (grad,) = torch.autograd.grad(scores[:, tid].sum(), path)
                    total += grad.sum(0, keepdim=True)
        f_x, f_b = float(out[0, tid].detach()), float(out[1, tid].detach())
        scores = ((x - b) * total / self.steps).sum(-1)[0]                                     # (T,)
        delta = abs(float(scores.sum()) - (f_x - f_b))
        return Saliency(list(inp.enc.tokens), scores.detach().cpu(), delta, "integrated_gradients",
                        _name(inp.tokenizer, tid, inp.pos), f_x, f_b, self.steps, inp.baseline, inp.pos)


def saliency(model, tokenizer, text: str, target=None, method: str = "integrated_gradients", steps: int = 50,
             baseline: str = "pad") -> Saliency:
    """How much each token of `text` supports `target` (see the module docstring for the three methods).

    `target`: a word (one WordPiece) for a masked-LM model, a label index for a classifier; None takes the
    model's own top prediction. `steps`: integrated gradients' interpolation points (16 quick, 50 usual,
    200 precise). `baseline`: "pad" (words replaced by [PAD], the default) or "zero". The model runs in
    eval mode; every module's mode comes back afterwards and no parameter gets a `.grad`.
    """
    _check(method, steps, baseline, text)
    if method == "integrated_gradients":
        _readout(model, tokenizer, tokenizer(text), target)              # check the request before the work
        return IntegratedGradients(model, tokenizer, text, steps, baseline)(target)
    inp = _Input(model, tokenizer, text, target, baseline)
    tid, x, b = inp.tid, inp.x, inp.b
    with torch.enable_grad(), _eval(model):
        e = x.clone().requires_grad_(True)
        out = inp.scores_at(e)                                                                  # (1, V)
        tid = int(out[0].argmax()) if tid is None else tid
        (grad,) = torch.autograd.grad(out[0, tid], e)                                           # (1, T, H)
    if method == "gradient":
        scores = grad.norm(dim=-1)[0]                                                           # (T,) L2 over H
    else:
        scores = (grad * (x - b)).sum(-1)[0]                                                    # (T,)
    return Saliency(list(inp.enc.tokens), scores.detach().cpu(), 0.0, method, _name(tokenizer, tid, inp.pos),
                    float(out[0, tid].detach()), None, None, baseline if method == "grad_x_input" else None, inp.pos)


def _name(tokenizer, tid: int, pos: int | None) -> str:
    """The target as shown: the word for a masked LM, the label index for a classifier."""
    return tokenizer.id_to_token(tid) if pos is not None else str(tid)
