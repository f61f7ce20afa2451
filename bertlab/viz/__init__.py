"""Figures (plotly), offline attention views and live widgets that show what a BERT computes.

Needs the `notebooks` extra (plotly, ipywidgets, bertviz).

    from bertlab.viz import AttentionExplorer
    AttentionExplorer("The river bank was muddy.")      # the last line of a notebook cell shows it
"""

from .attention_view import AttentionView
from .bertviz_views import head_view, head_view_html, model_view, model_view_html
from .export import export  # noqa: E402  (the function shadows its module: bertlab.viz.export(fig, "f.svg"))
from .figures import (
                      ablation_figure,
                      attention_grid,
                      attention_heatmap,
                      attention_map_figure,
                      cosine_matrix,
                      drift_by_layer,
                      embedding_sum,
                      fill_mask_figure,
                      fill_mask_layers_figure,
                      head_importance_figure,
                      lr_schedule,
                      masking_figure,
                      nsp_figure,
                      position_similarity,
                      projection_2d,
                      sinusoidal_positions,
                      training_curves,
)
from .inspection import (
                      contextuality_figure,
                      head_types_figure,
                      nearest_contexts_figure,
                      nearest_contexts_html,
                      neuron_figure,
                      probe_layers_figure,
                      saliency_figure,
)
from .intervention import fill_shift_figure, mixing_figure, patching_figure, scoreboard_figure
from .neuron_view import neuron_view, neuron_view_html
from .replay import SnapshotReplay, intra_similarity_figure, snapshot_figure
from .views.interact import Interactive, interact
from .widgets import (
                      AttentionExplorer,
                      ContextExplorer,
                      ContextSearch,
                      EmbeddingSumExplorer,
                      HeadAblation,
                      MaskingLab,
                      MaskPlayground,
                      MinimalPairs,
                      NeuronExplorer,
                      NSPExplorer,
                      Predict,
                      Quiz,
                      SaliencyExplorer,
)

__all__ = [
    # figures
    "attention_heatmap", "attention_map_figure", "attention_grid", "embedding_sum", "sinusoidal_positions", "position_similarity",
    "masking_figure", "nsp_figure", "fill_mask_figure", "fill_mask_layers_figure", "cosine_matrix",
    "drift_by_layer", "projection_2d", "training_curves", "lr_schedule", "head_importance_figure", "ablation_figure",
    "neuron_figure", "saliency_figure", "head_types_figure", "contextuality_figure", "probe_layers_figure",
    "nearest_contexts_figure", "nearest_contexts_html", "snapshot_figure", "intra_similarity_figure", "export",
    "patching_figure", "fill_shift_figure", "mixing_figure", "scoreboard_figure",
    # attention views (offline)
    "head_view", "model_view", "head_view_html", "model_view_html", "AttentionView", "neuron_view",
    "neuron_view_html",
    # live widgets
    "AttentionExplorer", "MaskPlayground", "MaskingLab", "EmbeddingSumExplorer", "NSPExplorer",
    "ContextExplorer", "HeadAblation", "NeuronExplorer", "SaliencyExplorer", "ContextSearch", "MinimalPairs",
    "SnapshotReplay",
    # the course: predict before a reveal, a quiz at the end
    "Predict", "Quiz",
    # a notebook's own live cell: a function of some controls, drawn on the view base
    "interact", "Interactive",
]
