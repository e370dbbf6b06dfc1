"""A query's cell keys packed into one UInt64, so that the per-user stage groups by two 64-bit
numbers (cell, user_id) and the per-cell stage by one.

ClickHouse picks its GROUP BY hash table by the keys' width: up to 16 bytes of fixed-width keys
take its fastest 128-bit table, wider ones a 256-bit or serialized one. One dimension's hash and
`user_id` are 16 bytes; a second key (trending's period, a /query's second dimension or its time
bucket) made it 17 to 24 and the per-user stage measured up to twice as slow (trending per domain,
10M events: 487 ms against 233 ms packed). A single key is not packed (cells.py): with `user_id`
it fits already, and packing it measured no faster.

Each key gets a field of bits in the packed number:

- a time bucket: the bucket's index from the first bucket of the window (hour, day and ISO week
  are fixed lengths in UTC), as many bits as the window has buckets;
- a flag (trending's period): one bit;
- a dimension: the top bits of its value's 64-bit hash, as few as keep the hashes of every value
  in the snapshot distinct (the column's dictionary, dictionaries.py, holds them all), the
  all-ones code left for null.

The fields are mapped back in polars (`Packed.unpack`): hashes to values through the dictionaries,
indexes to bucket starts. Where the keys do not fit in 64 bits, a dimension has no dictionary
(two values share a hash) or a key is of another kind, `plan` returns None and the keys are grouped
as they are (cells.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Sequence

import numpy as np
import polars as pl

from service.api.windows import TimeRange, bucket_start
from service.clickhouse.store import ClickHouseSnapshot
from service.engine.clickhouse import dictionaries
from service.engine.clickhouse.keys import Key

PACKED = "_packed"  # the packed key's column in the query's result
_CODE = "_code"
_BUCKET_SECONDS = {"hour": 3600, "day": 86400, "week": 7 * 86400}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class Field:
    """One key's bits in the packed number: `(packed >> shift) & (2**bits - 1)`."""

    name: str
    sql: str                               # the field's value (below 2**bits) from an event row
    shift: int
    bits: int
    codes: pl.DataFrame | None = None      # a dimension: _CODE -> dictionaries.VALUE
    origin: dt.datetime | None = None      # a time bucket: the start of the bucket of index 0
    seconds: int = 0                       # a time bucket: its length


@dataclasses.dataclass(frozen=True)
class Packed:
    fields: Sequence[Field]

    @property
    def sql(self) -> str:
        parts = [f"bitShiftLeft(toUInt64({field.sql}), {field.shift})" for field in self.fields]
        packed = parts[0]
        for part in parts[1:]:
            packed = f"bitOr({packed}, {part})"
        return packed

    def unpack(self, result: pl.DataFrame) -> pl.DataFrame:
        """`result` with the packed column replaced by the keys (first, in the query's order)."""
        packed = result.get_column(PACKED).cast(pl.UInt64).to_numpy()
        columns = []
        for field in self.fields:
            value = pl.Series((packed >> np.uint64(field.shift)) & np.uint64((1 << field.bits) - 1), dtype=pl.UInt64)
            if field.codes is not None:
                columns.append(pl.DataFrame({_CODE: value}).join(field.codes, on=_CODE, how="left", maintain_order="left")
                               .get_column(dictionaries.VALUE).alias(field.name))
            elif field.origin is not None:
                micros = int((field.origin - _EPOCH) / dt.timedelta(microseconds=1))
                columns.append((value.cast(pl.Int64) * (field.seconds * 1_000_000) + micros)
                               .cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias(field.name))
            else:
                columns.append(value.cast(pl.UInt8).alias(field.name))
        return pl.DataFrame(columns).hstack(result.drop(PACKED))


_fitted: dict[tuple[int, bool, int], tuple[pl.DataFrame, tuple[int, pl.DataFrame] | None]] = {}
_FITTED_KEPT = 64
_lock = threading.Lock()


def _dimension_bits(known: pl.DataFrame, nullable: bool, most: int) -> tuple[int, pl.DataFrame] | None:
    """The fewest top bits of the values' hashes that keep them distinct (and off the all-ones
    code when it stands for null), with the codes; None when more than `most` bits are needed.
    Kept per dictionary frame (a new generation's dictionary is a new frame): some 15 ms for the
    26,000 cities, each query."""
    key = (id(known), nullable, most)
    with _lock:
        kept = _fitted.get(key)
    if kept is not None and kept[0] is known:
        return kept[1]
    fitted = _fit(known, nullable, most)
    with _lock:
        if len(_fitted) >= _FITTED_KEPT:
            _fitted.clear()
        _fitted[key] = (known, fitted)
    return fitted


def _fit(known: pl.DataFrame, nullable: bool, most: int) -> tuple[int, pl.DataFrame] | None:
    hashes = known.get_column(dictionaries.HASH).cast(pl.UInt64).to_numpy()
    for bits in range(max(1, (known.height + int(nullable)).bit_length()), most + 1):
        codes = pl.Series(hashes >> np.uint64(64 - bits), dtype=pl.UInt64)
        if codes.n_unique() == known.height and not (nullable and (codes == (1 << bits) - 1).any()):
            return bits, pl.DataFrame({_CODE: codes, dictionaries.VALUE: known.get_column(dictionaries.VALUE)})
    return None


def plan(snapshot: ClickHouseSnapshot, table: str, keys: Sequence[Key], time_range: TimeRange) -> Packed | None:
    """The keys packed into one UInt64 (see the module docstring), or None where they cannot be."""
    fixed: list[Field] = []
    dimensions: list[Key] = []
    for key in keys:
        if key.bucket is not None:
            seconds = _BUCKET_SECONDS[key.bucket]
            origin = bucket_start(time_range.start, key.bucket)
            last = (time_range.end - dt.timedelta(microseconds=1) - origin) // dt.timedelta(seconds=seconds)
            sql = f"intDiv(toInt64(toUnixTimestamp(ts)) - {int((origin - _EPOCH).total_seconds())}, {seconds})"
            fixed.append(Field(key.name, sql, 0, max(1, int(last).bit_length()), origin=origin, seconds=seconds))
        elif key.bits is not None:
            fixed.append(Field(key.name, key.sql, 0, key.bits))
        elif key.column is not None:
            dimensions.append(key)
        else:
            return None
    room = 64 - sum(field.bits for field in fixed)
    if room < 0:
        return None
    packed_dimensions = []
    for key in dimensions:
        assert key.column is not None
        known = dictionaries.values(snapshot, table, key.column)
        found = None if known is None else _dimension_bits(known, not key.not_null, room)
        if found is None:
            return None
        bits, codes = found
        room -= bits
        code = f"bitShiftRight({dictionaries.hashed(key.column, key.not_null)}, {64 - bits})"
        sql = code if key.not_null else f"coalesce({code}, {(1 << bits) - 1})"
        packed_dimensions.append((key.name, Field(key.name, sql, 0, bits, codes=codes)))
    by_name = {field.name: field for field in fixed} | dict(packed_dimensions)
    fields, shift = [], 0
    for key in keys:
        field = by_name[key.name]
        fields.append(dataclasses.replace(field, shift=shift))
        shift += field.bits
    return Packed(fields)
