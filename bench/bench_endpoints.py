"""Cold latency of every API endpoint: our engine in-process, over HTTP, DuckDB on the same Parquet,
and the ClickHouse engine on the same rows in embedded ClickHouse (chdb).

For each case (one endpoint with one set of parameters: the largest window of every endpoint plus
a few representative variants) four things are timed:

- engine: `Engine.<endpoint>(frames, as_of, request)` in this process, on a snapshot loaded by
  `EventStore` from the data directory, with the privacy stage as served (the settings' budget,
  caps and k): slicing, per-user capped aggregation, noise and small-cell suppression, returning
  the published polars frame (no JSON rendering).
- HTTP: the same request sent to the real web process (`gunicorn -c gunicorn.conf.py
  service.wsgi:app`, as in the Procfile) with one worker, over loopback, with one keep-alive httpx
  client, until the whole body is read: authentication, rate limit, validation, engine, JSON
  rendering and transport.
- DuckDB: the same capped aggregate computed in SQL straight from the same Parquet files
  (`read_parquet(..., hive_partitioning=true)`, date partitions pruned), materialised as an Arrow
  table. The same work as the engine's `cell_contributions` + `Privacy.publish`: per cell and user
  (GROUP BY the cell's keys and user_id) the user's totals (suppressions summed, events counted);
  per cell the number of users n and the pilot sums, sum(LEAST(total, pilot_cap)); for the cells
  with at least k users (those the engine publishes), each summed measure's cap as
  `privacy.caps.choose_caps` computes it: ceil(min(multiplier x mean x (1 + growth x log10(max(n, 100) / 100)),
  cap_fit x max(n, pilot - pilot_low x sd))) in [smallest_cap, max_cap], mean = (pilot - pilot_shrink x sd) / n
  in [1, pilot_cap], sd the pilot noise's, and for a place over more than a week (geo-heat at 30 days)
  its family's terms as well (`Sources.cap`: the mean per user of every place of the level);
  then the per-user rows joined with those caps and sum(LEAST(total, cap)) per cell. DuckDB cannot
  reproduce our keyed noise (HMAC-SHA512 of each cell's description under the secret), so its
  caps and its k test use the TRUE pilot sums and user counts where the engine uses noisy ones:
  the same operations on slightly different numbers. Keyword activity does this per (keyword,
  user) for each action's count, each action with its own users and cap, shown as 0 below k
  users; trending per (value, period, user), recent and baseline each being a cell of its own, a
  value kept when both periods have k users, ordered and cut (> 0) by the same lower confidence
  bound of growth (`growth.with_growth_lower_bound`: margins of CONFIDENCE_Z x the noise's sd,
  which follows from each number's cap, plus COUNT_Z x sqrt(count)); geo-heat's keyword_count is
  count(DISTINCT keyword) over each user's first keyword_rows_per_user rows (by ts) in the unit.
  Window [as_of - window, as_of), zero-filled buckets (generate_series + left join), the growth
  formula, the same ordering, tie-breaks and limit. The engine additionally draws the noise (an
  HMAC per cell) and adds it: that work is part of its time. Geographic labels are not computed.
- ClickHouse: `ClickHouseEngine.<endpoint>(snapshot, as_of, request)` (SIGNALS_ENGINE=clickhouse)
  in this process on embedded ClickHouse (chdb, `chdb://bench/out/chdb-<events>-<days>-<seed>`),
  whose tables hold the same rows (loaded once from the Parquet files, with their generation): the
  per-user and per-cell stages in SQL, the answer back as Arrow, then the same privacy and
  publication stages as the engine. Its published frame must equal the engine's, noise included
  (same secret, same data versions); a difference is a warning. Not over HTTP: chdb opens its
  directory in one process at a time, and this one holds it.

Cold means that no response cache is involved: the server runs with SIGNALS_CACHE_RESPONSES=false
and no Redis, so every request is computed, and neither the engine nor DuckDB caches results. It
does not mean a cold OS page cache or cold code paths: every case gets one warm-up run on each of
the three sides first. The runs then alternate (engine and DuckDB in turns, then HTTP) so that
machine noise hits all three alike; the median of --runs is reported. A ratio above 1 means we
are faster than DuckDB.

As a sanity check, DuckDB's answer (row count and every row) is compared with that of an engine
running the same privacy stage with its noise switched off (`Noiseless`, a subclass whose `_noisy`
returns the true value): its caps then come from the true pilot sums and user counts and its
suppression from the true user count, which is exactly what the SQL computes, so every published
column is checked, capped sums included (`PrivacyParams.exact()` would not do: it caps nothing).
That engine also picks the cases' keywords and domain. The HTTP record count is compared with the
timed engine's. Differences are printed as warnings, they do not stop the run.

The demo data set (`service.demo`) is generated once per (events, days, seed) under
bench/out/data-<events>-<days>-<seed>/ and reused afterwards. HTTP requests are paced to stay
under the Professional rate limit (300 a minute).

    .venv/bin/python bench/bench_endpoints.py [--events 10000000] [--days 90] [--runs 5] [--seed 7] [--no-clickhouse] [--cases TEXT...]

Prints a Markdown table and writes bench/out/endpoints.json and bench/out/endpoints.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import polars as pl
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_secret import bench_secret  # noqa: E402

from service.api.endpoints import BY_NAME  # noqa: E402
from service.api.periods import previous_as_of  # noqa: E402
from service.api.windows import (  # noqa: E402
    TimeRange,
    bucket_starts,
    compute_as_of,
    floor_hour,
    iso_z,
    trending_periods,
    window_range,
)
from service.app import privacy_params  # noqa: E402
from service.clickhouse import schema as ch_schema  # noqa: E402
from service.clickhouse.connection import ClickHouse  # noqa: E402
from service.clickhouse.store import ClickHouseSnapshot, ClickHouseStore  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.demo import generate as demo  # noqa: E402
from service.engine.clickhouse import ClickHouseEngine  # noqa: E402
from service.engine.growth import CONFIDENCE_Z, COUNT_Z  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.polars import user_keys  # noqa: E402
from service.engine.requests import (  # noqa: E402
    FILTER_COLUMNS,
    GEO_LEVELS,
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.engine.shapes import SHAPES  # noqa: E402
from service.privacy import Privacy, PrivacyParams  # noqa: E402
from service.privacy.cells import FAMILY_MIN_SPAN  # noqa: E402
from service.privacy.params import geometric_std  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventFrames, EventStore  # noqa: E402

OUT = ROOT / "bench" / "out"
MARKER = "bench-data.json"
LOAD_RUNS = 3
REQUESTS_PER_MINUTE = 250  # below the Professional limit of 300, with room to spare
CHECK_ROWS = 3  # differing rows printed per case (all rows are compared)
GROWTH_TOLERANCE = 0.01 + 1e-9  # growth_pct: both round to 2 decimals, half-way cases may differ
HTTP_TIMEOUT = 600.0  # a /query at 100M events on a loaded 2-core machine takes minutes
READY_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    endpoint: str  # engine method and service.api.endpoints name
    request: Any  # the engine request; the HTTP request is derived from it
    sql: str  # the same aggregate in DuckDB
    # compare cases: the same aggregate over the period before (every cell, as the engine asks
    # for it), so that DuckDB does the work the engine does; only `sql`'s answer is checked
    previous_sql: str | None = None


@dataclasses.dataclass
class Timings:
    engine: list[float] = dataclasses.field(default_factory=list)
    http: list[float] = dataclasses.field(default_factory=list)
    duckdb: list[float] = dataclasses.field(default_factory=list)
    clickhouse: list[float] = dataclasses.field(default_factory=list)
    rows: int = 0


class Noiseless(Privacy):
    """The privacy stage with its noise switched off (the sanity check's engine): caps, pilot sums
    and suppression as served, from true values. Overrides a private method on purpose: if it is
    renamed the noise comes back and the check reports mismatches."""

    def _noisy(self, true: pl.Series, *args: Any, **kwargs: Any) -> pl.Series:
        return true.fill_null(0).cast(pl.Int64).clip(lower_bound=0)


# ---- data ----------------------------------------------------------------------------------


def ensure_data(events: int, days: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """The cached demo data directory for these parameters, generated first when missing."""
    data_dir = OUT / f"data-{events}-{days}-{seed}"
    marker = data_dir / MARKER
    wanted = {"events": events, "days": days, "seed": seed}
    if marker.is_file():
        info = json.loads(marker.read_text())
        if all(info.get(key) == value for key, value in wanted.items()):
            print(f"Reusing demo data in {data_dir} (generated {info['generated_at']}).", file=sys.stderr)
            return data_dir, info
    if data_dir.exists():  # an interrupted generation: start over
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    end = floor_hour(SystemClock().now())
    print(f"Generating demo data in {data_dir} ...", file=sys.stderr)
    # Above demo.PIECE_EVENTS events the demo lands in pieces (one generation each), so that
    # generating 100M events needs a few GB rather than some 25 GB.
    report = demo.generate_demo(data_dir, events=events, days=days, seed=seed, end=end,
                                secret=bench_secret(), progress=True)
    info = {**wanted, "end": iso_z(end), "suppressions": report.suppressions,
            "keyword_changes": report.keyword_changes, "users": report.users,
            "pieces": report.pieces, "piece_events": demo.PIECE_EVENTS,
            "generation_seconds": round(report.seconds, 1), "generated_at": iso_z(SystemClock().now())}
    marker.write_text(json.dumps(info, indent=2) + "\n")
    return data_dir, info


def ensure_clickhouse(data_dir: Path, events: int, days: int, seed: int) -> tuple[ClickHouseSnapshot, float]:
    """The same rows in embedded ClickHouse (bench/out/chdb-...), loaded once from the Parquet files
    (each row with its file's generation); its snapshot and the seconds the load took (0: reused)."""
    directory = OUT / f"chdb-{events}-{days}-{seed}"
    marker = OUT / f"chdb-{events}-{days}-{seed}.json"
    ch = ClickHouse(f"chdb://{directory}")
    seconds = 0.0
    data_dir = data_dir.resolve()
    wanted = {"data_dir": str(data_dir), "at_rest": True}  # at_rest: loaded and merged (below)
    if not (marker.is_file() and wanted.items() <= json.loads(marker.read_text()).items()):
        print(f"Loading the events into ClickHouse (chdb) in {directory} ...", file=sys.stderr)
        started = time.perf_counter()
        for table in ("suppressions", "keyword_changes", ch_schema.LANDINGS):
            ch.command(f"DROP TABLE IF EXISTS {table}")
        ch_schema.initialise(ch)
        for table in ("suppressions", "keyword_changes"):
            ch.command(
                f"INSERT INTO {table} SELECT * EXCEPT (date), toUInt32(extract(_file, 'part-g(\\d+)-')) AS generation "
                f"FROM file('{data_dir / table}/date=*/*.parquet', Parquet)")
        generation = int(ch.frame("SELECT max(generation) AS g FROM suppressions").item())
        ch.command(f"INSERT INTO {ch_schema.LANDINGS} VALUES ({generation}, 1, '', '[]', [])")
        # A store at rest, as between landings: its parts merged, so that no background merge
        # competes with the timed queries for the two cores.
        for table in ("suppressions", "keyword_changes"):
            ch.command(f"OPTIMIZE TABLE {table} FINAL")
        seconds = time.perf_counter() - started
        marker.write_text(json.dumps({**wanted, "load_seconds": seconds}) + "\n")
    store = ClickHouseStore(ch)
    return store.snapshot(), seconds


def load_snapshot(data_dir: Path) -> tuple[EventFrames, list[float]]:
    """A snapshot from a fresh EventStore, loaded LOAD_RUNS times; the last one and every load time."""
    seconds, frames = [], None
    for _ in range(LOAD_RUNS):
        frames = None  # let the previous snapshot go before loading the next
        started = time.perf_counter()
        frames = EventStore(data_dir).snapshot()
        seconds.append(time.perf_counter() - started)
    assert frames is not None
    return frames, seconds


# ---- SQL -----------------------------------------------------------------------------------


def lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def ts_lit(moment: dt.datetime) -> str:
    return f"TIMESTAMPTZ '{moment.astimezone(dt.UTC).isoformat()}'"


def num(value: float) -> str:
    """A DOUBLE literal (a plain `8.0` would be a DECIMAL in DuckDB)."""
    return f"{float(value)!r}::DOUBLE"


def in_range(span: TimeRange) -> str:
    """Rows with start <= ts < end, with the date partitions outside the range pruned."""
    last_day = (span.end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    first_day = span.start.astimezone(dt.UTC).date()
    return (f"date BETWEEN DATE '{first_day}' AND DATE '{last_day}' "
            f"AND ts >= {ts_lit(span.start)} AND ts < {ts_lit(span.end)}")


@dataclasses.dataclass(frozen=True)
class Sources:
    """What the SQL reads (a Parquet scan per table) and the privacy parameters it follows (the engine's)."""

    suppressions: str
    keyword_changes: str
    params: PrivacyParams

    @classmethod
    def of(cls, data_dir: Path, params: PrivacyParams) -> Sources:
        def scan(table: str) -> str:
            return f"read_parquet({lit(str(data_dir / table / '*' / '*.parquet'))}, hive_partitioning=true)"

        return cls(scan("suppressions"), scan("keyword_changes"), params)

    def cap(self, pilot: str, users: str, measure: str, family: str | None = None) -> str:
        """A cell's cap for a summed measure as `privacy.caps.choose_caps` computes it, from the cell's TRUE pilot
        sum and user count (the engine's are noisy): ceil(least(multiplier x mean x (1 + growth x
        log10(max(n, 100) / 100)), cap_fit x greatest(n x greatest(1, family_low x m), pilot - pilot_low x sd)))
        in [smallest_cap, max_cap], mean = (pilot - shrink x sd + w x m) / (n + w) in [1, pilot_cap],
        sd the pilot noise's standard deviation, shrink = family_shrink where w > 0, else pilot_shrink. `family`: the SQL of the cell's family's mean per user
        (`family_mean`), for cells in a family (a place over more than a week: its pilot then spends
        less, `PrivacyParams.pilot_epsilon`, its sum more, and multiplier and cap_fit are scaled by the
        sums' epsilons); w = family_weight where it is above 1, else w = 0 and m = 1."""
        p = self.params
        pilot_alpha = math.exp(-p.pilot_epsilon(measure, in_family=family is not None) / p.pilot_cap)
        sd = geometric_std(pilot_alpha)
        n = f"greatest({users}, 1)::DOUBLE"
        m = "1.0::DOUBLE" if family is None else f"greatest({family}, 1.0::DOUBLE)"
        w = "0.0::DOUBLE" if family is None else f"(CASE WHEN {family} > 1.0 THEN {num(p.family_weight)} ELSE 0.0 END)::DOUBLE"
        shrink = num(p.pilot_shrink * sd) if family is None else \
            f"(CASE WHEN {family} > 1.0 THEN {num(p.family_shrink * sd)} ELSE {num(p.pilot_shrink * sd)} END)::DOUBLE"
        mean = (f"greatest(least(({pilot}::DOUBLE - {shrink} + {w} * {m}) / ({n} + {w}), "
                f"{num(p.pilot_cap)}), 1.0::DOUBLE)")
        growth = f"(1.0::DOUBLE + {num(p.cap_growth)} * log10(greatest({n}, 100.0::DOUBLE) / 100.0::DOUBLE))"
        least_sum = f"({n} * greatest(1.0::DOUBLE, {num(p.family_low)} * {m}))"
        scale = p.family_cap_scale(measure) if family is not None else 1.0
        ceiling = f"({num(p.cap_fit * scale)} * greatest({least_sum}, {pilot}::DOUBLE - {num(p.pilot_low * sd)}))"
        rule = f"least({num(p.cap_multiplier * scale)} * {mean} * {growth}, {ceiling})"
        return f"least(greatest(ceil({rule}), {num(p.smallest_cap())}), {num(p.max_cap)})::BIGINT"

    def family_mean(self, pilot_total: str, users_total: str, measure: str) -> str:
        """A family's mean per user as `privacy.caps.family_mean` reads it from its releases, here
        from the TRUE sums over its cells: (P - 2 sd) / (N + 2 sd) in [1, pilot_cap]."""
        pilot_alpha, users_alpha = self.params.family_alphas(measure)
        return (f"least(greatest(({pilot_total}::DOUBLE - {num(2 * geometric_std(pilot_alpha))}) / "
                f"({users_total}::DOUBLE + {num(2 * geometric_std(users_alpha))}), 1.0::DOUBLE), "
                f"{num(self.params.pilot_cap)})")

    def std(self, measure: str, cap: str | None = None) -> str:
        """The standard deviation of the noise the engine adds to a published number (`<column>_std`):
        a summed measure's from its cell's cap (trending's cells: never in a family), a user count's a constant."""
        p = self.params
        if cap is None:
            return num(p.noise_std(measure))
        alpha = f"exp(-{num(p.summed_epsilon(measure))} / {cap}::DOUBLE)"
        return f"(sqrt(2.0::DOUBLE * {alpha}) / (1.0::DOUBLE - {alpha}))"


SUMMED_SQL = {"suppressions": "sum(suppressions)::BIGINT", "events": "count(*)"}


def capped_cells_sql(src: Sources, keys: list[str], where: str, measures: tuple[str, ...],
                     only_published: bool = True, family: bool = False) -> str:
    """Per cell, the engine's capped aggregate (`contributions.cell_contributions` + `Privacy.publish`):

    1. per_user: one row per (cell, user) of the suppressions matching `where` (the window first,
       so date partitions are pruned) with the user's totals (suppressions = sum, events = count);
    2. cells: per cell the number of users and each summed measure's pilot sum, sum(least(total,
       pilot_cap)); with `only_published`, only the cells with at least k users (the engine's
       publication test, on the true count here);
    3. caps: each summed measure's cap from its pilot sum and the user count (`Sources.cap`); with
       `family` (the cells are one family: every place of a level, over more than a week), also
       from the family's mean per user, read from the sums over every cell found (`Sources.family_mean`);
    4. the capped sums, sum(least(total, cap)), of those cells: per_user joined with the caps.

    `keys` are SELECT items (`expression AS name`) identifying a cell; none: one cell, every row
    (`only_published` must then be False: the one row is always there). Columns: the keys' names,
    unique_users, the capped `measures` and `<measure>_cap`."""
    p = src.params
    names = [key.rsplit(" AS ", 1)[-1] for key in keys]
    per_user = ", ".join([*keys, "user_id", *(f"{SUMMED_SQL[m]} AS {m}" for m in measures)])
    pilots = ", ".join(["count(*) AS unique_users",
                        *(f"sum(least({m}, {p.pilot_cap}))::BIGINT AS {m}_pilot" for m in measures)])
    published = f" WHERE unique_users >= {p.min_users}" if only_published else ""

    def family_of(m: str) -> str | None:
        return src.family_mean(f"family.{m}_pilot", "family.unique_users", m) if family else None

    caps = ", ".join([*(f"cells.{n}" for n in names), "cells.unique_users",
                      *(f"{src.cap(f'cells.{m}_pilot', 'cells.unique_users', m, family_of(m))} AS {m}_cap" for m in measures)])
    # The family's sums over every cell found (published or not), beside each cell's, only where
    # the cells are a family: the other cases' SQL is as it was.
    family_sums = ", ".join(["sum(unique_users) AS unique_users", *(f"sum({m}_pilot) AS {m}_pilot" for m in measures)])
    family_cte = f"family AS (SELECT {family_sums} FROM found), " if family else ""
    with_family = " CROSS JOIN family" if family else ""
    sums = ", ".join([*(f"per_user.{n}" for n in names), "any_value(unique_users) AS unique_users",
                      *(f"coalesce(sum(least(per_user.{m}, {m}_cap)), 0)::BIGINT AS {m}" for m in measures),
                      *(f"any_value({m}_cap) AS {m}_cap" for m in measures)])
    join = f"JOIN caps USING ({', '.join(names)})" if names else "CROSS JOIN caps"
    group = f" GROUP BY {', '.join(f'per_user.{n}' for n in names)}" if names else ""
    return f"""
        WITH per_user AS (
            SELECT {per_user} FROM {src.suppressions} WHERE {where} GROUP BY ALL
        ), found AS (
            SELECT {', '.join([*names, pilots])} FROM per_user{' GROUP BY ALL' if names else ''}
        ), {family_cte}cells AS (
            SELECT * FROM found{published}
        ), caps AS (
            SELECT {caps} FROM cells{with_family}
        )
        SELECT {sums} FROM per_user {join}{group}"""


def sql_top_keywords(src: Sources, as_of: dt.datetime, req: TopKeywords) -> str:
    where = f"{in_range(window_range(req.window, as_of))} AND keyword IS NOT NULL"
    return f"""
        SELECT keyword AS keyword_raw, suppressions, unique_users AS users_est
        FROM ({capped_cells_sql(src, ['keyword'], where, ('suppressions',))}) AS cells
        ORDER BY suppressions DESC, keyword_raw LIMIT {req.limit}"""


def sql_timeseries(src: Sources, as_of: dt.datetime, column: str, value: str, window: str, bucket: str) -> str:
    # Buckets with fewer than k users show zeros in the engine: here they are left out of the
    # capped cells and zero-filled with the empty buckets.
    span = window_range(window, as_of)
    starts = bucket_starts(span, bucket)
    cells = capped_cells_sql(src, [f"date_trunc('{bucket}', ts) AS bucket_ts"],
                             f"{in_range(span)} AND {column} = {lit(value)}", ("suppressions", "events"))
    return f"""
        WITH buckets AS (
            SELECT generate_series AS ts
            FROM generate_series({ts_lit(starts[0])}, {ts_lit(starts[-1])}, INTERVAL 1 {bucket})
        )
        SELECT buckets.ts, coalesce(suppressions, 0) AS suppressions, coalesce(unique_users, 0) AS users_est,
               coalesce(events, 0) AS events
        FROM buckets LEFT JOIN ({cells}) AS cells ON cells.bucket_ts = buckets.ts
        ORDER BY buckets.ts"""


def sql_geo_heat(src: Sources, as_of: dt.datetime, req: GeoHeat) -> str:
    # keyword_count: distinct keywords among each user's first keyword_rows_per_user rows (by ts) in
    # the unit, as the engine does (its rows are in ts order; no two rows of a user share a ts).
    span = window_range(req.window, as_of)
    where = f"{in_range(span)} AND {req.level} IS NOT NULL"
    # Over more than a week the places of a level are a family (privacy/cells.py, family_dimension).
    cells = capped_cells_sql(src, [f"{req.level} AS geo_key"], where, ("suppressions",),
                             family=span.end - span.start > FAMILY_MIN_SPAN)
    return f"""
        WITH keywords AS (
            SELECT geo_key, count(DISTINCT keyword) AS keyword_count
            FROM (
                SELECT {req.level} AS geo_key, keyword FROM {src.suppressions} WHERE {where}
                QUALIFY row_number() OVER (PARTITION BY {req.level}, user_id ORDER BY ts)
                        <= {src.params.keyword_rows_per_user}
            ) AS first_rows
            GROUP BY ALL
        )
        SELECT geo_key, suppressions, unique_users, keyword_count
        FROM ({cells}) AS cells JOIN keywords USING (geo_key)
        ORDER BY suppressions DESC, geo_key"""


def sql_trending(src: Sources, as_of: dt.datetime, req: Trending) -> str:
    # The two periods split the window: one scan grouped by (value, period, user) gives each
    # (value, period) cell its users, pilot sum and cap, as the engine does per period. A value
    # is shown when both its periods have at least k users; ordered and cut by the lower
    # confidence bound of growth (growth.with_growth_lower_bound), each number's margin from the
    # standard deviation of the noise the engine would add to it (a function of its cap).
    periods = trending_periods(req.window, as_of)
    recent_hours, baseline_hours = float(periods.recent.hours), float(periods.baseline.hours)
    where = f"{in_range(window_range(req.window, as_of))} AND {req.dimension} IS NOT NULL"
    keys = [f"{req.dimension} AS value", f"ts >= {ts_lit(periods.recent.start)} AS in_recent"]
    if req.metric == "unique_users":  # no caps: the user counts themselves
        cells = f"""
            SELECT {', '.join(keys)}, count(DISTINCT user_id) AS unique_users, {src.std('unique_users')} AS std
            FROM {src.suppressions} WHERE {where} GROUP BY ALL HAVING count(DISTINCT user_id) >= {src.params.min_users}"""
        metric = "unique_users"
    else:
        capped = capped_cells_sql(src, keys, where, (req.metric,))
        cells = f"SELECT *, {src.std(req.metric, f'{req.metric}_cap')} AS std FROM ({capped}) AS capped"
        metric = req.metric

    def margin(value: str, std: str) -> str:  # z sd + COUNT_Z sqrt(v), as with_growth_lower_bound
        return f"({num(CONFIDENCE_Z)} * {std} + {num(COUNT_Z)} * sqrt(greatest({value}::DOUBLE, 1.0::DOUBLE)))"

    return f"""
        WITH cells AS ({cells}
        ), periods AS (
            SELECT value, any_value({metric}) FILTER (in_recent) AS recent,
                   any_value(std) FILTER (in_recent) AS recent_std,
                   any_value({metric}) FILTER (NOT in_recent) AS baseline,
                   any_value(std) FILTER (NOT in_recent) AS baseline_std
            FROM cells GROUP BY value HAVING count(*) = 2
        ), bounded AS (
            SELECT value, recent, baseline,
                   round(100.0 * (recent::DOUBLE / {recent_hours} - baseline::DOUBLE / {baseline_hours})
                         / (baseline::DOUBLE / {baseline_hours}), 2) AS growth_pct,
                   greatest(recent::DOUBLE - {margin('recent', 'recent_std')}, 0.0) / {num(recent_hours)}
                       AS recent_low,
                   (baseline::DOUBLE + {margin('baseline', 'baseline_std')}) / {num(baseline_hours)}
                       AS baseline_high
            FROM periods
            WHERE baseline > 0 AND baseline >= {float(req.min_baseline)}
        )
        SELECT value, recent, baseline, growth_pct
        FROM bounded
        WHERE 100.0 * (recent_low - baseline_high) / baseline_high > 0
        ORDER BY 100.0 * (recent_low - baseline_high) / baseline_high DESC, value LIMIT {req.limit}"""


ACTIVITY_ORDER = {"added": "adds", "removed": "removes", "edited": "edits", "all": "total_events"}
ACTIONS = {"adds": "add", "removes": "remove", "edits": "edit"}


def sql_keyword_activity(src: Sources, as_of: dt.datetime, req: KeywordActivity) -> str:
    # Per (keyword, user) each action's count; per keyword its users, and per action its own
    # users (an action's count is a cell of its own), pilot sum and cap; the capped sums of the
    # keywords with at least k users, each action's shown as 0 when it has fewer than k users.
    p = src.params
    order = ACTIVITY_ORDER[req.type]
    only = "" if req.type == "all" else f"WHERE {order} > 0"
    counts = ", ".join(f"count(*) FILTER (WHERE action = {lit(a)}) AS {name}" for name, a in ACTIONS.items())
    pilots = ", ".join(f"count(*) FILTER (WHERE {name} > 0) AS {name}_users, "
                       f"sum(least({name}, {p.pilot_cap}))::BIGINT AS {name}_pilot" for name in ACTIONS)
    caps = ", ".join(f"{src.cap(f'{name}_pilot', f'{name}_users', 'events')} AS {name}_cap" for name in ACTIONS)
    sums = ", ".join(f"CASE WHEN any_value({name}_users) >= {p.min_users} "
                     f"THEN sum(least(per_user.{name}, {name}_cap)) ELSE 0 END::BIGINT AS {name}" for name in ACTIONS)
    return f"""
        WITH per_user AS (
            SELECT keyword, user_id, {counts}
            FROM {src.keyword_changes}
            WHERE {in_range(window_range(req.window, as_of))} AND keyword IS NOT NULL
            GROUP BY ALL
        ), cells AS (
            SELECT keyword, count(*) AS unique_users, {pilots}
            FROM per_user GROUP BY ALL HAVING count(*) >= {p.min_users}
        ), caps AS (
            SELECT *, {caps} FROM cells
        ), sums AS (
            SELECT per_user.keyword, any_value(unique_users) AS unique_users, {sums}
            FROM per_user JOIN caps USING (keyword)
            GROUP BY per_user.keyword
        )
        SELECT keyword, adds, removes, edits, adds + removes + edits AS total_events, unique_users,
               adds - removes AS net_adds
        FROM sums {only}
        ORDER BY {order} DESC, keyword LIMIT {req.limit}"""


def _query_column(dimension: str) -> str:
    """The engine's output name of a group_by entry (geography as <level>_id, time as ts)."""
    if dimension == "time":
        return "ts"
    return f"{dimension}_id" if dimension in GEO_LEVELS else dimension


def sql_query(src: Sources, as_of: dt.datetime, req: FlexibleQuery) -> str:
    conditions = [in_range(window_range(req.window, as_of))]
    conditions += [f"{FILTER_COLUMNS[key]} IN ({', '.join(lit(v) for v in values)})"
                   for key, values in req.filters.items()]
    conditions += [f"{dimension} IS NOT NULL" for dimension in req.group_by if dimension != "time"]
    keys = [f"date_trunc('{req.bucket}', ts) AS ts" if dimension == "time" else f"{dimension} AS {_query_column(dimension)}"
            for dimension in req.group_by]
    measures = "suppressions, unique_users, events"
    if not req.group_by:  # one row of totals, always: zeros when it has fewer than k users
        cells = capped_cells_sql(src, [], " AND ".join(conditions), ("suppressions", "events"), only_published=False)
        k = src.params.min_users
        return f"""
            SELECT {', '.join(f'CASE WHEN unique_users >= {k} THEN {m} ELSE 0 END AS {m}' for m in measures.split(', '))}
            FROM ({cells}) AS cells"""
    cells = capped_cells_sql(src, keys, " AND ".join(conditions), ("suppressions", "events"))
    names = [_query_column(dimension) for dimension in req.group_by]
    order = [f"{req.order_by} {req.order.upper()}", *names]
    return f"""
        SELECT {', '.join(names)}, {measures}
        FROM ({cells}) AS cells
        ORDER BY {', '.join(order)} LIMIT {req.limit}"""


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # date_trunc of TIMESTAMPTZ follows the session time zone
    # Half the machine's 24 GiB, with a spill directory: at 100M events geo-heat's per-user
    # stage passes 6 GB and, without a place to spill, an in-memory database stops with an
    # out-of-memory error.
    con.execute("SET memory_limit = '12GB'")
    spill = OUT / "duckdb-spill"
    spill.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET temp_directory = '{spill}'")
    return con


# ---- cases ---------------------------------------------------------------------------------


def ranked_values(engine: Any, frames: Any, as_of: dt.datetime, column: str, limit: int) -> list[str]:
    """Values of `column` by number of events in the last 90 days, most frequent first (via the engine)."""
    by_events = FlexibleQuery("90d", {}, (column,), None, order_by="events", limit=limit)
    return engine.query(frames, as_of, by_events).get_column(column).to_list()


def case_subjects(engine: Any, data: Any, as_of: dt.datetime) -> tuple[list[str], str]:
    """The cases' keywords (the 500 with most events in 90 days, most first) and domain (the most
    events); `engine` and `data` are either engine with its data (frames, or a ClickHouse snapshot)."""
    keywords = ranked_values(engine, data, as_of, "keyword", 500)
    return keywords, ranked_values(engine, data, as_of, "domain", 1)[0]


def case_requests(keywords: list[str], top_domain: str) -> list[tuple[str, Any]]:
    """The case table, (name, engine request), shared with bench_clickhouse_scale.py."""
    return [
        ("top-keywords 30d limit 500", TopKeywords("30d", 500)),
        (f"keyword-timeseries 90d hour, #1 keyword {keywords[0]!r}", KeywordTimeseries(keywords[0], "90d", "hour")),
        (f"keyword-timeseries 90d hour, #{len(keywords)} keyword {keywords[-1]!r}",
         KeywordTimeseries(keywords[-1], "90d", "hour")),
        (f"domain-timeseries 90d hour, #1 domain {top_domain!r}", DomainTimeseries(top_domain, "90d", "hour")),
        ("geo-heat 30d country", GeoHeat("30d", "country")),
        ("geo-heat 30d county", GeoHeat("30d", "county")),
        ("geo-heat 30d city", GeoHeat("30d", "city")),
        ("trending 30d keyword suppressions", Trending("30d", "keyword", "suppressions", 500, 10.0)),
        ("trending 30d keyword unique_users", Trending("30d", "keyword", "unique_users", 500, 10.0)),
        ("trending 30d domain suppressions", Trending("30d", "domain", "suppressions", 500, 10.0)),
        ("keyword-activity 30d all limit 500", KeywordActivity("30d", "all", 500)),
        ("query 90d totals", FlexibleQuery("90d", {}, (), None)),
        ("query 90d by keyword, limit 1000", FlexibleQuery("90d", {}, ("keyword",), None, limit=1000)),
        ("query 90d keyword x day, limit 1000", FlexibleQuery("90d", {}, ("keyword", "time"), "day", limit=1000)),
        ("query 90d US, county x platform", FlexibleQuery("90d", {"countries": ("US",)}, ("county", "platform"),
                                                          None, limit=1000)),
        # compare=previous_period (issue 25): the window and the one before it, on every side
        # (DuckDB runs the previous period's aggregate too: Case.previous_sql).
        ("top-keywords 30d limit 500, compare", TopKeywords("30d", 500, compare="previous_period")),
        ("geo-heat 30d county, compare", GeoHeat("30d", "county", compare="previous_period")),
        ("query 30d keyword x day, limit 1000", FlexibleQuery("30d", {}, ("keyword", "time"), "day", limit=1000)),
        ("query 30d keyword x day, limit 1000, compare",
         FlexibleQuery("30d", {}, ("keyword", "time"), "day", limit=1000, compare="previous_period")),
        ("top-keywords 30d limit 500, intervals", TopKeywords("30d", 500, intervals=True)),
    ]


def build_cases(engine: Engine, frames: EventFrames, as_of: dt.datetime, src: Sources) -> list[Case]:
    requests = case_requests(*case_subjects(engine, frames, as_of))
    return [Case(name, endpoint_of(request), request, sql_for(src, as_of, request), previous_sql(src, as_of, request))
            for name, request in requests]


def previous_sql(src: Sources, as_of: dt.datetime, req: Any) -> str | None:
    """With compare: the period before, as the engine computes it (engine/extras.py `records`: the request
    widened to every cell, ending where the window starts)."""
    if not getattr(req, "compare", None):
        return None
    return sql_for(src, previous_as_of(req.window, as_of), SHAPES[endpoint_of(req)].widen(req))


ENDPOINT_OF = {TopKeywords: "top_keywords", KeywordTimeseries: "keyword_timeseries",
               DomainTimeseries: "domain_timeseries", GeoHeat: "geo_heat", Trending: "trending",
               KeywordActivity: "keyword_activity", FlexibleQuery: "query"}


def endpoint_of(request: Any) -> str:
    return ENDPOINT_OF[type(request)]


def sql_for(src: Sources, as_of: dt.datetime, req: Any) -> str:
    if isinstance(req, KeywordTimeseries):
        return sql_timeseries(src, as_of, "keyword", req.keyword, req.window, req.bucket)
    if isinstance(req, DomainTimeseries):
        return sql_timeseries(src, as_of, "domain", req.domain, req.window, req.bucket)
    builders: dict[type, Callable[[Sources, dt.datetime, Any], str]] = {
        TopKeywords: sql_top_keywords, GeoHeat: sql_geo_heat, Trending: sql_trending,
        KeywordActivity: sql_keyword_activity, FlexibleQuery: sql_query,
    }
    return builders[type(req)](src, as_of, req)


# ---- HTTP ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(data_dir: Path, port: int | None = None) -> dict[str, str]:
    # The compute deadline at its maximum (600 s) unless set: this times the computation, and on a
    # loaded 2-core machine /query keyword x day passes the default 20 s even at 10M events (a 503
    # would stop the run).
    env = {"SIGNALS_COMPUTE_DEADLINE_SECONDS": "600", **os.environ, "SIGNALS_DATA_DIR": str(data_dir),
           "WEB_CONCURRENCY": "1", "SIGNALS_CACHE_RESPONSES": "false", "SIGNALS_LOG_LEVEL": "warning",
           "SIGNALS_SECRET": bench_secret(),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("REDIS_URL", "SIGNALS_ACCOUNTS_URL"):  # in-process gate; accounts in the data dir
        env.pop(name, None)
    if port is not None:
        env["PORT"] = str(port)
    return env


def create_key(data_dir: Path) -> str:
    """A new Professional key (`python -m service keys create`; the key is the last line)."""
    done = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--tier", "professional"],
                          cwd=ROOT, env=server_env(data_dir), capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def wait_ready(process: subprocess.Popen, base: str) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with code {process.returncode} before it was ready")
        with contextlib.suppress(httpx.TransportError):
            resp = httpx.get(base + "/readyz", timeout=5)
            if resp.status_code == 200:
                return resp.json()
        if time.monotonic() > deadline:
            raise SystemExit(f"gunicorn not ready after {READY_TIMEOUT:.0f} s")
        time.sleep(0.5)


@contextlib.contextmanager
def served(data_dir: Path) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """The web process of the Procfile, one worker, no response cache; a client with a Professional key."""
    key = create_key(data_dir)
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py", "service.wsgi:app"],
        cwd=ROOT, env=server_env(data_dir, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        ready = wait_ready(process, base)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=HTTP_TIMEOUT) as client:
            yield client, ready
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Pacer:
    """Keeps the requests sent in any 60 seconds below `per_minute` (the server's moving window)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.sent: collections.deque[float] = collections.deque()

    def wait(self) -> None:
        now = time.monotonic()
        while self.sent and now - self.sent[0] >= 60:
            self.sent.popleft()
        if len(self.sent) >= self.per_minute:
            time.sleep(60 - (now - self.sent[0]) + 0.1)
        self.sent.append(time.monotonic())


def http_request(case: Case) -> dict[str, Any]:
    """httpx.Client.request arguments for the case: the engine request's fields as parameters or body."""
    endpoint = BY_NAME[case.endpoint]
    # Left out: None, and a false flag (intervals=false is the default, sent as no parameter).
    fields = {name: value for name, value in dataclasses.asdict(case.request).items()
              if value is not None and value is not False}
    if endpoint.in_body:
        return {"method": "POST", "url": endpoint.full_path, "json": fields}
    return {"method": "GET", "url": endpoint.full_path, "params": fields}


def send(client: httpx.Client, pacer: Pacer, request: dict[str, Any]) -> tuple[float, httpx.Response]:
    """Seconds until the whole response was read, and the response (retried after a 429)."""
    for _ in range(3):
        pacer.wait()
        started = time.perf_counter()
        resp = client.request(**request)
        elapsed = time.perf_counter() - started
        if resp.status_code == 429:
            time.sleep(float(resp.headers.get("Retry-After", "5")))
            continue
        if resp.status_code != 200:
            raise SystemExit(f"{request['method']} {request['url']}: HTTP {resp.status_code}: {resp.text[:500]}")
        return elapsed, resp
    raise SystemExit(f"{request['method']} {request['url']}: still rate limited after 3 attempts")


# ---- measuring -----------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=0, abs_tol=GROWTH_TOLERANCE)
    return a == b


def compare(case: Case, ours: pl.DataFrame, theirs: pl.DataFrame) -> list[str]:
    """Warnings where DuckDB's answer differs from the engine's: row count, and every row in
    order (the first CHECK_ROWS differing rows shown, and how many differ)."""
    problems = []
    if ours.height != theirs.height:
        problems.append(f"{case.name}: engine {ours.height} rows, DuckDB {theirs.height}")
    columns = theirs.columns
    differing = [(i, a, b) for i, (a, b) in enumerate(zip(ours.select(columns).rows(), theirs.rows(), strict=False))
                 if not all(_same(x, y) for x, y in zip(a, b, strict=True))]
    for i, a, b in differing[:CHECK_ROWS]:
        problems.append(f"{case.name}: row {i + 1} differs: engine {a}, DuckDB {b} (columns {columns})")
    if len(differing) > CHECK_ROWS:
        problems.append(f"{case.name}: {len(differing)} of {min(ours.height, theirs.height)} rows differ")
    return problems


def check_http(case: Case, resp: httpx.Response, rows: int, as_of: dt.datetime) -> list[str]:
    problems = []
    records = len(resp.json()[BY_NAME[case.endpoint].records_field])
    if records != rows:
        problems.append(f"{case.name}: HTTP returned {records} records, engine {rows} rows")
    if resp.headers.get("X-Signals-As-Of") != iso_z(as_of):
        problems.append(f"{case.name}: server as_of {resp.headers.get('X-Signals-As-Of')}, ours {iso_z(as_of)}")
    return problems


def duckdb_answer(con: duckdb.DuckDBPyConnection, case: Case) -> Any:
    """DuckDB's answer to a case (with compare, after computing the period before as well)."""
    if case.previous_sql is not None:
        con.sql(case.previous_sql).to_arrow_table()
    return con.sql(case.sql).to_arrow_table()


def measure(cases: list[Case], engine: Engine, checked: Engine, frames: EventFrames, as_of: dt.datetime,
            con: duckdb.DuckDBPyConnection, client: httpx.Client, runs: int, clickhouse: ClickHouseEngine | None,
            snapshot: ClickHouseSnapshot | None) -> tuple[list[Timings], list[str]]:
    """Times `engine` (the privacy stage as served); checks `checked` (the same stage without
    noise) against DuckDB, which computes the same capped aggregates from true values, and the
    ClickHouse engine's answer against `engine`'s (equal, noise included)."""
    pacer = Pacer(REQUESTS_PER_MINUTE)
    results, warnings = [], []
    with tqdm(total=len(cases) * (runs + 1), desc="cases x runs", unit="run", file=sys.stderr) as bar:
        for case in cases:
            run_engine = getattr(engine, case.endpoint)
            sides: dict[str, Callable[[], Any]] = {
                "engine": lambda run_engine=run_engine, case=case: run_engine(frames, as_of, case.request),
                "duckdb": lambda case=case: duckdb_answer(con, case),
            }
            if clickhouse is not None:  # --no-clickhouse: not timed
                run_clickhouse = getattr(clickhouse, case.endpoint)
                sides["clickhouse"] = lambda run_ch=run_clickhouse, case=case: run_ch(snapshot, as_of, case.request)
            request = http_request(case)
            # Warm-up (not timed): code paths, page cache; and the sanity checks.
            ours, theirs = sides["engine"](), pl.from_arrow(sides["duckdb"]())
            warnings += compare(case, getattr(checked, case.endpoint)(frames, as_of, case.request), theirs)
            if "clickhouse" in sides and not sides["clickhouse"]().equals(ours):
                warnings.append(f"{case.name}: the ClickHouse engine's frame differs from the engine's")
            _, resp = send(client, pacer, request)
            warnings += check_http(case, resp, ours.height, as_of)
            bar.update(1)
            timings = Timings(rows=ours.height)
            for run in range(runs):
                for side in ("engine", "duckdb", "clickhouse") if run % 2 == 0 else ("clickhouse", "duckdb", "engine"):
                    if side in sides:
                        getattr(timings, side).append(timed(sides[side])[0])
                timings.http.append(send(client, pacer, request)[0])
                bar.update(1)
            results.append(timings)
    return results, warnings


# ---- reporting -----------------------------------------------------------------------------


def ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000 if seconds else math.nan  # nan: a side not timed


def table(cases: list[Case], results: list[Timings]) -> str:
    lines = ["| case | rows | engine ms | HTTP ms | DuckDB ms | ClickHouse (chdb) ms | DuckDB/engine | DuckDB/HTTP "
             "| ClickHouse/engine |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case, t in zip(cases, results, strict=True):
        e, h, d, c = ms(t.engine), ms(t.http), ms(t.duckdb), ms(t.clickhouse)
        lines.append(f"| {case.name} | {t.rows:,} | {e:.1f} | {h:.1f} | {d:.1f} | {c:.1f} | {d / e:.2f} | {d / h:.2f} "
                     f"| {c / e:.2f} |".replace("nan", "—"))
    return "\n".join(lines)


def header(command: str, data_info: dict[str, Any], frames: EventFrames, as_of: dt.datetime,
           loads: list[float], runs: int, params: PrivacyParams) -> list[str]:
    return [
        "# Endpoint latency: engine vs HTTP (gunicorn, 1 worker) vs DuckDB vs ClickHouse engine (chdb), cold "
        "(no response cache)",
        "",
        f"- command: `{command}`",
        f"- data: {frames.suppressions.height:,} suppressions, {frames.keyword_changes.height:,} keyword changes "
        f"({data_info['days']} days, seed {data_info['seed']}, generated {data_info['generated_at']})",
        f"- as_of: {iso_z(as_of)}",
        f"- load (EventStore.snapshot, fresh store): median {statistics.median(loads):.2f} s of "
        f"{', '.join(f'{s:.2f}' for s in loads)} s",
        f"- both sides compute per-user capped sums with a cap per cell (pilot sums capped at {params.pilot_cap}; "
        f"cap = ceil({params.cap_multiplier:g} x mean x (1 + {params.cap_growth:g} x log10(max(n, 100) / 100))) "
        f"in [1, {params.max_cap}], mean = (pilot - {params.pilot_shrink:g} x pilot noise sd) / n in "
        f"[1, {params.pilot_cap}]) and publish cells with at least {params.min_users} users; the engine from "
        f"noisy pilot sums and user counts, adding noise, DuckDB from true ones",
        f"- median of {runs} runs per case after one warm-up; ms; DuckDB/engine > 1: we are faster than DuckDB; "
        f"ClickHouse/engine < 1: the ClickHouse engine is faster than the polars engine",
        f"- Python {platform.python_version()}, polars {pl.__version__}, duckdb {duckdb.__version__}, "
        f"chdb {chdb_version()}, "
        f"{os.cpu_count()} cores",
    ]


def chdb_version() -> str:
    import chdb

    return f"{chdb.__version__} (ClickHouse {chdb.engine_version})"


def write_reports(md: str, payload: dict[str, Any]) -> None:
    (OUT / "endpoints.md").write_text(md + "\n")
    (OUT / "endpoints.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="suppression events (default 10000000)")
    parser.add_argument("--days", type=int, default=90, help="days of history (default 90)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case and side (default 5)")
    parser.add_argument("--seed", type=int, default=7, help="demo data seed (default 7)")
    parser.add_argument("--no-clickhouse", dest="clickhouse", action="store_false",
                        help="leave the ClickHouse (chdb) side out (at 100M events its load and its slowest "
                        "queries take hours here; bench_clickhouse_scale.py times it alone)")
    parser.add_argument("--cases", nargs="+", metavar="TEXT",
                        help="only the cases whose name contains one of these (e.g. 'top-keywords' 'query 90d totals')")
    args = parser.parse_args()
    if args.events < 1 or args.days < 1 or args.runs < 1:
        parser.error("--events, --days and --runs must be at least 1")
    return args


def main() -> None:
    args = parse_args()
    command = shlex.join(sys.orig_argv)
    OUT.mkdir(parents=True, exist_ok=True)
    data_dir, data_info = ensure_data(args.events, args.days, args.seed)
    print(f"Loading the event store {LOAD_RUNS} times ...", file=sys.stderr)
    frames, loads = load_snapshot(data_dir)
    # As a web worker does when it loads the data (backend.ParquetBackend.warm, in the background
    # there): the users' spare bits, so that (cell, user) groupings take one packed key.
    started = time.perf_counter()
    user_keys.learn(frames)
    print(f"Learnt the users' spare bits in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    as_of = compute_as_of(SystemClock().now(), frames.last_event)
    # Timed as served: the real privacy stage with the settings' parameters (the bench secret).
    bench_secret()
    settings = Settings.from_env()  # the environment the served process inherits too
    engine = Engine(Privacy(settings.require_secret(), privacy_params(settings)))
    # Checked against DuckDB: the same privacy stage and parameters without noise.
    checked = Engine(Noiseless(settings.require_secret(), privacy_params(settings)))
    cases = build_cases(checked, frames, as_of, Sources.of(data_dir, checked.privacy.params))
    if args.cases:  # --cases: only the cases whose name contains one of these
        cases = [case for case in cases if any(part in case.name for part in args.cases)]
    con = duckdb_connection()
    snapshot, clickhouse_load, clickhouse = None, None, None
    if args.clickhouse:
        snapshot, clickhouse_load = ensure_clickhouse(data_dir, args.events, args.days, args.seed)
        clickhouse = ClickHouseEngine(Privacy(settings.require_secret(), privacy_params(settings)))
    print("Starting gunicorn ...", file=sys.stderr)
    with served(data_dir) as (client, ready):
        served_generation = ready["checks"]["data"]["generation"]
        results, warnings = measure(cases, engine, checked, frames, as_of, con, client, args.runs, clickhouse,
                                    snapshot)
    if served_generation != frames.generation:
        warnings.append(f"server loaded data generation {served_generation}, engine {frames.generation}")

    lines = header(command, data_info, frames, as_of, loads, args.runs, engine.privacy.params)
    lines += ["", table(cases, results)]
    lines += ["", "Warnings:", *(f"- WARNING {w}" for w in warnings)] if warnings else ["", "No mismatches."]
    md = "\n".join(lines)
    print(md)
    write_reports(md, {
        "command": command, "args": vars(args), "data_dir": str(data_dir), "data": data_info,
        "suppressions": frames.suppressions.height, "keyword_changes": frames.keyword_changes.height,
        "as_of": iso_z(as_of), "load_seconds": loads, "load_seconds_median": statistics.median(loads),
        "versions": {"python": platform.python_version(), "polars": pl.__version__, "duckdb": duckdb.__version__,
                     "chdb": chdb_version()},
        "clickhouse_load_seconds": clickhouse_load,
        "cpu_count": os.cpu_count(), "warnings": warnings,
        "cases": [{"name": c.name, "endpoint": c.endpoint, "http": http_request(c), "sql": " ".join(c.sql.split()),
                   "rows": t.rows, "engine_s": t.engine, "http_s": t.http, "duckdb_s": t.duckdb,
                   "engine_ms": ms(t.engine), "http_ms": ms(t.http), "duckdb_ms": ms(t.duckdb),
                   "duckdb_over_engine": ms(t.duckdb) / ms(t.engine), "duckdb_over_http": ms(t.duckdb) / ms(t.http),
                   "clickhouse_s": t.clickhouse, "clickhouse_ms": ms(t.clickhouse),
                   "clickhouse_over_engine": ms(t.clickhouse) / ms(t.engine)}
                  for c, t in zip(cases, results, strict=True)],
    })
    print(f"\nWrote {OUT / 'endpoints.md'} and {OUT / 'endpoints.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
