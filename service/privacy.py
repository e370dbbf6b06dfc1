"""The privacy stage: every number the service publishes passes through `Privacy.publish`.

What it does to an aggregated frame (one row per cell):

1. **Consistent noise.** Each cell is described canonically — table, the dimension values (a
   grouped value or a filter's set of values), the time range it covers, and the data version of
   that range (the last generation that landed data for any of its dates) — and that
   description is hashed with HMAC-SHA256 under the secret. The 256-bit digest gives two 32-bit
   uniform numbers for each measure, turned into two geometric variables whose difference is
   two-sided geometric ("discrete Laplace") noise. The same cell therefore gets the same noise
   whichever endpoint or query shape asks for it, and asking again cannot average it away —
   not in this hour and not in later hours (`as_of` is deliberately not part of the
   description: a finished day bucket keeps its noise for good), while new data for a cell's
   dates does give it new noise (otherwise two answers around an ingest would difference out
   the new rows exactly).
2. **Small-cell suppression.** A cell whose *noisy* user count is below k is not published: its
   row is dropped (ranked lists, geo lists, query results) or its numbers shown as 0 (a
   timeseries bucket, a sub-count).
3. **Post-processing.** Published numbers are non-negative integers.

Per-user contribution caps happen before this stage, where the rows are (the engine's
`capped_cells`), with the caps from the same `PrivacyParams`; the noise scale is calibrated to
them: alpha = exp(-epsilon / sensitivity), sensitivity = the cap for sums, 1 for distinct counts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import math
import struct
from collections.abc import Mapping, Sequence

import polars as pl

from service.windows import TimeRange, bucket_step

SUPPRESSIONS = "suppressions"
EVENTS = "events"
UNIQUE_USERS = "unique_users"
KEYWORD_COUNT = "keyword_count"
# Each measure has its own slot of the cell's digest: 2 x 32 bits per slot, 4 slots = 256 bits.
_SLOTS = {SUPPRESSIONS: 0, EVENTS: 1, UNIQUE_USERS: 2, KEYWORD_COUNT: 3}
_U32 = 2.0**32
_NOISE_DOMAIN = b"signals privacy noise v1"


@dataclasses.dataclass(frozen=True)
class PrivacyParams:
    """The privacy budget, caps and threshold (settings SIGNALS_PRIVACY_*)."""

    epsilon_suppressions: float = 1.0
    epsilon_events: float = 1.0
    epsilon_users: float = 1.0
    cap_suppressions: int = 50  # most suppressions one user adds to one cell
    cap_events: int = 20        # most events one user adds to one cell
    min_users: int = 10         # k: cells with fewer (noisy) users are not published

    def __post_init__(self) -> None:
        for name in ("epsilon_suppressions", "epsilon_events", "epsilon_users"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.cap_suppressions < 1 or self.cap_events < 1 or self.min_users < 0:
            raise ValueError("caps must be at least 1 and min_users at least 0")

    @classmethod
    def exact(cls) -> PrivacyParams:
        """No noise, no caps, no suppression: only for tests that check exact aggregates."""
        return cls(epsilon_suppressions=math.inf, epsilon_events=math.inf, epsilon_users=math.inf,
                   cap_suppressions=2**62, cap_events=2**62, min_users=0)

    def sensitivity(self, measure: str) -> float:
        """How much one user can move the measure of one cell. keyword_count: each user brings at
        most cap_events rows (so keywords) into it (engine/geo_heat.py)."""
        return {SUPPRESSIONS: self.cap_suppressions, EVENTS: self.cap_events, KEYWORD_COUNT: self.cap_events}.get(measure, 1)

    def epsilon(self, measure: str) -> float:
        return {SUPPRESSIONS: self.epsilon_suppressions, EVENTS: self.epsilon_events}.get(measure, self.epsilon_users)

    def alpha(self, measure: str) -> float:
        """The geometric parameter: P(noise = z) is proportional to alpha ** |z|."""
        return math.exp(-self.epsilon(measure) / self.sensitivity(measure))

    def noise_std(self, measure: str) -> float:
        alpha = self.alpha(measure)
        return math.sqrt(2 * alpha) / (1 - alpha)


@dataclasses.dataclass(frozen=True)
class Published:
    """One published number of a cell: the frame column holding its true value, and which
    measure it is. `period` and `extra` make it a different cell than the row's own (trending's
    recent and baseline periods; keyword activity's per-action counts). `users` is the frame
    column with the true user count of that cell, which decides suppression."""

    column: str
    measure: str
    users: str
    period: TimeRange | None = None
    extra: tuple[tuple[str, str], ...] = ()
    when_suppressed: str = "drop"  # "drop" the row | "zero" the cell's numbers


@dataclasses.dataclass(frozen=True)
class CellContext:
    """What identifies the cells of one aggregated frame."""

    table: str                                   # "suppressions" | "keyword_changes"
    dims: Sequence[str]                          # row columns identifying a cell ("ts" = bucket start)
    published: Sequence[Published]
    time_range: TimeRange                        # the range the cells cover (clips buckets)
    bucket: str | None = None                    # when "ts" in dims: hour | day | week
    fixed: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # filters, subject
    # UTC date -> last generation that changed it (EventFrames.versions[table]); missing = 0.
    versions: Mapping[dt.date, int] = dataclasses.field(default_factory=dict)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def data_version(versions: Mapping[dt.date, int], start: dt.datetime, end: dt.datetime) -> int:
    """The last generation that changed any date of [start, end): a cell's data version."""
    if not versions or end <= start:
        return 0
    day, last = start.astimezone(dt.UTC).date(), (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    version = 0
    while day <= last:
        version = max(version, versions.get(day, 0))
        day += dt.timedelta(days=1)
    return version


def _values_text(values: Sequence[str]) -> str:
    """Length-prefixed, sorted, distinct: unambiguous whatever characters the values hold."""
    distinct = sorted(set(values))
    return f"{len(distinct)}:" + "".join(f"{len(v.encode())}:{v}" for v in distinct)


class Privacy:
    def __init__(self, secret: str, params: PrivacyParams | None = None) -> None:
        self.params = params or PrivacyParams()
        self._key = hmac.digest(secret.encode(), _NOISE_DOMAIN, "sha256")

    @classmethod
    def exact(cls) -> Privacy:
        """No noise, caps or suppression (tests of exact aggregates only)."""
        return cls("exact", PrivacyParams.exact())

    # -- cell descriptions ---------------------------------------------------------------

    def _messages(self, frame: pl.DataFrame, cell: CellContext, published: Published) -> list[str]:
        """The canonical description of each row's cell for one Published group."""
        row_dims = [d for d in cell.dims if d != "ts"]
        constraints: dict[str, pl.Expr] = {}
        for dim, values in cell.fixed.items():
            if dim not in row_dims:
                constraints[dim] = pl.lit(f"{dim}={_values_text(values)}")
        for dim, value in published.extra:
            constraints[dim] = pl.lit(f"{dim}={_values_text([value])}")
        for dim in row_dims:
            column = pl.col(dim)
            constraints[dim] = pl.concat_str(
                [pl.lit(f"{dim}=1:"), column.str.len_bytes().cast(pl.String), pl.lit(":"), column]
            )
        if published.period is not None or "ts" not in cell.dims:
            span = published.period or cell.time_range
            version = data_version(cell.versions, span.start, span.end)
            time_parts = [pl.lit(f"{version}|{_iso(span.start)}/{_iso(span.end)}")]
        else:
            # One range per bucket, clipped to the window; each with the version of its own dates.
            assert cell.bucket is not None
            window, step = cell.time_range, bucket_step(cell.bucket)
            spans = {}
            for start in frame.get_column("ts").unique().to_list():
                span_start, span_end = max(start, window.start), min(start + step, window.end)
                version = data_version(cell.versions, span_start, span_end)
                spans[start] = f"{version}|{_iso(span_start)}/{_iso(span_end)}"
            time_parts = [pl.col("ts").replace_strict(spans, return_dtype=pl.String)]
        parts = [pl.lit(f"v2|{cell.table}|"), *time_parts]
        for dim in sorted(constraints):
            parts += [pl.lit("|"), constraints[dim]]
        return frame.select(pl.concat_str(parts).alias("m")).get_column("m").to_list()

    def _uniforms(self, messages: list[str]) -> list[tuple[int, ...]]:
        """Eight 32-bit unsigned integers per message, from HMAC-SHA256 under the secret."""
        key = self._key
        digests = b"".join(hmac.digest(key, m.encode(), "sha256") for m in messages)
        flat = struct.unpack(f"<{8 * len(messages)}I", digests)
        return [flat[i::8] for i in range(8)]

    # -- the stage -----------------------------------------------------------------------

    def publish(self, frame: pl.DataFrame, cell: CellContext) -> pl.DataFrame:
        """Noisy, non-negative Int64 numbers for every Published column; suppressed cells dropped
        or zeroed. Other columns pass through unchanged."""
        if frame.height == 0:
            return frame.with_columns(pl.col(p.column).cast(pl.Int64) for p in cell.published)
        groups: dict[tuple, list[Published]] = {}
        for item in cell.published:
            groups.setdefault((item.period, item.extra, item.users), []).append(item)
        noisy: dict[str, pl.Series] = {}
        drop = pl.Series([False] * frame.height)
        for (_period, _extra, users), items in groups.items():
            uniforms = self._uniforms(self._messages(frame, cell, items[0]))
            users_noisy = self._noisy(frame.get_column(users), UNIQUE_USERS, uniforms)
            below = users_noisy < self.params.min_users
            for item in items:
                # The cell's own user count was just drawn; any other measure gets its own slot.
                value = users_noisy if item.column == users else \
                    self._noisy(frame.get_column(item.column), item.measure, uniforms)
                if item.when_suppressed == "zero":
                    value = pl.select(pl.when(below).then(0).otherwise(value)).to_series()
                else:
                    drop = drop | below
                noisy[item.column] = value
        result = frame.with_columns(series.alias(name) for name, series in noisy.items())
        return result.filter(~drop) if drop.any() else result

    def _noisy(self, true: pl.Series, measure: str, uniforms: list[tuple[int, ...]]) -> pl.Series:
        true = true.fill_null(0).cast(pl.Int64)
        alpha = self.params.alpha(measure)
        if alpha == 0.0:  # infinite epsilon: no noise
            return true.clip(lower_bound=0)
        slot = _SLOTS[measure]
        log_alpha = math.log(alpha)
        frame = pl.DataFrame({
            "t": true,
            "a": pl.Series(uniforms[2 * slot], dtype=pl.Float64),
            "b": pl.Series(uniforms[2 * slot + 1], dtype=pl.Float64),
        })

        def geometric(column: str) -> pl.Expr:
            # Inverse CDF of the geometric distribution on {0, 1, ...} with P(g) = (1 - alpha) alpha^g.
            u = (pl.col(column) + 0.5) / _U32
            return (u.log() / log_alpha).floor().cast(pl.Int64)

        return frame.select(
            (pl.col("t") + geometric("a") - geometric("b")).clip(lower_bound=0).alias("noisy")
        ).to_series()


def noise_key_fingerprint(secret: str) -> str:
    """A short, non-reversible fingerprint of the noise key (for logs: which secret is in use)."""
    return hashlib.sha256(hmac.digest(secret.encode(), _NOISE_DOMAIN, "sha256")).hexdigest()[:8]
