"""The ClickHouse tables, their idempotent set-up and their migration (`python -m service data
clickhouse-init`).

Two event tables with the stored columns of service/store/schema.py plus `generation` (the landing
that wrote the row: readers take rows of published generations only, and a date's data version is
the last generation that wrote rows for it, as the Parquet store's file names say), and `landings`,
one row per landing step (pending, then published) with the source files' SHA-256 hashes, so that
ingest stays idempotent and a landing cut short is swept (service/clickhouse/landing.py).

Layout like Plausible's `events_v2`: MergeTree partitioned by month, ORDER BY led by the day and
the dimensions the endpoints filter on; dimensions LowCardinality (not `keyword`: grouped by, it
measured slower as LowCardinality than as String); the small integers (`suppressions`,
`generation`) with the T64 codec before LZ4 (a quarter of the bytes, and scans of them faster). On a
cluster (`--cluster NAME`): each table is a ReplicatedMergeTree `<table>_local` on every node, and
`<table>` a Distributed table over them sharded by `cityHash64(user_id)`, so all rows of a user sit
on one shard and the per-user stage of every query runs shard-local; `landings` is one
ReplicatedMergeTree that every node holds whole.

Migration: `initialise` also brings the columns of tables made by an earlier version to the types
and codecs below (`migrations`: `ALTER TABLE ... MODIFY COLUMN`, or `ADD COLUMN` for a column that
is missing). Rows are not copied or lost: a codec change is a change of metadata (parts written
from then on, and parts merged, use it); a type change is a mutation that ClickHouse applies part
by part and resumes after a restart. The sort key and partitioning are not changed by a migration.
"""

from __future__ import annotations

from service.clickhouse.connection import ClickHouse, quote_name
from service.store import schema
from service.store.unavailable import BackendUnavailable

LANDINGS = "landings"

# Per table: column -> (type, codec); the codec as ClickHouse writes it back (system.columns), "" for
# the default.
_T64 = "CODEC(T64, LZ4)"
_DEFAULT_CODEC = "CODEC(Default)"
_COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    schema.SUPPRESSIONS: {
        "ts": ("DateTime64(6, 'UTC')", ""),
        "user_id": ("UInt64", ""),
        "keyword": ("String", ""),
        "domain": ("LowCardinality(String)", ""),
        "platform": ("LowCardinality(String)", ""),
        "page_context": ("LowCardinality(String)", ""),
        "country": ("LowCardinality(String)", ""),
        "region": ("LowCardinality(Nullable(String))", ""),
        "county": ("LowCardinality(Nullable(String))", ""),
        "city": ("LowCardinality(Nullable(String))", ""),
        "suppressions": ("Int32", _T64),
        "generation": ("UInt32", _T64),
    },
    schema.KEYWORD_CHANGES: {
        "ts": ("DateTime64(6, 'UTC')", ""),
        "user_id": ("UInt64", ""),
        "keyword": ("String", ""),
        "action": ("LowCardinality(String)", ""),
        "platform": ("LowCardinality(String)", ""),
        "country": ("LowCardinality(String)", ""),
        "generation": ("UInt32", _T64),
    },
    LANDINGS: {
        "generation": ("UInt32", ""),
        "published": ("UInt8", ""),
        "landed_at": ("String", ""),
        "sources": ("String", ""),
        "other_files": ("Array(String)", ""),
    },
}

_LAYOUT = {
    schema.SUPPRESSIONS: "PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, domain, platform, country, ts)",
    schema.KEYWORD_CHANGES: "PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, ts)",
    LANDINGS: "ORDER BY (generation, published)",
}


def _column(name: str, kind: str, codec: str) -> str:
    return f"{name} {kind}" + (f" {codec}" if codec else "")


def _columns(table: str) -> str:
    return "".join(f"\n        {_column(name, *spec)}," for name, spec in _COLUMNS[table].items()).rstrip(",")


