"""Saliency: how much each input token supports a prediction (LIT's gradient and integrated-gradient salience).

    s = saliency(model, tok, "The river [MASK] was muddy after the rain.", target="bank")
    s.tokens, s.scores        # one score per token: its share of log P("bank" at the [MASK])
    s.delta                   # integrated gradients' completeness gap (shrinks as `steps` grows)

Attention weights say where a head *looks*; they do not say what *matters* for the output (Jain & Wallace
2019; Wiegreffe & Pinter 2019). Attribution asks the second question directly: how does the prediction
f change with each token's input vector? Three answers, from cheapest to soundest:

- `"gradient"`: ‖∂f/∂e_t‖₂, how sensitive f is to token t's input vector e_t (Simonyan et al. 2014).
  Unsigned, and it says nothing about the token actually present.
- `"grad_x_input"`: ∂f/∂e_t · (e_t − b_t), summed over the hidden dimensions (Shrikumar et al. 2016, measured
  from the same baseline b as integrated gradients): signed, a first-order guess of what replacing the token
  by the baseline would do. The textbook ∂f/∂e_t · e_t is exactly 0 in BERT: a LayerNorm follows the sum, it
  is blind to the scale of each e_t, so the gradient is orthogonal to e_t (Euler's theorem).
- `"integrated_gradients"` (Sundararajan et al. 2017): the gradient averaged along the straight path from
  a baseline input b to the real input x, times (x − b). Its scores add up to f(x) − f(b) ("completeness"),
  up to the error of approximating the path integral with `steps` points: that error is `delta`.

What is attributed: the input embedding sum (token + segment + position, before the LayerNorm), which is
where a token enters the network. The baseline (`baseline="pad"`, the default) is the same sequence with
every word replaced by [PAD]: [CLS], [SEP], [MASK], positions and segments stay, so the baseline asks the
same question ("what goes at the [MASK]?") with no words to go on, and the scores measure what the *words*
contribute. `baseline="zero"` (all-zero embeddings, the textbook choice) is degenerate in BERT for the same
LayerNorm reason: along the path αx the normalised input does not change until α is tiny, so nearly all of
f(x) − f(0) happens in a sliver near 0 that the `steps` points miss, and `delta` stays large. It is kept as
an option so the learner can see that.

f is log P(target) at the single [MASK] for a masked-LM model, and the chosen label's logit for a
sequence classifier.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..model.heads import BertForMaskedLM, BertForPreTraining, BertForSequenceClassification
from . import _encoder

METHODS = ("integrated_gradients", "gradient", "grad_x_input")
BASELINES = ("pad", "zero")
CHUNK = 32   # interpolation points per forward pass: memory stays flat however many `steps`


@dataclass
class Saliency:
    """One score per token (`scores`, shape (T,)) for the prediction `target`.

    `f_input` is f at the real input; for integrated gradients `f_baseline` is f at the baseline and
    `delta = |scores.sum() − (f_input − f_baseline)|`, the completeness gap (0.0 for the other methods).
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


def _objective(model, tok, enc, target):
    """(f(sequence_output_or_logits) → (B,), target name, mask position) for this model and target."""
    if isinstance(model, (BertForPreTraining, BertForMaskedLM)):
        masks = [i for i, t in enumerate(enc.input_ids) if t == tok.mask_id]
        if len(masks) != 1:
            raise ValueError(f"saliency on a masked-LM model needs exactly one [MASK] in the text, found "
                             f"{len(masks)}: e.g. 'The river [MASK] was muddy.'")
        pos = masks[0]
        head = model.cls.predictions
        if target is not None:
            if not isinstance(target, str) or not target.strip():
                raise ValueError(f"target must be a word (str) for a masked-LM model, got {target!r}")
            pieces = tok.tokenize(target.strip())
            ids = [tok.token_to_id(p) for p in pieces]
            if len(ids) != 1:
                pieces = " ".join(pieces)
                raise ValueError(f"target {target!r} is {len(ids)} WordPieces ({pieces}) in this vocabulary; the "
                                 "[MASK] predicts one: pick a word that is a single token")
            tid = ids[0]

        def f(hidden):                                                   # hidden: (B, T, H)
            return head(hidden[:, pos]).float().log_softmax(-1)[:, tid]  # (B,)

        if target is None:
            with torch.no_grad():
                hidden = model.bert(**_tensors(enc, model)).last_hidden_state
                tid = int(head(hidden[:, pos]).argmax(-1))
        return f, tok.id_to_token(tid), pos, "hidden"
    if isinstance(model, BertForSequenceClassification):
        n = model.classifier.out_features
        if target is not None and (isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < n):
            raise ValueError(f"target must be a label index 0 … {n - 1} for this classifier, got {target!r}")
        if target is None:
            with torch.no_grad():
                target = int(model(**_tensors(enc, model)).logits.argmax(-1))
        label = target

        def f(logits):                                                   # logits: (B, labels)
            return logits[:, label].float()

        return f, str(label), None, "logits"
    raise ValueError(f"saliency needs a model with a masked-LM head (bertlab.load('bertlab-mini')) or a "
                     f"BertForSequenceClassification, got {type(model).__name__}")


