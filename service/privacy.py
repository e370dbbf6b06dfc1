"""The privacy stage: every number the service publishes passes through `Privacy.publish`.

What it does to an aggregated frame (one row per cell):

1. **Consistent noise.** Each cell is described canonically — table, the dimension values (a
   grouped value or a filter's set of values), the time range it covers, and the data version of
   that range (the last generation that landed data for any of its dates) — and that
   description is hashed with HMAC-SHA512 under the secret. The 512-bit digest gives two 32-bit
   uniform numbers for each of up to eight draws, each turned into two geometric variables whose
   difference is two-sided geometric ("discrete Laplace") noise. The same cell therefore gets the
   same noise whichever endpoint or query shape asks for it, and asking again cannot average it
   away — not in this hour and not in later hours (`as_of` is deliberately not part of the
   description: a finished day bucket keeps its noise for good), while new data for a cell's
   dates does give it new noise (otherwise two answers around an ingest would difference out
   the new rows exactly).
2. **A contribution cap per cell, chosen privately (sums: suppressions, events).** One user's
   total in a cell is capped at C before summing, and the sum's noise is scaled to C. A fixed C
   cannot serve a 30-user cell and a 200,000-user cell alike (too small: a silent undercount of
   large cells; too large: noise that buries small ones), so C is chosen per cell from two
   differentially private releases: the cell's noisy user count n^ (published anyway) and a
   *pilot* sum with a small fixed cap (`pilot_cap`) and a share of the measure's budget
   (`pilot_share`), never published. From them C = multiplier x mean^ x (1 + growth x
   log10(max(n^, 100) / 100)), mean^ = (pilot^ - pilot_shrink noise sd) / n^ kept within
   [1, pilot_cap], the cap at most `max_cap` — post-processing of DP
   releases, so by adaptive composition the published sum is (pilot_share + (1 - pilot_share))
   x epsilon = epsilon-DP, whatever the user contributes. Large cells get caps around their
   heaviest users (little bias, noise tiny in relative terms); small cells get small caps (Amin
   et al., "Bounding User Contributions: A Bias-Variance Trade-off in Differential Privacy",
   ICML 2019: the best cap is a high quantile of the per-user contributions, which grows with
   the number of users). docs/privacy.md has the numbers.
3. **Small-cell suppression.** A cell whose *noisy* user count is below k is not published: its
   row is dropped (ranked lists, geo lists, query results) or its numbers shown as 0 (a
   timeseries bucket, a sub-count).
4. **Post-processing.** Published numbers are non-negative integers.

The engine hands the stage, for the summed measures, each cell's pilot sum (column
`<name>_pilot`) and the per-user totals behind it (`Contributions`): the stage decides the caps
and asks `Contributions.capped_sums` for the capped sums of the cells it publishes.
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

from service.settings import Settings
from service.windows import TimeRange, bucket_step

SUPPRESSIONS = "suppressions"
EVENTS = "events"
UNIQUE_USERS = "unique_users"
KEYWORD_COUNT = "keyword_count"
SUMMED = (SUPPRESSIONS, EVENTS)  # measures whose per-user contribution is capped per cell
PILOT = "_pilot"  # suffix of a summed column's pilot sum in the frame given to `publish`
# Each draw has its own slot of the cell's digest: 2 x 32 bits per slot, 8 slots = 512 bits.
_SLOTS = {UNIQUE_USERS: 0, SUPPRESSIONS: 1, EVENTS: 2, KEYWORD_COUNT: 3,
          SUPPRESSIONS + PILOT: 4, EVENTS + PILOT: 5}
_U32 = 2.0**32
_NOISE_DOMAIN = b"signals privacy noise v1"


@dataclasses.dataclass(frozen=True)
class PrivacyParams:
    """The privacy budget, cap rule and threshold (settings SIGNALS_PRIVACY_*)."""

    # The defaults of the settings are written once, in service/settings.py.
    epsilon_suppressions: float = Settings.privacy_epsilon_suppressions
    epsilon_events: float = Settings.privacy_epsilon_events
    epsilon_users: float = Settings.privacy_epsilon_users
    pilot_share: float = 0.2      # part of a sum's epsilon spent on the pilot sum that sets its cap
    pilot_cap: int = 32           # the pilot sum's fixed per-user cap
    cap_multiplier: float = 8.0   # cap = multiplier x mean per user x growth(n)
    cap_growth: float = 1.5       # growth(n) = 1 + cap_growth x log10(max(n, 100) / 100)
    pilot_shrink: float = 1.0     # the mean per user is read from pilot^ - pilot_shrink x its noise sd
    max_cap: int = Settings.privacy_max_cap  # no cap above this: the most one user adds to one cell's sum
    keyword_rows_per_user: int = 20  # rows (so keywords) one user brings into a geo keyword_count
    min_users: int = Settings.privacy_min_users  # k: cells with fewer (noisy) users are not published

    def __post_init__(self) -> None:
        for name in ("epsilon_suppressions", "epsilon_events", "epsilon_users"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if not 0 < self.pilot_share < 1:
            raise ValueError("pilot_share must be between 0 and 1")
        if min(self.pilot_cap, self.max_cap, self.keyword_rows_per_user) < 1 or self.min_users < 0:
            raise ValueError("caps must be at least 1 and min_users at least 0")
        if not (self.cap_multiplier > 0 and self.cap_growth >= 0):
            raise ValueError("cap_multiplier must be positive and cap_growth not negative")

    @classmethod
    def exact(cls) -> PrivacyParams:
        """No noise, no caps, no suppression: only for tests that check exact aggregates."""
        return cls(epsilon_suppressions=math.inf, epsilon_events=math.inf, epsilon_users=math.inf,
                   max_cap=2**62, keyword_rows_per_user=2**62, min_users=0)

    def epsilon(self, measure: str) -> float:
        return {SUPPRESSIONS: self.epsilon_suppressions, EVENTS: self.epsilon_events}.get(measure, self.epsilon_users)

    def sensitivity(self, measure: str) -> float:
        """How much one user can move a measure with a fixed bound: 1 for distinct users;
        keyword_count: each user brings at most keyword_rows_per_user rows (engine/geo_heat.py).
        Summed measures have a cap per cell instead (`cap_expr`)."""
        return {KEYWORD_COUNT: self.keyword_rows_per_user}.get(measure, 1)

    def alpha(self, measure: str, cap: float | None = None) -> float:
        """The geometric parameter of a measure's noise: P(noise = z) is proportional to alpha ** |z|.
        For a summed measure, `cap` is the cell's cap and the epsilon is what the pilot left."""
        if measure in SUMMED:
            return math.exp(-self.epsilon(measure) * (1 - self.pilot_share) / (cap or 1))
        return math.exp(-self.epsilon(measure) / self.sensitivity(measure))

    def noise_std(self, measure: str, cap: float | None = None) -> float:
        return _std(self.alpha(measure, cap))


