"""Input checks the probes share: a list of texts, a layer index. Private: the probes import it, users don't."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def check_texts(texts, name: str) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"{name} must be a list of str, got {type(texts).__name__}"
                         + (f": for one text pass [{name[:-1]}]" if isinstance(texts, str) else ""))
    if len(texts) == 0:
        raise ValueError(f"{name} is empty: pass at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"{name}[{i}] is {t!r}: every entry must be a non-empty str")
    return list(texts)


def layer_index(layer, n_layers: int) -> int | None:
    """`layer` as an index into hidden_states (0 … L), or None for all of them."""
    if layer is None or (isinstance(layer, str) and layer == "all"):
        return None
    valid = (f"pass 0 … {n_layers} (0 = the embedding output, {n_layers} = the last layer), "
             f"-{n_layers + 1} … -1 counting from the end, or 'all'")
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise ValueError(f"layer must be an int or 'all', got {layer!r}: {valid}")
    if not -(n_layers + 1) <= layer <= n_layers:
        raise ValueError(f"layer {layer} is out of range for a {n_layers}-layer model: {valid}")
    return layer % (n_layers + 1)


def pick_layer(hidden_states: tuple[torch.Tensor, ...], layer: int | None, dim: int) -> torch.Tensor:
    """One layer's states, or all of them stacked along `dim`."""
    return torch.stack(hidden_states, dim=dim) if layer is None else hidden_states[layer]