def statements(database: str, cluster: str | None = None) -> list[str]:
    """The CREATE statements, each IF NOT EXISTS (running them again changes nothing)."""
    db = quote_name(database)
    if cluster is None:
        return [f"CREATE TABLE IF NOT EXISTS {db}.{table} ({_columns(table)}\n) ENGINE = MergeTree {_LAYOUT[table]}"
                for table in _COLUMNS]
    on = f"ON CLUSTER {quote_name(cluster)}"
    made = []
    for table in _COLUMNS:
        columns = _columns(table)
        if table == LANDINGS:  # one ZooKeeper path for all nodes: every node holds all of it
            engine = f"ReplicatedMergeTree('/clickhouse/tables/all/{database}/{table}', '{{replica}}')"
            made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table} {on} ({columns}\n) ENGINE = {engine} {_LAYOUT[table]}")
            continue
        engine = f"ReplicatedMergeTree('/clickhouse/tables/{{shard}}/{database}/{table}', '{{replica}}')"
        made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table}_local {on} ({columns}\n) ENGINE = {engine} {_LAYOUT[table]}")
        made.append(f"CREATE TABLE IF NOT EXISTS {db}.{table} {on} AS {db}.{table}_local "
                    f"ENGINE = Distributed({quote_name(cluster)}, {db}, {table}_local, cityHash64(user_id))")
    return made


def migrations(ch: ClickHouse, cluster: str | None = None) -> list[str]:
    """The ALTER statements that bring existing tables' columns to `_COLUMNS` (types and codecs);
    none when they are already there. On a cluster, the `<table>_local` tables (where the rows
    are), and the Distributed table too where a type changes."""
    db = quote_name(ch.database)
    on = f" ON CLUSTER {quote_name(cluster)}" if cluster else ""
    found = ch.frame("SELECT table, name, type, compression_codec AS codec FROM system.columns "
                     "WHERE database = currentDatabase()")
    present: dict[str, dict[str, tuple[str, str]]] = {}
    for table, name, kind, codec in found.iter_rows():
        present.setdefault(table, {})[name] = (kind, "" if codec == _DEFAULT_CODEC else codec)
    altered = []
    for table, columns in _COLUMNS.items():
        stored = f"{table}_local" if cluster and table != LANDINGS else table
        have = present.get(stored)
        if have is None:  # not created (yet): nothing to migrate
            continue
        for name, (kind, codec) in columns.items():
            if name not in have:
                altered.append(f"ALTER TABLE {db}.{stored}{on} ADD COLUMN IF NOT EXISTS {_column(name, kind, codec)}")
                if stored != table:
                    altered.append(f"ALTER TABLE {db}.{table}{on} ADD COLUMN IF NOT EXISTS {name} {kind}")
            elif have[name] != (kind, codec):
                altered.append(f"ALTER TABLE {db}.{stored}{on} MODIFY COLUMN {_column(name, kind, codec or _DEFAULT_CODEC)}")
                if stored != table and have[name][0] != kind:
                    altered.append(f"ALTER TABLE {db}.{table}{on} MODIFY COLUMN {name} {kind}")
    return altered


def initialise(ch: ClickHouse, cluster: str | None = None) -> list[str]:
    """Create the database's tables where missing and migrate existing ones (`migrations`); returns
    the statements run. Running it again changes nothing."""
    done = statements(ch.database, cluster)
    for statement in done:
        ch.command(statement)
    altered = migrations(ch, cluster)
    for statement in altered:
        ch.command(statement, settings={"mutations_sync": 2})
    return done + altered


def missing_tables(ch: ClickHouse) -> list[str]:
    """The tables this service needs that the database does not have."""
    present = set(ch.frame("SELECT name FROM system.tables WHERE database = currentDatabase()")
                  .get_column("name").to_list())
    return [table for table in _COLUMNS if table not in present]


class SchemaMissing(BackendUnavailable):
    """The database lacks the service's tables."""


def require(ch: ClickHouse) -> None:
    """Raise SchemaMissing naming the command that creates the tables."""
    missing = missing_tables(ch)
    if missing:
        raise SchemaMissing(f"ClickHouse database {ch.describe()} has no table {', '.join(missing)}: "
                            f"run `python -m service data clickhouse-init` first")
