"""One look for every figure: colours, layout, titles and token labels, plus the checks every figure makes.

Every figure module (this package's, and attention_view) and every widget draws with these, so a concept
keeps its colour from notebook to notebook (the token part is always blue, NSP always orange, a [MASK]
always light blue) and every title sits in the same place.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from ...inputs import check_tokens  # noqa: F401  (the probes check tokens the same way)

__all__ = ["COLORS", "PALETTE", "SEQUENTIAL", "DIVERGING", "LAYOUT", "EMBEDDING_PARTS", "finish",
           "token_labels", "shorten", "as_float", "check_index", "check_indices", "check_tokens"]

# a colour-blind-friendly categorical cycle (Tableau 10): senses, contexts, anything without a fixed colour
COLORS = ["#4C78A8", "#F58518", "#E45756", "#72B7B2", "#54A24B", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D",
          "#BAB0AC"]
PALETTE = dict(
    token="#4C78A8", segment="#F58518", position="#54A24B", sum="#B279A2", normed="#E45756",   # embeddings
    total="#333333", mlm="#4C78A8", nsp="#F58518", lr="#72B7B2",                                # training
    isnext="#54A24B", notnext="#E45756",                                                        # NSP
    not_chosen="#EEEEEE", mask="#9ECAE9", random="#FF9DA6", kept="#F2CF5B",                     # MLM masking
)
SEQUENTIAL = "Blues"      # weights, probabilities, distances: 0 is white
DIVERGING = "RdBu_r"      # signed values and cosine similarity: 0 is white, negative blue, positive red

LAYOUT = dict(template="plotly_white", font=dict(size=12), margin=dict(l=60, r=20, t=50, b=60), colorway=COLORS)

# the parts of BERT's input embedding, in embedding_sum's trace order (bars, then heatmaps), with their titles
EMBEDDING_PARTS = (("token", "token"), ("segment", "segment"), ("position", "position"), ("sum", "sum"),
                   ("normed", "LayerNorm(sum)"))


def finish(fig: go.Figure, title: str, **layout) -> go.Figure:
    """Apply the shared look and a left-aligned title; `layout` may override any of LAYOUT's keys (say, the
    margin). The title starts at x = 0.01 of the figure, just clear of its edge, in every figure."""
    settings = {**LAYOUT, **layout}
    if settings.get("template") == LAYOUT["template"]:
        settings.pop("template")
        _set_template(fig)
    fig.update_layout(**settings, title=dict(text=title, x=0.01, xanchor="left"))
    return fig


def _set_template(fig: go.Figure) -> None:
    """The shared template, copied into `fig` without validating it again: plotly's own path (a name) deep-copies
    and re-validates the whole template, ~50 ms a figure, most of a live view's time; the template was
    validated when plotly registered it. The figure is the same (a test holds them equal)."""
    import plotly.io as pio
    layout = fig.layout
    try:
        layout._validate = False
        layout.template = pio.templates[LAYOUT["template"]]
    except Exception:                   # a plotly without the private switch: its own (slower) path
        layout._validate = True
        layout.template = LAYOUT["template"]
    finally:
        layout._validate = True


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Tokens as axis labels, each with its position: plotly merges equal category names ("the", "the")."""
    return [f"{t} ({i})" for i, t in enumerate(tokens)]


def shorten(text: str, n: int = 40) -> str:
    """`text` on one line, cut to `n` characters with an ellipsis: for titles and axis labels."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def as_float(x, name: str, dims: tuple[int, ...]) -> torch.Tensor:
    """Any tensor / array / nested list → a detached float32 CPU tensor with one of the allowed ranks."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a tensor or an array of numbers, got {type(x).__name__}") from None
    if x.dim() not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"{name} must be {want}, got shape {tuple(x.shape)}")
    x = x.detach().float().cpu()
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return x


def check_index(i, n: int, what: str, plural: str = "", there: str = "there are") -> int:
    """`i` as an index into n things (negative counts from the end), or a ValueError naming `what`:
    "layer 6 does not exist: there are 6 layers (0 … 5)" (`there` may say whose they are)."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
        raise ValueError(f"{what} {i!r} does not exist: {there} {n}{' ' + plural if plural else ''} (0 … {n - 1})")
    return int(i) % n


def check_indices(values, n: int, what: str, plural: str) -> list[int] | None:
    """None (all of them), one index or a list of indices into n things → sorted unique indices."""
    if values is None:
        return None
    if isinstance(values, int):
        values = [values]
    values = [check_index(v, n, what, plural) for v in values]
    if not values:
        raise ValueError(f"no {plural} selected: pass at least one, or None for all")
    return sorted(set(values))
