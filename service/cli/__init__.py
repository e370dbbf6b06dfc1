"""Command line: `python -m service keys ...` and `python -m service data ...`."""
