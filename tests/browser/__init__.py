"""Notebooks in JupyterLab in headless Chromium. A package, so its conftest is `browser.conftest` and never
shadows tests/conftest.py, which the unit tests import as `conftest`."""
