"""Masked-language-model corruption: choose 15 % of the tokens, hide them, and keep the answers.

The paper's Cloze task, as Google's ``create_pretraining_data.py`` and HuggingFace's
``DataCollatorForLanguageModeling`` implement it:

1. **Choose** positions to predict. ``[CLS]``, ``[SEP]`` and ``[PAD]`` are never chosen (nor a ``[MASK]``
   already in the input); ``[UNK]`` may be, as in Google's code.
2. **Corrupt** each chosen token independently: 80 % become ``[MASK]``, 10 % a random token, 10 % stay as
   they are. The 10 % random / 10 % unchanged keep the model from learning "only [MASK] positions matter":
   it must keep a good representation of *every* token, because any of them might be a hidden target.
3. **Label** the chosen positions with the original id and every other position with -100, the
   ``ignore_index`` of ``torch.nn.functional.cross_entropy``, so the loss comes from the chosen tokens only.

``replace=(mask, random, keep)`` changes the split of step 2, for the paper's Appendix C.2 ablation. Its
Table 8 names the columns MASK, SAME, RND; in bertlab's order (MASK, RND, SAME) its six strategies are
``(0.8, 0.1, 0.1)`` (the default), ``(1, 0, 0)``, ``(0.8, 0.2, 0)``, ``(0.8, 0, 0.2)``, ``(0, 0.8, 0.2)`` and
``(0, 1, 0)``. The choice of positions and both coin flips are drawn the same way whatever the split, so
one generator state hides the same positions under every strategy and only their corruption differs.

Two ways to choose, because the two famous recipes differ:

- ``mode="dynamic"`` (HuggingFace's collator): every candidate token is chosen independently with
  probability 0.15, afresh for every batch, so the model sees a different masking of the same sentence
  each epoch (what RoBERTa calls dynamic masking: it is about *when* masks are drawn; RoBERTa's own code
  draws a count of about 15 % per sequence, not a coin per token). The count per sequence varies.
- ``mode="bert"`` (Google's original): exactly ``min(max_predictions, max(1, round(0.15 × n)))`` tokens per
  sequence, drawn without replacement. Google fixed this count because its TFRecords stored the masked
  positions in a fixed-size array of ``max_predictions_per_seq`` slots.

``whole_word=True`` is Google's later whole-word masking: the ``##`` pieces of a word are chosen together
("un ##aff ##able" is hidden as a unit), so the model cannot guess a piece from its siblings.
"""

from __future__ import annotations

import math
import weakref

import torch

from ..model.heads import IGNORE

__all__ = ["mask_tokens", "REPLACE_BERT"]

#: The paper's split of a chosen token's fate: (``[MASK]``, a random token, kept as it is).
REPLACE_BERT = (0.8, 0.1, 0.1)

_MODES = ("dynamic", "bert")

# Per-tokenizer tables, computed once: a vocabulary has ~30k ids, and a training loop calls mask_tokens on
# every batch. Weak keys, so a cached table dies with its tokenizer.
_continuation_tables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_random_pools: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _is_continuation(tokenizer) -> torch.Tensor:
    """A (vocab_size,) bool table: True where the id is a ``##`` piece that continues a word."""
    table = _continuation_tables.get(tokenizer)
    if table is None:
        pieces = [i for token, i in tokenizer.get_vocab().items() if token.startswith("##")]
        table = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)
        table[torch.tensor(pieces, dtype=torch.long)] = True
        _continuation_tables[tokenizer] = table
    return table


def _random_pool(tokenizer) -> torch.Tensor:
    """The ids a "random token" is drawn from: the whole vocabulary except the special tokens.

    Google draws from the whole vocabulary (``vocab_words[rng.randint(0, len(vocab_words) - 1)]``), so it can
    put a [CLS], [SEP] or [PAD] in the middle of a sentence; HuggingFace does the same. bertlab leaves the
    special tokens out: they carry structure, and a stray [SEP] teaches nothing about words.
    """
    pool = _random_pools.get(tokenizer)
    if pool is None:
        keep = torch.ones(tokenizer.vocab_size, dtype=torch.bool)
        keep[sorted(tokenizer.special_ids)] = False
        pool = keep.nonzero().squeeze(1)
        _random_pools[tokenizer] = pool
    return pool


def _check_replace(replace) -> tuple[float, float, float]:
    """``replace`` as three floats (mask, random, keep) that are shares of the chosen tokens, or a ValueError."""
    ok = isinstance(replace, (tuple, list)) and len(replace) == 3 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 for x in replace)
    if not ok or abs(sum(replace) - 1.0) > 1e-6:
        raise ValueError(
            f"replace must be three non-negative shares (mask, random, keep) that add up to 1, got {replace!r}: "
            "BERT uses (0.8, 0.1, 0.1); (1, 0, 0) always writes [MASK], (0, 1, 0) always a random token"
        )
    return tuple(float(x) for x in replace)


