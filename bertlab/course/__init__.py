"""The course: `check(exercise, answer)` says whether an exercise's answer is right, and if not what kind of
wrong, without ever giving the answer; `hint(exercise, level)` gives hints in tiers.

    import bertlab
    bertlab.check("00.1", answer)           # ✓, or ✗ with the kind of mistake
    bertlab.hint("00.1")                    # a nudge; level=2, 3 ... say more
    bertlab.course.exercises("04")          # every checkable exercise of notebook 04, with its tags

Each notebook's checks live in their own module, nbNN.py, registered with `registry.exercise` (its
docstring says how to write one and how answers are kept unreadable). A new notebook's checks: a new file
nbNN.py, and one import line below. The answers themselves, in the clear, are the instructor pack in the
repository's solutions/ folder, which is not part of the installed package.
"""

# one line per notebook: importing a module registers its exercises
from . import (
    nb00,  # noqa: E402,F401
    nb01,  # noqa: E402,F401
    nb02,  # noqa: E402,F401
    nb03,  # noqa: E402,F401
    nb04,  # noqa: E402,F401
)
from .registry import Exercise, Hint, Result, check, exercises, get, hint

__all__ = ["check", "hint", "exercises", "get", "Exercise", "Result", "Hint"]

# notebooks 05-07 and 10-12 (their own line, so that adding 01-04 above does not touch it)
# notebooks 08 and 09 (fine-tuning, the ablations)
# notebook 13 (features and changes)
from . import nb05, nb06, nb07, nb08, nb09, nb10, nb11, nb12, nb13  # noqa: E402,F401  # noqa: E402,F401
