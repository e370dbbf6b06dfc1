"""The noise behind published numbers, carried next to them when asked for: compare's
"beyond noise" test and the intervals need each published count's noise standard deviation,
which the privacy stage reports (`Privacy.publish(noise_std=True)`) under `<column>_std`."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

STD = "_std"  # suffix of a count's noise standard deviation


def std_columns(noise: bool, names: Mapping[str, str]) -> list[pl.Expr]:
    """With `noise`: each published column's `<column>_std`, named after the output field
    (`unique_users_std` -> `users_est_std`); none otherwise."""
    if not noise:
        return []
    return [pl.col(f"{column}{STD}").cast(pl.Float64).alias(f"{name}{STD}") for column, name in names.items()]
