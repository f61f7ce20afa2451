"""The schedule and parameter groups of BERT's appendix A.2, kept importable from here for older code.

They live in `bertlab.optim`, beside the optimizer and the clipping step that every training loop shares.
"""

from ..optim import lr_at, param_groups

__all__ = ["lr_at", "param_groups"]
