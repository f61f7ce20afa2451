"""What an experiment may run: a card or spec names its run as "module:function", and only trusted code runs.

A card is a record to share and check, but its `run` is code: `"run": "subprocess:call"` with settings
`{"touch": 1, "FILE": 2}` would create a file, and other settings a shell. So a name resolves only to

- the `run` of one of bertlab's own studies (`studies.RUNS`), or
- a function defined in a module the user allows by name (`allow=["mystudy"]`, `--allow mystudy`): exactly that
  module, not its submodules, and only a function whose `__module__` is that module (a name it merely imported,
  such as `from subprocess import call`, is refused).

The decision is taken on the name alone, before anything is imported: importing a module runs its top level.
"""

from __future__ import annotations

import importlib
import re
from typing import Callable

from .studies import RUNS

_MODULE = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_RUN = re.compile(rf"({_MODULE}):([A-Za-z_]\w*)", re.ASCII)


def run_name(run: Callable | str) -> str:
    """"module:function" for an importable function (what a card records, so it can be replayed)."""
    if isinstance(run, str):
        return run
    module, name = getattr(run, "__module__", None), getattr(run, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):     # a functools.partial, a callable object
        raise ValueError(f"run must be a function run(settings, seed) defined with def (a card records its "
                         f"'module:function' name to replay it), got a {type(run).__name__}: wrap it in a def, "
                         "with what it fixes as settings")
    return f"{module}:{name}"


def allowed(allow) -> tuple[str, ...]:
    """`allow` as a tuple of module names: a list of them, or one name; anything else is a ValueError."""
    if isinstance(allow, str):
        allow = (allow,)
    if not isinstance(allow, (list, tuple, set, frozenset)):
        raise ValueError(f"allow must be a list of module names, e.g. allow=['mystudy'], got {type(allow).__name__}")
    for m in allow:
        if not isinstance(m, str) or not re.fullmatch(_MODULE, m, re.ASCII):
            raise ValueError(f"allow: {m!r} is not a module name (dotted words, e.g. 'mystudy' or 'lab.runs'); "
                             "a card's run is 'module:function' and you allow its module")
    return tuple(allow)


def check_trusted(name, allow=(), how: str = "replay CARD") -> tuple[str, str]:
    """(module, function) of `name` when it may run; else a ValueError saying what it wants to run and how to
    allow it (`how`: the command the user typed, for the message). Imports nothing."""
    allow = allowed(allow)
    m = _RUN.fullmatch(name) if isinstance(name, str) else None
    if m is None:
        raise ValueError(f"run {name!r} is not a 'module:function' name (e.g. 'mystudy:run'): nothing was run")
    module, function = m.groups()
    if name in RUNS or module in allow:
        return module, function
    raise ValueError(f"this wants to run {name!r}, which is not one of bertlab's studies; nothing was imported or "
                     f"run. If you trust the module {module!r}, allow it: bertlab {how} --allow {module} "
                     f"(in Python: allow=[{module!r}])")


def resolve_run(name: str, allow=(), how: str = "replay CARD") -> Callable:
    """The function `name` names, after `check_trusted` (imports its module only then)."""
    module, function = check_trusted(name, allow, how)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.startswith(e.name):
            raise ValueError(f"run {name!r}: there is no module {module!r} on the path (the command looks in the "
                             "current folder too): run from the folder that holds it, or install it") from None
        raise ValueError(f"run {name!r}: importing {module} failed: {e}") from e
    except Exception as e:          # the module's own code raised as it was imported
        raise ValueError(f"run {name!r}: importing {module} raised {type(e).__name__}: {e}") from e
    fn = getattr(mod, function, None)
    if fn is None:
        raise ValueError(f"run {name!r}: the module {module} has no {function!r}")
    if not callable(fn) or getattr(fn, "__module__", None) != module:
        raise ValueError(f"run {name!r}: {function!r} is not a function defined in {module} (it comes from "
                         f"{getattr(fn, '__module__', None) or 'elsewhere'}), so allowing {module} does not allow it")
    return fn
