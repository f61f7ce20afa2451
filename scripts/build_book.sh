#!/usr/bin/env bash
# Builds the lab book (the lessons as a static web site) into OUT, default site/, from this clone:
#   bash scripts/build_book.sh [OUT] [bertlab book options: --repo-url URL --hub-url URL --branch B ...]
# Sets up .venv first if it is missing. Notebooks with an executed copy in build/executed/ (written by the
# test command's nbval run) or build/book-cache/ are not run again; the others run first (minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/bertlab ] || bash scripts/setup.sh lab
out="${1:-site}"
[ $# -gt 0 ] && shift
exec .venv/bin/bertlab book "$out" "$@"
