"""The ClickHouse tables, and their idempotent set-up (`python -m service data clickhouse-init`).

Two event tables with the stored columns of service/store/schema.py plus `generation` (the landing
that wrote the row: readers take rows of published generations only, and a date's data version is
the last generation that wrote rows for it, as the Parquet store's file names say), and `landings`,
one row per landing step (pending, then published) with the source files' SHA-256 hashes, so that
ingest stays idempotent and a landing cut short is swept (service/clickhouse/landing.py).

Layout like Plausible's `events_v2`: MergeTree partitioned by month, ORDER BY led by the day and
the dimensions the endpoints filter on. On a cluster (`--cluster NAME`): each table is a
ReplicatedMergeTree `<table>_local` on every node, and `<table>` a Distributed table over them
sharded by `cityHash64(user_id)`, so all rows of a user sit on one shard and the per-user stage
of every query runs shard-local; `landings` is one ReplicatedMergeTree that every node holds whole.
"""

from __future__ import annotations

from service.clickhouse.connection import ClickHouse, quote_name
from service.store import schema

LANDINGS = "landings"

_COLUMNS = {
    schema.SUPPRESSIONS: """
        ts DateTime64(6, 'UTC'),
        user_id UInt64,
        keyword String,
        domain LowCardinality(String),
        platform LowCardinality(String),
        page_context LowCardinality(String),
        country LowCardinality(String),
        region LowCardinality(Nullable(String)),
        county LowCardinality(Nullable(String)),
        city LowCardinality(Nullable(String)),
        suppressions Int32,
        generation UInt32""",
    schema.KEYWORD_CHANGES: """
        ts DateTime64(6, 'UTC'),
        user_id UInt64,
        keyword String,
        action LowCardinality(String),
        platform LowCardinality(String),
        country LowCardinality(String),
        generation UInt32""",
    LANDINGS: """
        generation UInt32,
        published UInt8,
        landed_at String,
        sources String,
        other_files Array(String)""",
}

_LAYOUT = {
    schema.SUPPRESSIONS: "PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, domain, platform, country, ts)",
    schema.KEYWORD_CHANGES: "PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, ts)",
    LANDINGS: "ORDER BY (generation, published)",
}


def statements(database: str, cluster: str | None = None) -> list[str]:
    """The CREATE statements, each IF NOT EXISTS (running them again changes nothing)."""
    db = quote_name(database)
    if cluster is None:
        return [f"CREATE TABLE IF NOT EXISTS {db}.{table} ({columns}\n) ENGINE = MergeTree {_LAYOUT[table]}"
                for table, columns in _COLUMNS.items()]
    on = f"ON CLUSTER {quote_name(cluster)}"
    made = []
    for table, columns in _COLUMNS.items():
        if table == LANDINGS:  # one ZooKeeper path for all nodes: every node holds all of it
            engine = f"ReplicatedMergeTree('/clickhouse/tables/all/{database}/{table}', '{{replica}}')"
            made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table} {on} ({columns}\n) ENGINE = {engine} {_LAYOUT[table]}")
            continue
        engine = f"ReplicatedMergeTree('/clickhouse/tables/{{shard}}/{database}/{table}', '{{replica}}')"
        made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table}_local {on} ({columns}\n) ENGINE = {engine} {_LAYOUT[table]}")
        made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table} {on} AS {db}.{table}_local "
                    f"ENGINE = Distributed({quote_name(cluster)}, {db}, {table}_local, cityHash64(user_id))")
    return made


def initialise(ch: ClickHouse, cluster: str | None = None) -> list[str]:
    """Create the database's tables where missing; returns the statements run."""
    done = statements(ch.database, cluster)
    for statement in done:
        ch.command(statement)
    return done


def missing_tables(ch: ClickHouse) -> list[str]:
    """The tables this service needs that the database does not have."""
    present = set(ch.frame("SELECT name FROM system.tables WHERE database = currentDatabase()")
                  .get_column("name").to_list())
    return [table for table in _COLUMNS if table not in present]


class SchemaMissing(RuntimeError):
    """The database lacks the service's tables."""


def require(ch: ClickHouse) -> None:
    """Raise SchemaMissing naming the command that creates the tables."""
    missing = missing_tables(ch)
    if missing:
        raise SchemaMissing(f"ClickHouse database {ch.describe()} has no table {', '.join(missing)}: "
                            f"run `python -m service data clickhouse-init` first")
