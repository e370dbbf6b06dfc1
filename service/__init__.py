"""Signals query service: aggregated, anonymous statistics about content filtering."""

__version__ = "0.1.0"