def _std(alpha: float) -> float:
    return math.sqrt(2 * alpha) / (1 - alpha)


@dataclasses.dataclass(frozen=True)
class Published:
    """One published number of a cell: the frame column holding its true value, and which
    measure it is. `period` and `extra` make it a different cell than the row's own (trending's
    recent and baseline periods; keyword activity's per-action counts). `users` is the frame
    column with the true user count of that cell, which decides suppression.

    A summed measure (suppressions, events) has no true value in the frame: the frame holds its
    pilot sum in `<column>_pilot`, and the stage computes the capped sum from `Contributions`."""

    column: str
    measure: str
    users: str
    period: TimeRange | None = None
    extra: tuple[tuple[str, str], ...] = ()
    when_suppressed: str = "drop"  # "drop" the row | "zero" the cell's numbers


@dataclasses.dataclass(frozen=True)
class Contributions:
    """Each user's total in each cell, behind a frame's summed measures.

    `per_user` has the `keys` columns (identifying the cell, as in the frame given to `publish`)
    and one column per summed Published column holding one user's total in that cell; a user
    who did not take part in a cell has no row there (or 0). No keys: one cell, every row in it.
    """

    per_user: pl.DataFrame
    keys: tuple[str, ...] = ()
    # Optional: keys + each column's exact (uncapped) sum per cell. With it, a capped sum is the
    # total less what the users above the cap bring beyond it, so only those users' rows are
    # joined with the caps (a few per cent of them) instead of every row.
    totals: pl.DataFrame | None = None

    def capped_sums(self, caps: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
        """`caps` (keys + `<column>_cap` per column, one row per cell) with each column's capped sum
        (sum over users of min(total, cap)) added; cells without rows get 0."""
        cap_columns = [f"{c}_cap" for c in columns]
        if not self.keys:
            capped = [pl.min_horizontal(pl.col(c), pl.lit(caps.get_column(f"{c}_cap")[0])).sum().cast(pl.Int64).alias(c)
                      for c in columns]
            sums = self.per_user.lazy().select(capped).collect()
            return caps.with_columns(sums.get_column(c) for c in columns)
        # Join on the per-user side's key types (Enum for stored dimensions): cheap for the
        # small caps frame, where casting the per-user rows would not be.
        keys = list(self.keys)
        typed = caps.select(*(pl.col(k).cast(self.per_user.schema[k]) for k in keys), *cap_columns)
        rows = self.per_user.lazy()
        if self.totals is None:
            aggregates = [pl.min_horizontal(pl.col(c), pl.col(f"{c}_cap")).sum().cast(pl.Int64).alias(c) for c in columns]
        else:
            # Only users above the smallest cap of some column can lose anything to a cap.
            lowest = [caps.get_column(name).min() for name in cap_columns]
            rows = rows.filter(pl.any_horizontal(pl.col(c) > low for c, low in zip(columns, lowest, strict=True)))
            aggregates = [(pl.col(c) - pl.col(f"{c}_cap")).clip(lower_bound=0).sum().cast(pl.Int64).alias(c)
                          for c in columns]
        sums = rows.join(typed.lazy(), on=keys, how="inner").group_by(keys).agg(aggregates).collect()
        joined = typed.join(sums, on=keys, how="left", maintain_order="left")
        if self.totals is None:
            return caps.with_columns(joined.get_column(c).fill_null(0) for c in columns)
        totals = typed.select(keys).join(self.totals.select(*keys, *columns), on=keys, how="left", maintain_order="left")
        return caps.with_columns(
            (totals.get_column(c).fill_null(0) - joined.get_column(c).fill_null(0)).cast(pl.Int64).alias(c)
            for c in columns
        )


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
        parts = [pl.lit(f"v3|{cell.table}|"), *time_parts]
        for dim in sorted(constraints):
            parts += [pl.lit("|"), constraints[dim]]
        return frame.select(pl.concat_str(parts).alias("m")).get_column("m").to_list()

    def _uniforms(self, messages: list[str]) -> list[tuple[int, ...]]:
        """Sixteen 32-bit unsigned integers per message, from HMAC-SHA512 under the secret."""
        key = self._key
        digests = b"".join(hmac.digest(key, m.encode(), "sha512") for m in messages)
        flat = struct.unpack(f"<{16 * len(messages)}I", digests)
        return [flat[i::16] for i in range(16)]

    # -- the stage -----------------------------------------------------------------------

    def publish(self, frame: pl.DataFrame, cell: CellContext, contributions: Contributions | None = None,
                noise_std: bool = False) -> pl.DataFrame:
        """Noisy, non-negative Int64 numbers for every Published column; suppressed cells dropped
        or zeroed. Other columns pass through unchanged (pilot columns are removed).

        Summed measures need `contributions` (see the module docstring). With `noise_std`, each
        Published column gets a `<column>_std` column: the standard deviation of the noise that
        was added to it (what trending needs to tell growth from noise; caps are post-processing
        of DP releases, so showing them reveals nothing more)."""
        summed = [p for p in cell.published if p.measure in SUMMED]
        if summed and contributions is None:
            raise ValueError("summed measures need the contributions behind them")
        if frame.height == 0:
            empty = frame.drop(f"{p.column}{PILOT}" for p in summed).with_columns(
                pl.lit(0, dtype=pl.Int64).alias(p.column) for p in cell.published)
            return empty.with_columns(pl.lit(0.0).alias(f"{p.column}_std") for p in cell.published) \
                if noise_std else empty
        groups: dict[tuple, list[Published]] = {}
        for item in cell.published:
            groups.setdefault((item.period, item.extra, item.users), []).append(item)
        noisy: dict[str, pl.Series] = {}
        stds: dict[str, pl.Series] = {}
        caps: dict[str, pl.Series] = {}
        draws: dict[str, tuple[list[tuple[int, ...]], pl.Series]] = {}
        drop = pl.Series([False] * frame.height)
        for (_period, _extra, users), items in groups.items():
            uniforms = self._uniforms(self._messages(frame, cell, items[0]))
            users_noisy = self._noisy(frame.get_column(users), UNIQUE_USERS, uniforms)
            below = users_noisy < self.params.min_users
            for item in items:
                if item.measure in SUMMED:
                    caps[item.column] = self._caps(frame.get_column(f"{item.column}{PILOT}"), item.measure,
                                                   users_noisy, uniforms)
                    draws[item.column] = (uniforms, below)
                    continue
                # The cell's own user count was just drawn; any other measure gets its own slot.
                value = users_noisy if item.column == users else \
                    self._noisy(frame.get_column(item.column), item.measure, uniforms)
                noisy[item.column] = value
                if noise_std:
                    stds[item.column] = pl.repeat(self.params.noise_std(item.measure), frame.height, eager=True)
                if item.when_suppressed == "drop":
                    drop = drop | below
                else:
                    noisy[item.column] = pl.select(pl.when(below).then(0).otherwise(value)).to_series()
        if summed:
            assert contributions is not None
            for item in summed:
                if item.when_suppressed == "drop":
                    drop = drop | draws[item.column][1]
            # Capped sums only for rows that will be shown (a count shown as 0 is zeroed below).
            true = self._capped_true(frame, contributions, caps, ~drop)
            for item in summed:
                uniforms, below = draws[item.column]
                cap = caps[item.column]
                value = self._noisy(true.get_column(item.column), item.measure, uniforms, cap)
                if item.when_suppressed == "zero":
                    value = pl.select(pl.when(below).then(0).otherwise(value)).to_series()
                noisy[item.column] = value
                if noise_std:
                    stds[item.column] = pl.select(self._std_expr(item.measure, pl.lit(cap))).to_series()
        result = frame.drop(f"{p.column}{PILOT}" for p in summed).with_columns(
            series.alias(name) for name, series in noisy.items())
        if noise_std:
            result = result.with_columns(series.alias(f"{name}_std") for name, series in stds.items())
        return result.filter(~drop) if drop.any() else result

    def _capped_true(self, frame: pl.DataFrame, contributions: Contributions, caps: dict[str, pl.Series],
                     needed: pl.Series) -> pl.DataFrame:
        """Each summed column's capped sum per row of `frame` (0 where not `needed`)."""
        rows = needed.arg_true()
        wanted = pl.DataFrame([series[rows].alias(f"{name}_cap") for name, series in caps.items()])
        if contributions.keys:
            wanted = frame.select(contributions.keys)[rows].hstack(wanted)
        sums = contributions.capped_sums(wanted, list(caps)) if rows.len() else wanted
        return pl.DataFrame({
            name: pl.zeros(frame.height, dtype=pl.Int64, eager=True).scatter(rows, sums.get_column(name))
            if rows.len() else pl.zeros(frame.height, dtype=pl.Int64, eager=True)
            for name in caps
        })

    def _caps(self, pilot: pl.Series, measure: str, users_noisy: pl.Series,
              uniforms: list[tuple[int, ...]]) -> pl.Series:
        """Each cell's cap for a summed measure, from its noisy pilot sum and noisy user count."""
        params = self.params
        if math.isinf(params.epsilon(measure)):  # exact: nothing is capped
            return pl.repeat(params.max_cap, pilot.len(), dtype=pl.Int64, eager=True)
        alpha = math.exp(-params.epsilon(measure) * params.pilot_share / params.pilot_cap)
        pilot_noisy = self._noisy(pilot, measure + PILOT, uniforms, alpha=alpha)
        users = users_noisy.cast(pl.Float64).clip(lower_bound=1.0)
        frame = pl.DataFrame({"pilot": pilot_noisy.cast(pl.Float64), "users": users})
        # A cautious reading of the mean: the pilot's noise (sd pilot_cap / budget x sqrt 2) is
        # large next to a small cell's pilot, and read at face value it would give small cells
        # large caps and so large noise. Every user brings 1 to pilot_cap to the pilot sum.
        cautious = pl.col("pilot") - params.pilot_shrink * _std(alpha)
        mean = (cautious / pl.col("users")).clip(1.0, float(params.pilot_cap))
        growth = 1.0 + params.cap_growth * (pl.col("users").clip(lower_bound=100.0) / 100.0).log10()
        cap = (params.cap_multiplier * mean * growth).ceil().clip(1.0, float(params.max_cap)).cast(pl.Int64)
        return frame.select(cap.alias("cap")).to_series()

    def _std_expr(self, measure: str, cap: pl.Expr) -> pl.Expr:
        """The noise standard deviation of a summed measure for a cap column."""
        epsilon = self.params.epsilon(measure) * (1 - self.params.pilot_share)
        if math.isinf(epsilon):
            return cap * 0.0
        alpha = (-epsilon / cap.cast(pl.Float64)).exp()
        return (2.0 * alpha).sqrt() / (1.0 - alpha)

    def _noisy(self, true: pl.Series, measure: str, uniforms: list[tuple[int, ...]],
               cap: pl.Series | None = None, alpha: float | None = None) -> pl.Series:
        """True values plus discrete Laplace noise from the measure's slot, clipped at 0. The
        geometric parameter is `alpha`, or per row from `cap` (summed measures), or the measure's."""
        true = true.fill_null(0).cast(pl.Int64)
        slot = _SLOTS[measure]
        if cap is not None:
            epsilon = self.params.epsilon(measure) * (1 - self.params.pilot_share)
            if math.isinf(epsilon):
                return true.clip(lower_bound=0)
            log_alpha: pl.Expr = -epsilon / pl.col("cap").cast(pl.Float64)
        else:
            alpha = self.params.alpha(measure) if alpha is None else alpha
            if alpha == 0.0:  # infinite epsilon: no noise
                return true.clip(lower_bound=0)
            log_alpha = pl.lit(math.log(alpha))
        frame = pl.DataFrame({
            "t": true,
            "a": pl.Series(uniforms[2 * slot], dtype=pl.Float64),
            "b": pl.Series(uniforms[2 * slot + 1], dtype=pl.Float64),
            "cap": cap if cap is not None else pl.repeat(1, true.len(), dtype=pl.Int64, eager=True),
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
