"""`data count`: the exact number of landed rows per table, on either engine (published data only)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

from service.settings import Settings
from service.store import layout, reader, schema


def count(settings: Settings, tables: Sequence[str], *, since: dt.datetime | None = None,
          until: dt.datetime | None = None) -> dict[str, int]:
    """{table: rows} of the published generation, with `since` <= ts < `until` where given."""
    if settings.uses_clickhouse:
        return _count_clickhouse(settings, tables, since, until)
    generation = layout.read_generation(settings.data_dir)
    counts = {}
    for table in tables:
        files = reader.partition_files(settings.data_dir, table, generation)
        if not files:
            counts[table] = 0
            continue
        scan = pl.scan_parquet(files, hive_partitioning=False).select(pl.col("ts").cast(schema.TS))
        if since is not None:
            scan = scan.filter(pl.col("ts") >= pl.lit(since).cast(schema.TS))
        if until is not None:
            scan = scan.filter(pl.col("ts") < pl.lit(until).cast(schema.TS))
        counts[table] = int(scan.select(pl.len()).collect().item())
    return counts


def _count_clickhouse(settings: Settings, tables: Sequence[str], since: dt.datetime | None,
                      until: dt.datetime | None) -> dict[str, int]:
    from service import backend
    from service.clickhouse import schema as ch_schema
    from service.clickhouse.landing import published_generation

    ch = backend.clickhouse(settings, deadline=False)
    try:
        ch_schema.require(ch)
        generation = published_generation(ch)
        counts = {}
        for table in tables:
            conditions = ["generation <= {g:UInt32}"]
            params: dict[str, object] = {"g": generation}
            # (the bounds are datetimes, written by us: no text of the caller's reaches the SQL)
            if since is not None:
                conditions.append(f"ts >= toDateTime64('{_literal(since)}', 6, 'UTC')")
            if until is not None:
                conditions.append(f"ts < toDateTime64('{_literal(until)}', 6, 'UTC')")
            query = f"SELECT count() AS n FROM {table} WHERE {' AND '.join(conditions)}"
            counts[table] = int(ch.frame(query, params).item())
        return counts
    finally:
        ch.close()


def _literal(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
