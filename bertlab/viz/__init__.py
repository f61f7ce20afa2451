"""Figures (plotly) and widgets that show what a BERT computes. Needs the `notebooks` extra."""

from .figures import attention_heatmap

__all__ = ["attention_heatmap"]
