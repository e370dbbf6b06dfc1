"""The one error every backend raises when the events cannot be read or landed now. It lives with
the storage, which raises it (the Parquet store, service/clickhouse/), so that storage imports
nothing from the engines; service/engine/interface.py names it in the `Backend` protocol."""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """The events cannot be read or landed now, for the reason the message gives (a ClickHouse server
    that does not answer, its tables not set up, an embedded ClickHouse directory held by another
    process). Every backend raises this type, or a subclass of it, from `Backend.check` and
    `Backend.landing_target`; the commands print the message and exit 1."""
