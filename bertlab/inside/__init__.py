"""Inside a layer and across checkpoints: sparse autoencoders, model diffs and a head atlas.

    sae = train_sae(model, tokenizer, layer=3, width=3072, k=32, steps=600)    # sae.py
    sae_report(model, tokenizer, sae, texts); steer(model, tokenizer, sae, text, feature, value)
    Features(model, tokenizer, sae, texts).top_contexts(f)                     # features.py
    compare_probes(model, tokenizer, sae)                                      # probing.py
    diff(model_a, model_b, tokenizer, texts)                                   # diff.py
    head_atlas(model, tokenizer, texts)                                        # atlas.py
    sae_report_figure, steering_figure, diff_figure, atlas_figure, …           # figures.py
    bertlab.viz.SteeringView(text, sae=sae), bertlab.viz.HeadAtlasView(atlas)   # the live views (viz/views/)

Each lives in the module named for it; this file only re-exports. The artefacts notebook 13 reads are in
bertlab/assets/inside/ (made by scripts/inside_artefacts.py from study.py; `assets()` gives their paths).
"""

from .atlas import HeadAtlas, head_atlas, pos_corpus
from .diff import LensToken, ModelDiff, diff
from .features import Context, Features, promoted_words, token_purity, trace
from .probing import ProbeComparison, compare_probes
from .residual import Residual, demo_sentences, residual_stream
from .sae import SAEReport, SparseAutoencoder, sae_report, steer, steered_probabilities, train_sae
from .shipped import assets, heldout_sentences, load_card, load_card_rows

__all__ = ["SparseAutoencoder", "train_sae", "SAEReport", "sae_report", "steer", "steered_probabilities", "Features", "Context",
           "promoted_words", "trace", "token_purity", "ProbeComparison", "compare_probes", "ModelDiff", "LensToken",
           "diff", "HeadAtlas", "head_atlas", "pos_corpus", "Residual", "residual_stream", "demo_sentences",
           "assets", "heldout_sentences", "load_card", "load_card_rows"]
