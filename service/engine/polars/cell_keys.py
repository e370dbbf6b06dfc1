"""One grouping key per (cell, user): the user's stored id with its low bits replaced by the cell's
dimension codes.

Every capped measure starts by grouping a window's rows by cell and user (`contributions.cell_contributions`):
tens of millions of rows into nearly as many groups at 100M events, most of a cold answer's time.
polars groups one UInt64 column about 1.6 times as fast as the two columns (dimension code, 64-bit
user id) it would otherwise hash together (docs/benchmarks.md, "Cold answers at 100M events").

A user's stored id is a keyed 64-bit hash (store/user_ids.py). Clearing its low `b` bits and writing
the cell's codes there gives one number per row, and the grouping by it is the grouping by (cell,
user) exactly when no two users of the table agree on all the other bits, which the caller knows
(engine/polars/user_keys.py learns the largest such `b` per snapshot). Where the codes need more bits
than that (a time bucket, several large dimensions), there is no packing and the caller groups by
the columns themselves: the same groups, so the same answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

USER = "user_id"
CELL_USER = "_cell_user"  # the packed key's column while grouping


@dataclasses.dataclass(frozen=True)
class Packing:
    """How to group `keys` and the user on one column, and how to get the keys back from it."""

    key: pl.Expr            # the packed UInt64, named CELL_USER
    unpacked: list[pl.Expr]  # each key column from CELL_USER, with its Enum type

    @classmethod
    def of(cls, schema_of: pl.Schema, keys: Sequence[str | pl.Expr], bits: int) -> Packing | None:
        """The packing of `keys` (columns of a frame of schema `schema_of`) when each is an Enum
        column and their codes fit in `bits` bits; else None. A key's code is its Enum code, and
        one more value for null (a row located only down to a coarser level, say)."""
        if not keys or bits <= 0 or not all(isinstance(k, str) for k in keys):
            return None
        names = [str(k) for k in keys]
        dtypes = [dtype for name in names if isinstance(dtype := schema_of[name], pl.Enum)]
        if len(dtypes) < len(names):
            return None
        sizes = [dtype.categories.len() for dtype in dtypes]
        widths = [max(1, size.bit_length()) for size in sizes]  # codes 0..size-1, and size for null
        if sum(widths) > bits:
            return None
        code = pl.lit(0, dtype=pl.UInt64)
        unpacked, shift = [], 0
        for name, dtype, size, width in zip(names, dtypes, sizes, widths, strict=True):
            own = pl.col(name).to_physical().cast(pl.UInt64).fill_null(size)
            code = code | (own * (1 << shift))
            back = (pl.col(CELL_USER) // (1 << shift)) & ((1 << width) - 1)
            physical = pl.Series([], dtype=dtype).to_physical().dtype
            unpacked.append(pl.when(back < size).then(back).otherwise(None).cast(physical).cat.to(dtype).alias(name))
            shift += width
        mask = ((1 << 64) - 1) ^ ((1 << bits) - 1)
        key = ((pl.col(USER) & pl.lit(mask, dtype=pl.UInt64)) | code).alias(CELL_USER)
        return cls(key, unpacked)
