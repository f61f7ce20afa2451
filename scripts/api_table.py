"""Rewrite (or with --check, compare) README.md's "API at a glance" table: bertlab/api_table.py does the work."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bertlab.api_table import main  # noqa: E402  (after the checkout is on the path)

if __name__ == "__main__":
    raise SystemExit(main())
