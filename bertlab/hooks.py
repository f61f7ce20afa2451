"""Hook points: named places in the forward pass where you can read or change an activation.

The idea is TransformerLens's. Every interesting activation passes through a `HookPoint`, an identity module,
so it gets a name from the module tree (`encoder.layer.3.attention.self.hook_pattern`). Reading is
`model.run_with_cache(...)`; changing is `with model.hooks([(name, fn)]): ...`, which always removes its hooks
on the way out, even after an error, so an experiment can never leak into the next cell of a notebook.

    out, cache = model.run_with_cache(**enc)
    cache["encoder.layer.0.attention.self.hook_pattern"]          # (B, heads, T, T)

    def ablate_head_3(z, name):                                    # z: (B, heads, T, Dh)
        z = z.clone(); z[:, 3] = 0; return z
    with model.hooks([("encoder.layer.0.attention.self.hook_z", ablate_head_3)]):
        ablated = model(**enc)
"""

from __future__ import annotations

import contextlib
import fnmatch
from typing import Callable, Iterable, Iterator, Union

import torch
from torch import nn

HookFn = Callable[[torch.Tensor, str], Union[torch.Tensor, None]]
"""`fn(activation, name)`: return a tensor to replace the activation, or None to leave it as it is."""


class HookPoint(nn.Module):
    """An identity. It exists to have a name and to carry hooks."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


Names = Union[str, Iterable[str], Callable[[str], bool], None]


class HookedModule(nn.Module):
    """What every bertlab model can do with its hook points. Mixed into `Bert` and the heads."""

    def hook_points(self) -> dict[str, HookPoint]:
        return {name: m for name, m in self.named_modules() if isinstance(m, HookPoint)}

    def _select(self, names: Names) -> list[str]:
        points = self.hook_points()
        if names is None:
            return list(points)
        if callable(names):
            return [n for n in points if names(n)]
        patterns = [names] if isinstance(names, str) else list(names)
        chosen = []
        for pattern in patterns:
            hits = [n for n in points if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                raise ValueError(f"no hook point matches {pattern!r}; names look like "
                                 f"{next(iter(points), '?')!r} (see model.hook_points())")
            chosen += [n for n in hits if n not in chosen]
        return chosen

    @contextlib.contextmanager
    def hooks(self, fwd_hooks: Iterable[tuple[Names, HookFn]]) -> Iterator["HookedModule"]:
        """Run the body with temporary hooks; they are removed on exit, whatever happens.

        Each entry is `(names, fn)`: names is a hook point name, a glob (`"*.hook_z"`), a list of those,
        or a predicate on the name; `fn(activation, name)` returns a replacement or None.
        """
        handles = []
        try:
            for names, fn in fwd_hooks:
                points = self.hook_points()
                for name in self._select(names):
                    def hook(module, inputs, output, fn=fn, name=name):  # torch's signature → ours
                        return fn(output, name)
                    handles.append(points[name].register_forward_hook(hook))
            yield self
        finally:
            for h in handles:
                h.remove()

    def run_with_cache(self, *args, names: Names = None, detach: bool = True, **kwargs):
        """Forward pass that also returns `{hook name: activation}` for every hook point (or those named).

        Asking for attention patterns or scores makes attention take the explicit path (SDPA never forms
        the weights); everything else is cached on whichever path runs.
        """
        cache: dict[str, torch.Tensor] = {}

        def save(x, name):
            cache[name] = x.detach() if detach else x

        with self.hooks([(names, save)]):
            out = self(*args, **kwargs)
        return out, cache

