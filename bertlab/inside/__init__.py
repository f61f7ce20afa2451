"""Inside a layer and across checkpoints: sparse autoencoders, model diffs and a head atlas.

    sae = train_sae(model, tokenizer, layer=3, width=3072, k=32, steps=2000)   # sae.py
    sae_report(model, tokenizer, sae, texts); steer(model, tokenizer, sae, text, feature, value)
    diff(model_a, model_b, tokenizer, texts)                                    # diff.py
    head_atlas(model, tokenizer, texts)                                         # atlas.py

Each lives in the module named for it; this file only re-exports.
"""

from .sae import SAEReport, SparseAutoencoder, sae_report, steer, train_sae

__all__ = ["SparseAutoencoder", "train_sae", "SAEReport", "sae_report", "steer"]