def _tensors(enc, model) -> dict[str, torch.Tensor]:
    device = next(model.parameters()).device
    return {k: v.to(device) for k, v in enc.to_tensors().items()}


def saliency(model, tokenizer, text: str, target=None, method: str = "integrated_gradients", steps: int = 50,
             baseline: str = "pad") -> Saliency:
    """How much each token of `text` supports `target` (see the module docstring for the three methods)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be 'pad' (words replaced by [PAD]) or 'zero', got {baseline!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int (16 is quick, 50 usual, 200 precise), got {steps!r}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty str, got {text!r}")
    bert = _encoder(model)
    enc = tokenizer(text)
    if len(enc.input_ids) > bert.config.max_position_embeddings:
        raise ValueError(f"{len(enc.input_ids)} tokens is more than the model's "
                         f"{bert.config.max_position_embeddings} positions: shorten the text")
    modes = [(m, m.training) for m in model.modules()]
    model.eval()                                              # no dropout: the same f at every point
    try:
        f, name, pos, reads = _objective(model, tokenizer, enc, target)
        inputs = _tensors(enc, model)
        with torch.no_grad():                                 # e = token + segment + position, before LayerNorm
            _, cache = bert.run_with_cache(**inputs, names="embeddings.hook_sum")
        x = cache["embeddings.hook_sum"].float()                                          # (1, T, H)
        if baseline == "pad":
            ids = inputs["input_ids"].clone()
            ids[~torch.isin(ids, torch.tensor(sorted(tokenizer.special_ids), device=ids.device))] = tokenizer.pad_id
            with torch.no_grad():
                _, cache = bert.run_with_cache(**{**inputs, "input_ids": ids}, names="embeddings.hook_sum")
            b = cache["embeddings.hook_sum"].float()
        else:
            b = torch.zeros_like(x)

        def run(e: torch.Tensor) -> torch.Tensor:            # e: (B, T, H) replaces the embedding sum → f: (B,)
            B = e.shape[0]
            batch = {k: v.expand(B, -1) for k, v in inputs.items()}
            with bert.hooks([("embeddings.hook_sum", lambda a, _: e.to(a.dtype))]):
                return f(bert(**batch).last_hidden_state if reads == "hidden" else model(**batch).logits)

        if method == "integrated_gradients":
            alphas = (torch.arange(steps, dtype=torch.float32) + 0.5) / steps     # midpoint rule on [0, 1]
            total = torch.zeros_like(x)
            for chunk in alphas.split(CHUNK):
                path = (b + chunk.view(-1, 1, 1).to(x.device) * (x - b)).requires_grad_(True)  # (n, T, H)
                (grad,) = torch.autograd.grad(run(path).sum(), path)
                total += grad.sum(0, keepdim=True)
            scores = ((x - b) * total / steps).sum(-1)[0]                                      # (T,)
            with torch.no_grad():
                f_x, f_b = float(run(x)), float(run(b))
            delta = abs(float(scores.sum()) - (f_x - f_b))
            return Saliency(list(enc.tokens), scores.detach().cpu(), delta, method, name, f_x, f_b, steps,
                            baseline, pos)
        e = x.clone().requires_grad_(True)
        value = run(e)
        (grad,) = torch.autograd.grad(value.sum(), e)
        scores = grad.norm(dim=-1)[0] if method == "gradient" else (grad * (x - b)).sum(-1)[0]   # (T,)
        return Saliency(list(enc.tokens), scores.detach().cpu(), 0.0, method, name, float(value.detach()), None,
                        None, baseline if method == "grad_x_input" else None, pos)
    finally:
        for m, mode in modes:
            m.training = mode
