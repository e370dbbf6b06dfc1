"""The ClickHouse engine (SIGNALS_ENGINE=clickhouse): SQL for the per-user and per-cell stages,
polars and the shared publication stages for the rest."""

from service.engine.clickhouse.engine import ClickHouseEngine

__all__ = ["ClickHouseEngine"]
