"""nbval runs every notebook here (the README's test command). Every notebook runs as a reader runs it (their
training cells are small enough), so the check cells compare what a reader sees. One torch thread per kernel
keeps a 2-core machine responsive."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
