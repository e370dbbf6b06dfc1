"""Seeded randomness for the demo: uniform numbers from `pyarrow.compute.random`, one derived seed
per draw, and weighted choices by binary search over cumulative weights in polars (all vectorised).
The same seed and the same sequence of draws give the same numbers."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import polars as pl
import pyarrow.compute as pc


class Random:
    """Seeded uniform numbers (pyarrow's generator, one derived seed per draw) and choices."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._draws = 0

    def uniform(self, n: int) -> pl.Series:
        """n floats in [0, 1)."""
        self._draws += 1
        digest = hashlib.blake2b(f"{self._seed}/{self._draws}".encode(), digest_size=8).digest()
        return pl.Series(pc.random(n, initializer=int.from_bytes(digest, "big") >> 1))

    def choice(self, n: int, weights: Sequence[float] | pl.Series) -> pl.Series:
        """n indices into `weights`, each drawn with probability proportional to its weight."""
        weights = pl.Series(weights, dtype=pl.Float64)
        cumulative = weights.cum_sum() / weights.sum()
        picks = cumulative.search_sorted(self.uniform(n), side="right")
        return picks.clip(upper_bound=weights.len() - 1).cast(pl.UInt32)

    def normal(self, n: int) -> pl.Series:
        """n standard normal floats (Box-Muller)."""
        u1, u2 = self.uniform(n), self.uniform(n)
        return ((-2.0 * (1.0 - u1).log()).sqrt() * (2.0 * math.pi * u2).cos()).alias("normal")

    def permutation(self, n: int) -> pl.Series:
        return self.uniform(n).arg_sort().cast(pl.UInt32)
