"""nbval runs every notebook here (the README's test command). Training cells read BERTLAB_QUICK and train
for fewer steps under test; every concept still runs, only smaller. One torch thread per kernel keeps a
2-core machine responsive."""

import os

os.environ.setdefault("BERTLAB_QUICK", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
