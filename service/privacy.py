"""The privacy stage: every number the service publishes passes through `Privacy.publish`.

For now it only guarantees the published shape (non-negative integers). Noise, contribution
caps and small-cell suppression plug in here (issue: Privacy) without touching the engine's
call sites: each engine query calls `publish` exactly once on its aggregated cells, and
computes derived values (ranks, net_adds, growth) from what `publish` returned.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

import polars as pl

from service.windows import TimeRange


@dataclasses.dataclass(frozen=True)
class CellContext:
    """What identifies the cells of one aggregated frame, besides their dimension values."""

    table: str                 # "suppressions" | "keyword_changes"
    dims: Sequence[str]        # columns of the frame that identify a cell (may include "ts")
    measures: Sequence[str]    # columns holding published numbers
    time_range: TimeRange      # the range the cells cover (per-row buckets when "ts" in dims)
    as_of: dt.datetime
    bucket: str | None = None  # when "ts" in dims: hour | day | week


class Privacy:
    def publish(self, frame: pl.DataFrame, cell: CellContext) -> pl.DataFrame:
        """Return the frame with every measure column as a published (non-negative) integer."""
        return frame.with_columns(
            pl.col(m).fill_null(0).clip(lower_bound=0).round(0).cast(pl.Int64) for m in cell.measures
        )
