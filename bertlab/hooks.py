"""Hook points: named places in the forward pass where you can read or change an activation.

The idea is TransformerLens's. Every interesting activation passes through a `HookPoint`, an identity module,
so it gets a name from the module tree (`encoder.layer.3.attention.self.hook_pattern`). Reading is
`model.run_with_cache(...)`; changing is `with model.hooks([(name, fn)]): ...`, which always removes its hooks
on the way out, even after an error, so an experiment can never leak into the next cell of a notebook.

    out, cache = model.run_with_cache(**enc)
    cache["encoder.layer.0.attention.self.hook_pattern"]          # (B, heads, T, T)
    cache["pattern", 0]                                           # the same, as TransformerLens users write it
    act_name("pattern", 0)                                        # "encoder.layer.0.attention.self.hook_pattern"

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

# a hook point's short name (TransformerLens's words) → where it sits in a layer, or in the embeddings
LAYER_POINTS = {"q": "attention.self.hook_q", "k": "attention.self.hook_k", "v": "attention.self.hook_v",
                "scores": "attention.self.hook_scores", "pattern": "attention.self.hook_pattern",
                "z": "attention.self.hook_z", "attn_out": "attention.output.hook_attn_out",
                "resid_mid": "hook_resid_mid", "mlp_act": "intermediate.hook_mlp_act",
                "mlp_out": "output.hook_mlp_out", "resid_post": "hook_resid_post"}
EMBEDDING_POINTS = {"token", "segment", "position", "sum", "normed"}


def act_name(name: str, layer: int | None = None) -> str:
    """The full hook point name for a short one: `act_name("pattern", 0)` is
    "encoder.layer.0.attention.self.hook_pattern", `act_name("normed")` is "embeddings.hook_normed".

    Names are relative to the encoder (`Bert`); a head's own hook points carry a "bert." in front, which
    `ActivationCache` and the probes add where needed. A name that already is a full one comes back as it is.
    """
    if not isinstance(name, str):
        raise TypeError(f"act_name takes a hook point's short name such as 'pattern', got {name!r}")
    short = name.removeprefix("hook_")
    if short in EMBEDDING_POINTS:
        if layer is not None:
            raise ValueError(f"{name!r} is an embedding hook point, which has no layer: act_name({name!r})")
        return f"embeddings.hook_{short}"
    if short in LAYER_POINTS:
        if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
            raise ValueError(f"{name!r} is a hook point in every layer: pass the layer, a whole number ≥ 0, as in "
                             f"act_name({name!r}, 0)")
        return f"encoder.layer.{layer}.{LAYER_POINTS[short]}"
    if "." in name and layer is None:
        return name
    raise ValueError(f"no hook point is called {name!r}: short names are {', '.join(sorted(EMBEDDING_POINTS))} "
                     f"(the embeddings) and {', '.join(LAYER_POINTS)} (each layer)")


class ActivationCache(dict):
    """`{hook name: activation}` from `run_with_cache`, also indexable as TransformerLens users expect:
    `cache["pattern", 0]` is `cache["encoder.layer.0.attention.self.hook_pattern"]` (with "bert." in front
    when the model is a head), and `cache["normed"]` the embeddings' output."""

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key = act_name(*key)
        elif isinstance(key, str) and not dict.__contains__(self, key) and "." not in key:
            key = act_name(key)
        if not dict.__contains__(self, key) and dict.__contains__(self, "bert." + key):
            key = "bert." + key
        return dict.__getitem__(self, key)


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

    def run_with_cache(self, *args, names: Names = None, detach: bool = True, **kwargs) -> tuple:
        """Forward pass that also returns `{hook name: activation}` for every hook point (or those named), an
        `ActivationCache`: `cache["pattern", 0]` works as well as the full name.

        Asking for attention patterns or scores makes attention take the explicit path (SDPA never forms
        the weights); everything else is cached on whichever path runs.
        """
        cache = ActivationCache()

        def save(x, name):
            cache[name] = x.detach() if detach else x

        with self.hooks([(names, save)]):
            out = self(*args, **kwargs)
        return out, cache

