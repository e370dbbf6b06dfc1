"""The dashboard: figures and URL state as pure functions, the Procfile's dashboard process, and
the pages in a real headless Chromium (tests/support/browser.py drives it)."""
