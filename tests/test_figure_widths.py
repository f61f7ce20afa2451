"""Every figure fits a 1,000-px column at its default settings (issue 30: a 1,280-px JupyterLab with the file
browser open, and the book's column). The views' own figures are measured in tests/test_widgets.py; this test
reads every figure module for a fixed width wider than that, the way 11's contextuality figure (1,100 px)
and 13's atlas (1,100 px) slipped past it."""

import ast
from pathlib import Path

import bertlab

ROOT = Path(bertlab.__file__).parent
MODULES = sorted((ROOT / "viz" / "figures").glob("*.py")) + [ROOT / "inside" / "figures.py"] \
    + sorted((ROOT / "viz" / "views").glob("*.py")) + sorted((ROOT / "viz" / "widgets").glob("*.py"))


def fixed_widths(path: Path) -> list[tuple[int, int]]:
    """(line, value) of each `width=<number>` keyword, and of each number inside a `width=max(...)`/`min(...)`
    that is the figure's floor (a max's constant arguments are what the width is at least)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.keyword) and node.arg == "width":
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, (int, float)):
                found.append((v.lineno, v.value))
            elif isinstance(v, ast.Call) and getattr(v.func, "id", "") == "max":
                found += [(a.lineno, a.value) for a in v.args
                          if isinstance(a, ast.Constant) and isinstance(a.value, (int, float))]
    return found


def test_the_modules_are_found():
    assert len(MODULES) > 10 and all(p.exists() for p in MODULES)
    assert any(fixed_widths(p) for p in MODULES)          # the reader finds widths at all


def test_no_figure_is_fixed_wider_than_1000_px():
    wide = [(p.relative_to(ROOT).as_posix(), line, w) for p in MODULES for line, w in fixed_widths(p) if w > 1000]
    assert wide == [], f"figures fixed wider than 1,000 px (file, line, width): {wide}"
