"""Plotly figures. Each takes what the model returned and gives back a `go.Figure` with one consistent look.

Every function here is a pure function of tensors, model outputs or probe results: none runs a model. The
look is shared (figures.look): `LAYOUT` (template, font, margins, colour cycle), `PALETTE` (one colour
per concept, the same in every figure: the token part is always blue, NSP always orange, a [MASK] always
light blue), the `SEQUENTIAL` scale for weights and distances and the `DIVERGING` one for signed values.
Titles say what to look for; hovering a cell or point names the token (or position, layer, head) and its
number to 3 decimals.

    out = model(**enc, output_attentions=True)
    attention_grid(out, enc.tokens)                      # every layer × head at a glance
    embedding_sum(out, enc.tokens)                       # token + segment + position → LayerNorm

One module per subject, every figure importable from here (and from bertlab.viz):

    embeddings    the input sum and the position vectors (02)      look          the shared look and checks
    attention     one attention map, every layer × head (03, 10)   training      loss curves, the schedule (06)
    masking       what MLM corruption did to a text (04)           replay        a run's snapshots (06)
    fill_mask     the guesses at a [MASK], by layer (04, 10)       context       contextual vectors (07)
    nsp           P(IsNext) (05)                                   inspection    neurons, saliency, probes (11)
    heads         head importance and ablation (10)                intervention  patching, minimal pairs (12)
"""

from .attention import attention_grid, attention_heatmap, attention_map_figure, sparse_ticks
from .context import cosine_matrix, drift_by_layer, projection_2d
from .embeddings import embedding_sum, position_similarity, sinusoidal_positions
from .fill_mask import fill_mask_figure, fill_mask_layers_figure
from .heads import ablation_figure, head_importance_figure
from .inspection import (
    contextuality_figure,
    head_types_figure,
    nearest_contexts_figure,
    nearest_contexts_html,
    neuron_figure,
    probe_layers_figure,
    saliency_figure,
    saliency_rows,
)
from .intervention import fill_shift_figure, mixing_figure, note_figure, patching_figure, scoreboard_figure
from .look import COLORS, DIVERGING, LAYOUT, PALETTE, SEQUENTIAL
from .masking import masking_figure
from .nsp import nsp_figure
from .replay import intra_similarity_figure, snapshot_figure
from .training import lr_schedule, training_curves

__all__ = [
    # the look
    "LAYOUT", "PALETTE", "COLORS", "SEQUENTIAL", "DIVERGING",
    # the input, attention, pre-training and masked-LM lessons (02 to 05, 10)
    "embedding_sum", "sinusoidal_positions", "position_similarity", "attention_heatmap", "attention_map_figure",
    "attention_grid", "masking_figure", "nsp_figure", "fill_mask_figure", "fill_mask_layers_figure",
    "head_importance_figure", "ablation_figure",
    # pre-training runs (06) and contextual vectors (07)
    "training_curves", "lr_schedule", "snapshot_figure", "intra_similarity_figure",
    "cosine_matrix", "drift_by_layer", "projection_2d",
    # looking inside (11) and cause and effect (12)
    "neuron_figure", "saliency_figure", "saliency_rows", "head_types_figure", "contextuality_figure",
    "probe_layers_figure", "nearest_contexts_figure", "nearest_contexts_html",
    "patching_figure", "fill_shift_figure", "mixing_figure", "scoreboard_figure", "note_figure",
    # a helper the attention view draws with: token labels thinned past MAX_TICKS
    "sparse_ticks",
]
