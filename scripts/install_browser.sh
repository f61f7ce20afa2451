#!/usr/bin/env bash
# Makes sure a Chromium is there for tests/browser (JupyterLab driven by Playwright in headless Chromium).
# Idempotent: does nothing when `chromium` (or `chromium-browser`, or $BROWSER_PATH) is already there.
# Otherwise, as root on Debian/Ubuntu, installs the distribution's package with apt-get. It never runs
# `playwright install`: the tests use the system's browser, not Playwright's downloads.
set -euo pipefail

if [ -n "${BROWSER_PATH:-}" ] && [ -x "$BROWSER_PATH" ]; then
  echo "install_browser: using BROWSER_PATH=$BROWSER_PATH"; exit 0
fi
for name in chromium chromium-browser; do
  if found=$(command -v "$name"); then
    echo "install_browser: $name already installed ($found)"; exit 0
  fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "install_browser: no chromium on PATH and cannot install it here (needs root and apt-get);" \
       "tests/browser will be skipped. Install Chromium, or set BROWSER_PATH to one." >&2
  exit 0
fi
echo "install_browser: installing Debian's chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq chromium fonts-liberation >/dev/null; } \
   || ! command -v chromium >/dev/null; then
  echo "install_browser: apt-get could not install chromium" >&2
  exit 1
fi
echo "install_browser: installed $(command -v chromium) ($(chromium --version 2>/dev/null | tail -1))"
