"""The two ways a run stops (they decide the exit status)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input, found before anything was written (exit status 2)."""


class ReportFailed(Exception):
    """One report could not be refreshed; the sheet keeps what it had (exit status 1)."""