def _check_args(input_ids, probability, generator, mode, max_predictions) -> None:
    if not isinstance(input_ids, torch.Tensor):
        raise ValueError(f"input_ids must be a torch.Tensor, got {type(input_ids).__name__}: pass torch.tensor(ids)")
    if input_ids.dtype == torch.bool or input_ids.is_floating_point() or input_ids.is_complex():
        raise ValueError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}: pass a LongTensor")
    if input_ids.dim() not in (1, 2):
        raise ValueError(f"input_ids must have shape (T,) or (B, T), got {tuple(input_ids.shape)}")
    if not isinstance(probability, (int, float)) or not 0 < probability < 1:
        raise ValueError(f"probability must be between 0 and 1 (exclusive), got {probability!r}; BERT uses 0.15")
    if mode not in _MODES:
        raise ValueError(f"mode must be 'dynamic' (HuggingFace/RoBERTa) or 'bert' (Google's original), got {mode!r}")
    if isinstance(max_predictions, bool) or not isinstance(max_predictions, int) or max_predictions < 1:
        raise ValueError(
            f"max_predictions must be a positive int, got {max_predictions!r}; Google uses 20 for 128 tokens"
        )
    if generator is not None and generator.device.type != "cpu":
        raise ValueError(
            f"generator must be a CPU torch.Generator, got one on {generator.device}: masks are drawn on the CPU "
            "so that a seed gives the same masks on every device"
        )


