"""Accuracy of every published number against the truth: the engine (caps + noise) vs DuckDB (exact).

For every endpoint and window — the six GET endpoints and POST /query with and without group_by —
the engine answers in-process on a snapshot of the demo store, exactly as the API does (the
settings' privacy parameters and the bench secret), and DuckDB computes the true, uncapped,
noise-free values from the same Parquet files. Each published cell is matched with its true cell
and its relative error |published - true| / true recorded, per measure (`suppressions`, `events`,
and `unique_users` for comparison; keyword activity's adds/removes/edits count as `events`).

Cells are grouped by their true size (>= 10,000; 1,000-10,000; 100-1,000; 10-100), and for each
group the median and 95th percentile of the relative error are printed, per case and pooled (also
pooled without geo-heat, where the cap's ceiling costs), with the error of each case's largest
cell. Intervals (`intervals=true`) are checked too: how often they hold the exact value by true
size, and by the cell's exact number of users, every published cell included (issue 33: at least
85 % in every group of every endpoint). The targets (issue 11): cells >= 10,000 median <= 3 %,
p95 <= 8 %, largest cell of each endpoint within 5 %; cells of 1,000-10,000 median <= 15 %.
Cells the privacy stage suppressed are not in the answers and are counted separately (a
suppressed cell >= 1,000 would be a failure of its own).

    .venv/bin/python bench/bench_accuracy.py [--events 10000000] [--days 90] [--seed 7] [--rule served]

Uses the benchmark data set of bench_endpoints.py (generated once under bench/out/). Writes
bench/out/accuracy-<rule>.md and prints it.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import OUT, ensure_data  # noqa: E402
from bench_secret import bench_secret  # noqa: E402
from cap_rules import RULES, cap_rule  # noqa: E402

from service.api.windows import TimeRange, compute_as_of, trending_periods, window_range  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.requests import (  # noqa: E402
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402

SIZES = [(10_000, None, ">= 10,000"), (1_000, 10_000, "1,000-10,000"), (100, 1_000, "100-1,000"), (10, 100, "10-100")]
# Cells by their exact number of users, for interval coverage: every published cell, the smallest
# (published by their noisy user count while fewer than k users are behind them) included.
USER_SIZES = [*SIZES, (0, 10, "below 10")]
MEASURES = ("suppressions", "events", "unique_users")


def iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


class Truth:
    """Exact aggregates by DuckDB from the store's Parquet files."""

    def __init__(self, data_dir: Path) -> None:
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        for table in ("suppressions", "keyword_changes"):
            self.con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{data_dir / table}/*/*.parquet', "
                "hive_partitioning = true)"
            )

    def cells(self, span: TimeRange, keys: list[str], where: str = "", table: str = "suppressions",
              measures: str = "") -> pl.DataFrame:
        measures = measures or ("sum(suppressions)::BIGINT AS suppressions, count(*)::BIGINT AS events, "
                                "count(DISTINCT user_id)::BIGINT AS unique_users")
        select = ", ".join(keys)
        conditions = [f"ts >= TIMESTAMPTZ '{iso(span.start)}+00' AND ts < TIMESTAMPTZ '{iso(span.end)}+00'"]
        conditions += [f"{k} IS NOT NULL" for k in keys if not k.startswith("time_bucket")]
        if where:
            conditions.append(where)
        group = "GROUP BY ALL" if keys else ""
        sql = f"SELECT {select + ', ' if keys else ''}{measures} FROM {table} WHERE {' AND '.join(conditions)} {group}"
        return pl.from_arrow(self.con.sql(sql).to_arrow_table())


def relative_errors(shown: pl.DataFrame, truth: pl.DataFrame, on: list[str], pairs: dict[str, str]) -> dict[str, pl.DataFrame]:
    """Per measure: (true, error, users) of every published cell, matched with its true cell on `on`
    (`users`: the cell's exact number of users); and, when `shown` has `intervals` (issue 25),
    whether the cell's interval holds the true value (`covered`) and its width relative to the
    true value (`width`)."""
    joined = shown.join(truth, on=on, how="inner", suffix="_true") if on else \
        shown.with_columns(pl.lit(1).alias("_k")).join(truth.with_columns(pl.lit(1).alias("_k")), on="_k", suffix="_true")
    out = {}
    for shown_column, measure in pairs.items():
        true_column = f"{measure}_true" if measure in shown.columns or measure == shown_column else measure
        true = joined.get_column(true_column).cast(pl.Float64)
        value = joined.get_column(shown_column).cast(pl.Float64)
        users = joined.get_column("unique_users_true" if "unique_users_true" in joined.columns else "unique_users")
        frame = pl.DataFrame({"true": true, "error": ((value - true).abs() / true), "users": users.cast(pl.Float64)})
        if "intervals" in joined.columns:
            fields = [f.name for f in joined.schema["intervals"].fields]
            field = next(f for f in (shown_column, "users_est", "unique_users") if f in fields)
            bounds = joined.get_column("intervals").struct.field(field)
            low, high = bounds.list.get(0).cast(pl.Float64), bounds.list.get(1).cast(pl.Float64)
            frame = frame.with_columns(covered=(low <= true) & (true <= high), width=(high - low) / true)
        out.setdefault(measure, []).append(frame)
    return {m: pl.concat(frames) for m, frames in out.items()}


def coverage_by_users(errors: pl.DataFrame) -> dict[str, tuple[int, float]]:
    """Per group of cells by their exact number of users: cells, share of intervals holding the true
    value (every published cell with an interval, whatever its size)."""
    result = {}
    if "covered" not in errors.columns:
        return result
    for low, high, label in USER_SIZES:
        group = errors.filter((pl.col("users") >= low) & ((pl.col("users") < high) if high else True)
                              & pl.col("covered").is_not_null())
        if group.height:
            result[label] = (group.height, float(group["covered"].mean()))
    return result


def coverage(errors: pl.DataFrame) -> dict[str, tuple[int, float, float, float]]:
    """Per size group: cells, share of intervals holding the true value, median and p90 relative width."""
    result = {}
    for low, high, label in SIZES:
        group = errors.filter((pl.col("true") >= low) & ((pl.col("true") < high) if high else True))
        if "covered" not in group.columns:
            continue
        group = group.filter(pl.col("covered").is_not_null())
        if group.height:
            result[label] = (group.height, float(group["covered"].mean()), float(group["width"].median()),
                             float(group["width"].quantile(0.9, "higher")))
    return result


def summarise(errors: pl.DataFrame) -> dict[str, tuple[int, float, float]]:
    result = {}
    for low, high, label in SIZES:
        group = errors.filter((pl.col("true") >= low) & ((pl.col("true") < high) if high else True))
        if group.height:
            result[label] = (group.height, float(group["error"].median()), float(group["error"].quantile(0.95, "higher")))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rule", choices=RULES, default="served",
                        help="the cap rule as served, or without a part of it (bench/cap_rules.py)")
    parser.add_argument("--pilot-shrink", type=float, default=None, metavar="SDS",
                        help="read the pilot sums this many noise sds low instead of the default "
                             "(PrivacyParams.pilot_shrink), to weigh a change of it")
    parser.add_argument("--cap-fit", type=float, default=None, metavar="SHARE",
                        help="the ceiling's share of a cell's sum read low instead of the default "
                             "(PrivacyParams.cap_fit), to weigh a change of it")
    args = parser.parse_args()
    with cap_rule(args.rule, privacy_params(Settings())) as params:
        measure(args, params)


def measure(args: argparse.Namespace, params) -> None:
    data_dir, _info = ensure_data(args.events, args.days, args.seed)
    frames = EventStore(data_dir).snapshot()
    last = frames.suppressions.get_column("ts").max()
    as_of = compute_as_of(last + dt.timedelta(hours=1), last)
    if args.pilot_shrink is not None:
        params = dataclasses.replace(params, pilot_shrink=args.pilot_shrink)
    if args.cap_fit is not None:
        params = dataclasses.replace(params, cap_fit=args.cap_fit)
    engine = Engine(Privacy(bench_secret(), params))
    truth = Truth(data_dir)
    top = engine.top_keywords(frames, as_of, TopKeywords("30d", 500))
    keywords = [top["keyword_raw"][i] for i in (0, 9, 99) if i < top.height]
    domains = truth.cells(window_range("30d", as_of), ["domain"]).sort("suppressions", descending=True)["domain"]
    domains = [domains[i] for i in (0, 9, 29) if i < len(domains)]

    cases: list[tuple[str, str, Callable[[], dict[str, pl.DataFrame]]]] = []

    def case(endpoint: str, label: str):
        def register(fn):
            cases.append((endpoint, label, fn))
            return fn
        return register

    for window in ("1h", "6h", "12h", "24h", "7d", "30d"):
        @case("top-keywords", f"window={window} limit=500")
        def _(window=window):
            shown = engine.top_keywords(frames, as_of, TopKeywords(window, 500, intervals=True))
            shown = shown.select(pl.col("keyword_raw").alias("keyword"), "suppressions", pl.col("users_est").alias("users"),
                                 "intervals")
            true = truth.cells(window_range(window, as_of), ["keyword"]).with_columns(pl.col("keyword").cast(pl.String))
            return relative_errors(shown, true, ["keyword"], {"suppressions": "suppressions", "users": "unique_users"})

        for level in ("country", "region", "county", "city"):
            @case("geo-heat", f"window={window} level={level}")
            def _(window=window, level=level):
                shown = engine.geo_heat(frames, as_of, GeoHeat(window, level, intervals=True)).select(
                    pl.col("geo_key").alias(level), "suppressions", pl.col("unique_users").alias("users"), "intervals")
                true = truth.cells(window_range(window, as_of), [level]).with_columns(pl.col(level).cast(pl.String))
                return relative_errors(shown, true, [level], {"suppressions": "suppressions", "users": "unique_users"})

        @case("keyword-activity", f"window={window} type=all limit=500")
        def _(window=window):
            shown = engine.keyword_activity(frames, as_of, KeywordActivity(window, "all", 500, intervals=True))
            true = truth.cells(window_range(window, as_of), ["keyword"], table="keyword_changes", measures=(
                "count(*) FILTER (WHERE action = 'add')::BIGINT AS adds_t, "
                "count(*) FILTER (WHERE action = 'remove')::BIGINT AS removes_t, "
                "count(*) FILTER (WHERE action = 'edit')::BIGINT AS edits_t, "
                "count(DISTINCT user_id) FILTER (WHERE action = 'add')::BIGINT AS adds_users_t, "
                "count(DISTINCT user_id) FILTER (WHERE action = 'remove')::BIGINT AS removes_users_t, "
                "count(DISTINCT user_id) FILTER (WHERE action = 'edit')::BIGINT AS edits_users_t, "
                "count(DISTINCT user_id)::BIGINT AS unique_users_t")).with_columns(pl.col("keyword").cast(pl.String))
            joined = shown.join(true, on="keyword")
            out: dict[str, list[pl.DataFrame]] = {"events": [], "unique_users": []}
            for column, measure in (("adds", "events"), ("removes", "events"), ("edits", "events"),
                                    ("unique_users", "unique_users")):
                # A count shown as 0 was suppressed (fewer than k users behind it): not a published number.
                part = joined.filter(pl.col(column) > 0) if measure == "events" else joined
                true, bounds = pl.col(f"{column}_t").cast(pl.Float64), pl.col("intervals").struct.field(column)
                users = "unique_users_t" if column == "unique_users" else f"{column}_users_t"
                out[measure].append(part.select(
                    true.alias("true"),
                    ((pl.col(column) - pl.col(f"{column}_t")).abs() / pl.col(f"{column}_t")).alias("error"),
                    pl.col(users).cast(pl.Float64).alias("users"),
                    ((bounds.list.get(0) <= true) & (true <= bounds.list.get(1))).alias("covered"),
                    ((bounds.list.get(1) - bounds.list.get(0)) / true).alias("width"),
                ))
            return {m: pl.concat(v) for m, v in out.items()}

    for window in ("24h", "7d", "30d", "90d"):
        for bucket in ("hour", "day", "week"):
            for column, subjects in (("keyword", keywords), ("domain", domains)):
                for subject in subjects:
                    @case(f"{column}-timeseries", f"{column}={subject} window={window} bucket={bucket}")
                    def _(window=window, bucket=bucket, column=column, subject=subject):
                        request = (KeywordTimeseries if column == "keyword" else DomainTimeseries)(subject, window, bucket,
                                                                                                   intervals=True)
                        method = engine.keyword_timeseries if column == "keyword" else engine.domain_timeseries
                        shown = method(frames, as_of, request).filter(pl.col("users_est") > 0)
                        span = window_range(window, as_of)
                        unit = {"hour": "1 hour", "day": "1 day", "week": "1 week"}[bucket]
                        true = truth.cells(span, [f"time_bucket(INTERVAL '{unit}', ts) AS ts"],
                                           where=f"{column} = '{subject}'")
                        true = true.with_columns(pl.col("ts").dt.replace_time_zone("UTC").cast(shown.schema["ts"]))
                        return relative_errors(shown.rename({"users_est": "users"}), true, ["ts"],
                                               {"suppressions": "suppressions", "events": "events", "users": "unique_users"})

    for window in ("24h", "7d", "30d"):
        for dimension in ("keyword", "domain", "platform", "page_context"):
            for metric in ("suppressions", "events"):
                @case("trending", f"window={window} dimension={dimension} metric={metric}")
                def _(window=window, dimension=dimension, metric=metric):
                    shown = engine.trending(frames, as_of, Trending(window, dimension, metric, 500, 10))
                    periods = trending_periods(window, as_of)
                    out: dict[str, list[pl.DataFrame]] = {}
                    for column, span in (("recent", periods.recent), ("baseline", periods.baseline)):
                        true = truth.cells(span, [dimension]).with_columns(pl.col(dimension).cast(pl.String))
                        part = relative_errors(shown.select(pl.col("value").alias(dimension), column), true,
                                               [dimension], {column: metric})
                        for m, frame in part.items():
                            out.setdefault(m, []).append(frame)
                    return {m: pl.concat(v) for m, v in out.items()}

    query_shapes = [(), ("country",), ("keyword",), ("domain", "platform"), ("keyword", "time"), ("region", "page_context")]
    for window in ("1h", "6h", "12h", "24h", "7d", "30d", "90d"):
        for group_by in query_shapes:
            @case("query", f"window={window} group_by=[{', '.join(group_by)}]")
            def _(window=window, group_by=group_by):
                bucket = "day" if "time" in group_by else None
                shown = engine.query(frames, as_of, FlexibleQuery(window, {}, group_by, bucket, limit=1000, intervals=True))
                keys = []
                rename = {}
                for dimension in group_by:
                    if dimension in ("country", "region", "county", "city"):
                        rename[f"{dimension}_id"] = dimension
                        keys.append(dimension)
                    elif dimension == "time":
                        keys.append("ts")
                    else:
                        keys.append(dimension)
                shown = shown.rename(rename).rename({"unique_users": "users"})
                sql_keys = ["time_bucket(INTERVAL '1 day', ts) AS ts" if k == "ts" else k for k in keys]
                true = truth.cells(window_range(window, as_of), sql_keys)
                true = true.with_columns(
                    (pl.col(k).dt.replace_time_zone("UTC").cast(shown.schema["ts"]) if k == "ts" else pl.col(k).cast(pl.String))
                    for k in keys)
                return relative_errors(shown, true, keys, {"suppressions": "suppressions", "events": "events", "users": "unique_users"})

    pooled: dict[str, list[pl.DataFrame]] = {}
    per_endpoint: dict[tuple[str, str], list[pl.DataFrame]] = {}
    thirty_days: dict[tuple[str, str], list[pl.DataFrame]] = {}  # ("every endpoint" | "geo-heat", measure)
    lines = [f"Accuracy on {args.events:,} events over {args.days} days (seed {args.seed}), as_of {as_of:%Y-%m-%dT%H:%MZ}; "
             f"cap rule: {args.rule}; privacy parameters: {params}" + (" (pilot_shrink set by --pilot-shrink)" if args.pilot_shrink is not None else ""), "",
             "| endpoint | case | measure | size | cells | median | p95 | largest cell |", "|---|---|---|---|---:|---:|---:|---:|"]
    started = time.perf_counter()
    for endpoint, label, fn in cases:
        for measure, errors in fn().items():
            if errors.height == 0:
                continue
            pooled.setdefault(measure, []).append(errors)
            per_endpoint.setdefault((endpoint, measure), []).append(errors)
            if "window=30d" in label.split():
                thirty_days.setdefault(("every endpoint", measure), []).append(errors)
                if endpoint == "geo-heat":
                    thirty_days.setdefault(("geo-heat, every level", measure), []).append(errors)
            largest = errors.sort("true", descending=True).row(0, named=True)
            for size, (count, median, p95) in summarise(errors).items():
                lines.append(f"| {endpoint} | {label} | {measure} | {size} | {count} | {median:.1%} | {p95:.1%} | "
                             f"{largest['error']:.2%} of {largest['true']:,.0f} |")
    lines += ["", "Per endpoint (all its cases pooled), and overall:", "",
              "| endpoint | measure | size | cells | median | p95 | the endpoint's largest cell |",
              "|---|---|---|---|---:|---:|---:|"]
    for (endpoint, measure), parts in sorted(per_endpoint.items()):
        frame = pl.concat(parts, how="diagonal")
        largest = frame.sort("true", descending=True).row(0, named=True)
        for size, (count, median, p95) in summarise(frame).items():
            lines.append(f"| {endpoint} | {measure} | {size} | {count} | {median:.1%} | {p95:.1%} | {largest['error']:.2%} of {largest['true']:,.0f} |")
    for measure, parts in sorted(pooled.items()):
        for size, (count, median, p95) in summarise(pl.concat(parts, how="diagonal")).items():
            lines.append(f"| **all** | {measure} | {size} | {count} | {median:.1%} | {p95:.1%} | |")
    # Geo-heat's small places are where the cap rule's ceiling costs (docs/privacy.md): the rest apart.
    for measure in sorted(pooled):
        parts = [frame for (endpoint, m), frames in per_endpoint.items() if m == measure and endpoint != "geo-heat"
                 for frame in frames]
        for size, (count, median, p95) in summarise(pl.concat(parts, how="diagonal")).items():
            lines.append(f"| **all but geo-heat** | {measure} | {size} | {count} | {median:.1%} | {p95:.1%} | |")
    lines += ["", "Cells over 30 days (the 30-day cases pooled; issue 41's target on a small store: suppressions "
              "of 1,000-10,000, median at most 15 %):", "",
              "| cells | measure | size | cells | median | p95 |", "|---|---|---|---:|---:|---:|"]
    for (group, measure), parts in sorted(thirty_days.items()):
        for size, (count, median, p95) in summarise(pl.concat(parts, how="diagonal")).items():
            lines.append(f"| {group} | {measure} | {size} | {count} | {median:.1%} | {p95:.1%} |")
    lines += ["", "Intervals (`intervals=true`, target: about 90 % hold the exact value), per measure and true size, "
              "every endpoint but trending pooled:", "",
              "| measure | size | cells | coverage | median width | p90 width |", "|---|---|---:|---:|---:|---:|"]
    for measure, parts in sorted(pooled.items()):
        for size, (count, covered, width, width90) in coverage(pl.concat(parts, how="diagonal")).items():
            lines.append(f"| {measure} | {size} | {count} | {covered:.1%} | ± {width / 2:.1%} | ± {width90 / 2:.1%} |")
    lines += ["", "Interval coverage per endpoint:", "", "| endpoint | measure | size | cells | coverage | median width |",
              "|---|---|---|---:|---:|---:|"]
    for (endpoint, measure), parts in sorted(per_endpoint.items()):
        for size, (count, covered, width, _w90) in coverage(pl.concat(parts, how="diagonal")).items():
            lines.append(f"| {endpoint} | {measure} | {size} | {count} | {covered:.1%} | ± {width / 2:.1%} |")
    labels = [label for _low, _high, label in USER_SIZES]
    lines += ["", "Interval coverage by the cell's exact number of users (every published cell with an interval, "
              "the smallest included; target: at least 85 % in every group), pooled and per endpoint:", "",
              f"| endpoint | measure | {' | '.join(f'{label} users' for label in labels)} |",
              f"|---|---|{'---:|' * len(labels)}"]
    groups = [(("all", m), parts) for m, parts in sorted(pooled.items())] + sorted(per_endpoint.items())
    for (endpoint, measure), parts in groups:
        by_users = coverage_by_users(pl.concat(parts, how="diagonal"))
        if by_users:
            cells = [f"{by_users[label][1]:.1%} of {by_users[label][0]:,}" if label in by_users else "" for label in labels]
            lines.append(f"| {endpoint} | {measure} | {' | '.join(cells)} |")
    lines.append(f"\n{len(cases)} cases in {time.perf_counter() - started:.0f} s.")
    text = "\n".join(lines)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"accuracy-{args.rule}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
