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


def _checked(result, activation: torch.Tensor, name: str, fn):
    """A hook's return value: None (keep the activation) or a tensor of the activation's shape; anything else
    is a ValueError naming the hook point and the shape it expected, not an error deep inside attention."""
    if result is None:
        return None
    what = getattr(fn, "__name__", repr(fn))
    if not isinstance(result, torch.Tensor):
        raise ValueError(f"the hook {what} at {name} returned a {type(result).__name__}: a hook returns None (to "
                         f"leave the activation) or a tensor of the activation's shape {tuple(activation.shape)}")
    if result.shape != activation.shape:
        raise ValueError(f"the hook {what} at {name} returned a tensor of shape {tuple(result.shape)}, but the "
                         f"activation there has shape {tuple(activation.shape)}: return a tensor of that shape "
                         "(edit a clone of the activation), or None to leave it")
    if result.is_complex() or (result.is_floating_point() != activation.is_floating_point()):
        raise ValueError(f"the hook {what} at {name} returned a {result.dtype} tensor where the activation is "
                         f"{activation.dtype}: return a floating-point tensor like the activation")
    if result.device != activation.device:
        raise ValueError(f"the hook {what} at {name} returned a tensor on {result.device}, but the model runs on "
                         f"{activation.device}: create it with device=activation.device")
    return result.to(activation.dtype)


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
        if not isinstance(names, str) and not hasattr(names, "__iter__"):
            raise ValueError(f"names must be a hook point name, a glob such as '*.hook_z', a list of those, a "
                             f"predicate on the name, or None for all, got {names!r}")
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
        if isinstance(fwd_hooks, tuple) and len(fwd_hooks) == 2 and callable(fwd_hooks[1]):
            raise ValueError("hooks() takes a list of (names, fn) pairs: wrap the one pair in a list, "
                             f"[({fwd_hooks[0]!r}, fn)]")
        if callable(fwd_hooks) or isinstance(fwd_hooks, (str, bytes)) or not hasattr(fwd_hooks, "__iter__"):
            raise ValueError(f"hooks() takes a list of (names, fn) pairs, e.g. [('*.hook_z', fn)], got "
                             f"{type(fwd_hooks).__name__}")
        handles = []
        try:
            for names, fn in fwd_hooks:
                points = self.hook_points()
                if not callable(fn):
                    raise ValueError(f"a hook is (names, fn) with fn(activation, name) a function, got {fn!r} "
                                     f"for {names!r}")
                for name in self._select(names):
                    def hook(module, inputs, output, fn=fn, name=name):  # torch's signature → ours
                        return _checked(fn(output, name), output, name, fn)
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

