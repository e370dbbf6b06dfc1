"""The cell keys of a ClickHouse aggregation (`cells.Query`): each key's name in the frame and the
SQL that computes it from an event row; `packing` packs several into one UInt64."""

from __future__ import annotations

import dataclasses

_BUCKETS = {
    "hour": "toDateTime64(toStartOfHour(ts), 6, 'UTC')",
    "day": "toDateTime64(toStartOfDay(ts), 6, 'UTC')",
    "week": "toDateTime64(toMonday(ts), 6, 'UTC')",  # ISO week: Monday 00:00 UTC
}


def bucket_sql(bucket: str) -> str:
    """Start of the time bucket each row falls in (as `contributions.bucket_key`)."""
    return _BUCKETS[bucket]


@dataclasses.dataclass(frozen=True)
class Key:
    """A cell key: its name in the frame and the SQL that computes it from an event row."""

    name: str
    sql: str
    string: bool = True  # a dimension (String in the frame); else a bucket start (kept as is)
    column: str | None = None  # a dimension's column: grouped by its hash where that is exact
    not_null: bool = False  # the query keeps only rows where the column is not null
    bucket: str | None = None  # a time bucket's name ("hour", "day", "week")
    bits: int | None = None  # a small unsigned number below 2**bits (a flag: 1)


def dimension(column: str, not_null: bool = False) -> Key:
    """A dimension as a key; `not_null` when the query's conditions leave out its nulls."""
    return Key(column, f"CAST({column} AS String)", column=column, not_null=not_null)


def time_bucket(bucket: str) -> Key:
    """The start of each row's time bucket as the key `ts` (`bucket_sql`)."""
    return Key("ts", bucket_sql(bucket), string=False, bucket=bucket)


def flag(name: str, condition: str) -> Key:
    """A condition on the row as a key (UInt8, 1 where it holds)."""
    return Key(name, f"toUInt8({condition})", string=False, bits=1)
