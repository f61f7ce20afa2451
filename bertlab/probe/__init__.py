"""Probes: ask a trained BERT a question and get plain numbers back.

Every probe takes `(model, tokenizer, text, ...)` first:

    fill_mask(model, tokenizer, "The river [MASK] was muddy.")               # what goes in the gap
    next_sentence(model, tokenizer, "It rained all day.", "The river rose.")   # P(IsNext)
    v = word_vectors(model, tokenizer, ["the river bank", "the bank account"], "bank")   # (2, H)
    cosine_distances(v)                                                       # (2, 2): same word, two contexts
    sentence_embedding(model, tokenizer, texts, pooling="mean")              # (n, H)
    attention_map(model, tokenizer, "The river bank.", layer=2, head="all")  # what a heatmap shows
    head_importance(model, tokenizer, "The river [MASK] was muddy.", targets=["bank"])
    Ablation(model, tokenizer, "The river [MASK] was muddy.").effect([(0, 1)])   # guesses with that head off
    patch(model, tokenizer, clean, corrupt, site="resid")                    # what *causes* the prediction
    compare_fill(model, tokenizer, text_a, text_b)                           # one word changed: what moved
    context_mixing(model, tokenizer, text)                                   # six answers to "which tokens fed it?"

Each probe lives in the module named for it (`fill_mask` in probe/fill_mask.py, `ablate` in
probe/ablation.py); this file only re-exports them. What every probe (and every widget) runs on is in
probe/running.py: `inference(model)`, `base_model(model)`, `has_mlm_head(model)`, `has_nsp_head(model)`,
`mlm_head(model)`, `max_length(model, tokenizer)`, `run(model, enc, **flags)`, `attention_weights(model,
batch)` and `embedding_parts(model, enc)`.

Every probe runs without gradients in eval mode (each module's own mode comes back afterwards), takes
text, and returns CPU tensors or small dataclasses, so a notebook can print or plot the answer directly.
"""

from .ablation import Ablation, AblationEffect, HeadImportance, ablate, head_importance
from .attention_maps import AttentionMap, attention_map, merge_word_pieces, word_groups
from .contextuality import Contextuality, contextuality
from .cosine import cosine_distances
from .fill_mask import FillMask, Guess, GuessChange, fill_mask
from .head_types import HeadTypes, head_types
from .layers import LayerProbe, ProbingSet, load_probing_set, probe_layers
from .minimal_pairs import FillComparison, FillShift, compare_fill
from .mixing import ContextMixing, MixingScoreboard, context_mixing, leave_one_out, mixing_scoreboard, spearman
from .nearest import NearestContexts, nearest_contexts
from .neurons import AttentionNeurons, attention_neurons
from .next_sentence import next_sentence
from .patching import Patching, patch
from .rollout import attention_rollout
from .running import (
                      attention_weights,
                      base_model,
                      check_pair,
                      embedding_parts,
                      has_mlm_head,
                      has_nsp_head,
                      inference,
                      max_length,
                      mlm_head,
                      run,
)
from .saliency import Saliency, saliency
from .sentence_embedding import sentence_embedding
from .word_vectors import word_vectors

__all__ = [
    # masked words, sentence pairs, vectors
    "fill_mask", "FillMask", "Guess", "GuessChange", "next_sentence", "word_vectors", "cosine_distances", "sentence_embedding",
    # attention
    "attention_map", "AttentionMap", "word_groups", "merge_word_pieces", "attention_rollout",
    "attention_neurons", "AttentionNeurons",
    # inspection
    "saliency", "Saliency", "head_types", "HeadTypes", "contextuality", "Contextuality", "nearest_contexts",
    "NearestContexts", "probe_layers", "LayerProbe", "load_probing_set", "ProbingSet",
    # interventions
    "patch", "Patching", "compare_fill", "FillComparison", "FillShift", "context_mixing", "ContextMixing",
    "mixing_scoreboard", "MixingScoreboard", "leave_one_out", "spearman",
    "ablate", "Ablation", "AblationEffect", "HeadImportance", "head_importance",
    # running a model for a probe
    "inference", "base_model", "has_mlm_head", "has_nsp_head", "mlm_head", "max_length", "check_pair", "run",
    "attention_weights", "embedding_parts",
]
