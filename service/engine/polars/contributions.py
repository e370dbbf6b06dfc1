"""The polars engine's aggregation helpers: each cell's users and sums with the contributions
behind them (`cell_contributions`), the time bucket key, and the guards against null keys."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from service.api.windows import polars_every
from service.engine.measures import EVENTS, SUPPRESSIONS, TOTAL, UNIQUE_USERS
from service.engine.polars.cell_keys import CELL_USER, Packing
from service.privacy import PILOT, Contributions, PrivacyParams, reachable_rows


def cell_contributions(rows: pl.DataFrame | pl.LazyFrame | Sequence[pl.DataFrame | pl.LazyFrame],
                       keys: Sequence[str | pl.Expr], params: PrivacyParams,
                       per_user_extra: Sequence[pl.Expr] = (), per_cell_extra: Sequence[pl.Expr] = (),
                       user_bits: int = 0) -> tuple[pl.DataFrame, Contributions]:
    """Per cell: unique_users and the pilot sums of suppressions and events; and the users' totals
    per cell behind them that a cap can reach, with each cell's exact totals (what the privacy
    stage caps, per cell, before summing).

    Two stages: per cell and user (each user's totals), then per cell (the number of users, which
    is the exact distinct count, the pilot sums and the exact sums). With no keys, one row of
    totals. `per_user_extra` adds aggregations to the first stage (their columns are not
    contributions) and `per_cell_extra` to the second, so a query needing more per-user work
    (geo-heat's keyword count) does it in the same pass.

    `rows` may be a list of parts whose cells are disjoint (`slicing.bucket_parts`: the time
    bucket is among the keys and no bucket spans two parts): both stages then run part by part,
    so the per-(cell, user) intermediate, the largest temporary of a query, is never whole in
    memory (a part is at least one bucket). The contributions keep only the users whose total in
    a cell is above the smallest cap the privacy stage can choose (`privacy.reachable_rows`), next
    to the cells' exact totals: the others lose nothing to any cap, and they are most of the rows
    (a user's one event in a cell). With no keys every user is kept (one cell; no exact total
    needed).

    `user_bits`: how many low bits of the rows' user ids may carry the cell's codes instead
    (engine/polars/cell_keys.py; 0: none): the first stage then groups by one packed column, which is
    faster and gives the same groups.
    """
    names = [k if isinstance(k, str) else k.meta.output_name() for k in keys]
    totals = [
        *(pl.col(m).clip(upper_bound=params.pilot_cap).sum().alias(f"{m}{PILOT}") for m in (SUPPRESSIONS, EVENTS)),
        *(pl.col(m).sum().alias(f"{m}{TOTAL}") for m in (SUPPRESSIONS, EVENTS)),
        pl.len().cast(pl.Int64).alias(UNIQUE_USERS),
        *per_cell_extra,
    ]
    parts = [rows] if isinstance(rows, (pl.DataFrame, pl.LazyFrame)) else list(rows)
    if len(parts) > 1 and "ts" not in names:
        raise ValueError("parts need disjoint cells: a time bucket among the keys")
    cell_parts, user_parts = [], []
    for part in parts:
        sums = (pl.col("suppressions").cast(pl.Int64).sum().alias(SUPPRESSIONS),
                pl.len().cast(pl.Int64).alias(EVENTS), *per_user_extra)
        packing = Packing.of(part.lazy().collect_schema(), keys, user_bits) if user_bits else None
        if packing is None:
            grouped = part.lazy().group_by([*keys, "user_id"]).agg(*sums).drop("user_id")
        else:
            grouped = (part.lazy().group_by(packing.key).agg(*sums)
                       .select(*packing.unpacked, pl.exclude(CELL_USER)))
        per_user = grouped.collect()
        cell_parts.append(per_user.group_by(names).agg(totals) if names else per_user.select(totals))
        kept = reachable_rows(per_user, (SUPPRESSIONS, EVENTS), params) if names else per_user
        user_parts.append(kept.select(*names, SUPPRESSIONS, EVENTS))
        del per_user  # a part's intermediate goes before the next one's is built
    cells = _joined(cell_parts)
    exact = cells.select(*names, *(pl.col(f"{m}{TOTAL}").alias(m) for m in (SUPPRESSIONS, EVENTS)))
    contributions = Contributions(_joined(user_parts), tuple(names), exact if names else None)
    return cells.drop(f"{m}{TOTAL}" for m in (SUPPRESSIONS, EVENTS)), contributions


def _joined(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical", rechunk=False)


def bucket_key(bucket: str) -> pl.Expr:
    """Start of the time bucket (hour, UTC day, ISO week) each row falls in, named `ts`."""
    return pl.col("ts").dt.truncate(polars_every(bucket)).alias("ts")


def key_guards(frame: pl.DataFrame, columns: Iterable[str]) -> list[pl.Expr]:
    """Conditions keeping the rows where none of `columns` is null, for the columns that have nulls.

    An event located only down to a coarser level (no county outside the US, say) is not a unit of
    the finer one. Filtering before grouping rather than dropping the null group afterwards: that
    group can hold most rows (counties), and its distinct counts would be computed only to be
    thrown away. Columns without nulls get no condition (checking is a bitmap count).
    """
    return [pl.col(column).is_not_null() for column in columns if frame.get_column(column).null_count()]
