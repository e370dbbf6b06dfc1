"""The noise behind published numbers, carried next to them when asked for: compare's
"beyond noise" test and the intervals need each published count's noise standard deviation,
which the privacy stage reports (`Privacy.publish(noise_std=True)`) under `<column>_std`."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import polars as pl

STD = "_std"  # suffix of a count's noise standard deviation
# Suffix of how far publication/reconcile.py lowered a user count below its published draw (only
# with intervals: engine/intervals.py lifts the count's interval top by it; dropped with the STDs).
LOWERED = "_lowered" + STD


def std_columns(noise: bool, names: Mapping[str, str], present: Collection[str] = ()) -> list[pl.Expr]:
    """With `noise`: each published column's `<column>_std`, named after the output field
    (`unique_users_std` -> `users_est_std`), and its `<column>_lowered_std` when `present` (the
    frame's columns) holds one; none otherwise."""
    if not noise:
        return []
    return [pl.col(f"{column}{STD}").cast(pl.Float64).alias(f"{name}{STD}") for column, name in names.items()] + [
        pl.col(f"{column}{LOWERED}").cast(pl.Float64).alias(f"{name}{LOWERED}") for column, name in names.items()
        if f"{column}{LOWERED}" in present]
