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
                      contextuality_figure,
                      cosine_matrix,
                      drift_by_layer,
                      embedding_sum,
                      fill_mask_figure,
                      fill_mask_layers_figure,
                      fill_shift_figure,
                      head_importance_figure,
                      head_types_figure,
                      intra_similarity_figure,
                      lr_schedule,
                      masking_figure,
                      mixing_figure,
                      nearest_contexts_figure,
                      nearest_contexts_html,
                      neuron_figure,
                      nsp_figure,
                      patching_figure,
                      position_similarity,
                      probe_layers_figure,
                      projection_2d,
                      saliency_figure,
                      scoreboard_figure,
                      sinusoidal_positions,
                      snapshot_figure,
                      training_curves,
)
from .neuron_view import neuron_view, neuron_view_html
from .replay import SnapshotReplay
from .views.atlas import HeadAtlasView
from .views.interact import Interactive, interact
from .views.steer import SteeringView
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
    "SnapshotReplay", "SteeringView", "HeadAtlasView",
    # the course: predict before a reveal, a quiz at the end
    "Predict", "Quiz",
    # a notebook's own live cell: a function of some controls, drawn on the view base
    "interact", "Interactive",
]
