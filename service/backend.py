"""What holds the events and what computes on them, from the settings (SIGNALS_ENGINE): the one
place that chooses between the Parquet store with the polars engine and ClickHouse.

Every process that reads or lands events gets its store, engine and landing target here: the web
process (service/app.py, service/wsgi.py), the alert worker (service/cli/worker.py) and the data
commands (service/cli/data.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from service.settings import Settings

# Imported where used: gunicorn.conf.py imports this module in the master, which must not load
# polars or open a database (service/wsgi.py).
if TYPE_CHECKING:
    from service.privacy import Privacy
    from service.store.target import LandingTarget


def embedded(settings: Settings) -> bool:
    """Events in embedded ClickHouse (chdb://): one process at a time may open its directory."""
    return settings.uses_clickhouse and settings.clickhouse_url.startswith("chdb://")


def web_workers_refusal(settings: Settings, workers: int) -> str | None:
    """Why the web process must not start with `workers` workers, if it must not."""
    if embedded(settings) and workers > 1:
        return (f"SIGNALS_CLICKHOUSE_URL is embedded ClickHouse (chdb://), which one process at a time can "
                f"open, but {workers} web workers are configured: set WEB_CONCURRENCY=1, or use a ClickHouse "
                f"server (SIGNALS_CLICKHOUSE_URL=http://...) to run several")
    return None


def clickhouse(settings: Settings, *, deadline: bool = True) -> Any:
    """The ClickHouse connection of SIGNALS_CLICKHOUSE_URL; queries carry the compute deadline
    (max_execution_time) unless `deadline` is off (landing has none)."""
    from service.clickhouse.connection import ClickHouse

    return ClickHouse(settings.clickhouse_url,
                      deadline_seconds=settings.compute_deadline_seconds if deadline else None)


def event_store(settings: Settings) -> Any:
    """The store readers take snapshots from: `EventStore` (Parquet) or `ClickHouseStore`."""
    if settings.uses_clickhouse:
        from service.clickhouse.store import ClickHouseStore

        return ClickHouseStore(clickhouse(settings))
    from service.store.reader import EventStore

    return EventStore(settings.data_dir)


def engine(settings: Settings, privacy: Privacy) -> Any:
    """The engine for the store's snapshots: `Engine` (polars) or `ClickHouseEngine`."""
    if settings.uses_clickhouse:
        from service.engine.clickhouse import ClickHouseEngine

        return ClickHouseEngine(privacy)
    from service.engine import Engine

    return Engine(privacy)


def landing_target(settings: Settings) -> LandingTarget:
    """Where `data ingest` and `data demo` land rows (quarantine files: the data directory either way)."""
    if settings.uses_clickhouse:
        from service.clickhouse import schema
        from service.clickhouse.landing import ClickHouseTarget

        ch = clickhouse(settings, deadline=False)
        schema.require(ch)
        return ClickHouseTarget(ch, settings.data_dir)
    from service.store.target import ParquetTarget

    return ParquetTarget(settings.data_dir)