def _words(candidates: torch.Tensor, continuation: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Number the words of each row: a candidate token that is not a ``##`` piece starts a new word.

    A ``##`` piece right after a non-candidate (say, after [CLS]) starts a word of its own.
    Returns ``word`` (B, T) with the row-local word index of each token (-1 off candidates) and the
    largest number of words in a row.
    """
    after_candidate = torch.zeros_like(candidates)
    after_candidate[:, 1:] = candidates[:, :-1]
    starts = candidates & ~(continuation & after_candidate)  # (B, T)
    word = starts.long().cumsum(dim=1) - 1  # (B, T)
    word = torch.where(candidates, word, -1)
    return word, int(starts.long().sum(dim=1).max().item()) if starts.numel() else 0


def _budget(n_candidates: torch.Tensor, probability: float, max_predictions: int) -> torch.Tensor:
    """Google's ``num_to_predict = min(max_predictions, max(1, round(n × p)))``, and 0 for an empty row.

    Google's n is ``len(tokens)``, which counts the [CLS] and two [SEP]s it can never choose; bertlab's n
    is the row's candidate tokens, so that 15 % means 15 % of what can be predicted (and padding, which
    Google's unpadded lists never had, does not count). Float64 and round-half-to-even make this equal
    Python's ``round(n * p)`` exactly.
    """
    wanted = torch.round(n_candidates.double() * probability).long().clamp(min=1, max=max_predictions)
    return torch.where(n_candidates > 0, wanted, torch.zeros_like(wanted))


def _choose_tokens(candidates, probability, generator, mode, max_predictions) -> torch.Tensor:
    """Choose single tokens: (B, T) bool."""
    B, T = candidates.shape
    scores = torch.rand(B, T, generator=generator)  # (B, T)
    if mode == "dynamic":
        return candidates & (scores < probability)
    # A uniform sample without replacement of k positions is "the k candidates with the smallest scores".
    budget = _budget(candidates.long().sum(dim=1), probability, max_predictions)  # (B,)
    scores = torch.where(candidates, scores, 2.0)  # non-candidates sort last
    order = scores.argsort(dim=1)  # (B, T): positions from first-chosen to last
    take = torch.arange(T).expand(B, T) < budget[:, None]  # (B, T) in rank order
    return torch.zeros_like(candidates).scatter(1, order, take)


def _choose_words(candidates, continuation, probability, generator, mode, max_predictions) -> torch.Tensor:
    """Choose whole words (a start piece and its ``##`` continuations): (B, T) bool."""
    B, T = candidates.shape
    word, n_words = _words(candidates, continuation)  # (B, T), int
    W = n_words + 1  # one spare column collects the non-candidate positions
    column = torch.where(word >= 0, word, torch.full_like(word, n_words))  # (B, T)
    length = torch.zeros(B, W, dtype=torch.long).scatter_add_(1, column, torch.ones_like(column))  # (B, W)
    length[:, n_words] = 0
    real = length > 0  # (B, W): the words that exist in each row
    scores = torch.rand(B, W, generator=generator)  # (B, W)

    if mode == "dynamic":
        chosen_word = real & (scores < probability)  # (B, W)
    else:
        # Google: shuffle the words, then walk through them adding each whole word unless it would push the
        # count past num_to_predict (then skip it and try the next). The walk is sequential, so loop over
        # rank positions, all rows at once.
        budget = _budget(candidates.long().sum(dim=1), probability, max_predictions)  # (B,)
        scores = torch.where(real, scores, 2.0)  # missing words sort last
        order = scores.argsort(dim=1)  # (B, W): words in shuffled order, missing ones last
        ranked_length = length.gather(1, order)  # (B, W)
        total = torch.zeros(B, dtype=torch.long)
        take = torch.zeros(B, W, dtype=torch.bool)
        for r in range(n_words):
            fits = (ranked_length[:, r] > 0) & (total + ranked_length[:, r] <= budget)  # (B,)
            take[:, r] = fits
            total += ranked_length[:, r] * fits
        chosen_word = torch.zeros_like(take).scatter(1, order, take)  # (B, W)
    return chosen_word.gather(1, column) & candidates  # (B, T)


def mask_tokens(
    input_ids: torch.Tensor,
    tokenizer,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
    mode: str = "dynamic",
    max_predictions: int = 20,
    whole_word: bool = False,
    replace: tuple[float, float, float] = REPLACE_BERT,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Corrupt ``input_ids`` for masked-LM training; return ``(inputs, labels)``.

    ``input_ids`` is (B, T) or (T,) of any integer dtype; both results are new long tensors of its shape
    on its device (the input is never modified). ``labels`` holds the original id where a token was chosen
    and -100 elsewhere.

    ``mode="dynamic"`` chooses each candidate token with ``probability``; ``mode="bert"`` chooses exactly
    ``min(max_predictions, max(1, round(probability × n)))`` per row, n being the row's candidate tokens
    (``max_predictions`` only matters in this mode). ``whole_word=True`` chooses whole words instead of
    pieces: each word with ``probability`` (dynamic), or words in random order until the token budget is
    reached, skipping any word that would overshoot it (bert, as Google does).

    ``replace=(mask, random, keep)`` is the share of chosen tokens that become ``[MASK]``, a random
    non-special token, or stay as they are (the paper's 80 / 10 / 10 by default; see the module docstring
    for the other strategies of its Appendix C.2). Labels do not depend on it: every chosen token is
    predicted, whatever was written in its place.

    All randomness comes from ``generator`` (a CPU ``torch.Generator``), or torch's global generator if
    None, so the same generator state always gives the same result.
    """
    _check_args(input_ids, probability, generator, mode, max_predictions)
    p_mask, p_random, p_keep = _check_replace(replace)
    device = input_ids.device
    ids = input_ids.detach().to("cpu", torch.long)
    if ids.dim() == 1:
        ids = ids[None, :]  # (1, T)
    B, T = ids.shape

    never = torch.tensor([tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id])
    candidates = ~torch.isin(ids, never)  # (B, T)
    if whole_word:
        table = _is_continuation(tokenizer)
        continuation = table.index_select(0, ids.clamp(0, len(table) - 1).flatten()).view(B, T)  # (B, T)
        chosen = _choose_words(candidates, continuation, probability, generator, mode, max_predictions)
    else:
        chosen = _choose_tokens(candidates, probability, generator, mode, max_predictions)

    # 80 / 10 / 10, drawn per chosen token as HuggingFace does: [MASK] with probability 0.8, then half of
    # the remaining 20 % get a random token and the other half keep theirs. In general: [MASK] with p_mask,
    # then a random token with p_random / (p_random + p_keep) of the rest. Both draws are made whatever the
    # split, so the stream of random numbers (and the positions chosen next batch) never depends on it.
    to_mask = chosen & (torch.rand(B, T, generator=generator) < p_mask)  # (B, T)
    random_share = p_random / (p_random + p_keep) if p_random + p_keep > 0 else 0.0  # 0.1 / 0.2 = 0.5 exactly
    to_random = chosen & ~to_mask & (torch.rand(B, T, generator=generator) < random_share)  # (B, T)
    pool = _random_pool(tokenizer)
    draws = torch.randint(len(pool), (B * T,), generator=generator)
    random_ids = pool.index_select(0, draws).view(B, T)  # (B, T); index_select: pool[draws] is ~100x slower on CPU

    # torch.where, not boolean-mask assignment: the same result, ~30x faster on CPU.
    inputs = torch.where(to_mask, tokenizer.mask_id, torch.where(to_random, random_ids, ids))  # (B, T)
    labels = torch.where(chosen, ids, IGNORE)  # (B, T)

    shape = input_ids.shape
    return inputs.reshape(shape).to(device), labels.reshape(shape).to(device)
