"""Privacy by release (issue 50), measured: accuracy, users on sliding windows, speed, attacks.

The release is read in process (`service.release.windows.Release.load`, answered by
`service.release.engine.ReleaseEngine`, what `create_app` serves with SIGNALS_PRIVACY_RELEASE=1;
but see `attacks --http` on service/wsgi.py); the exact values are the plain aggregates of the stored events
(polars over the store's Parquet files: sums and distinct users as they are, WITHOUT the release's
per-user-day bounding, so the bounding's bias counts as error).

    # a store and its release (1M: ~6 s and ~90 s; 10M: ~60 s and see `build`)
    SIGNALS_SECRET=bench-secret SIGNALS_DATA_DIR=/tmp/rel1m .venv/bin/python -m service data demo --events 1000000 --days 90
    SIGNALS_SECRET=bench-secret SIGNALS_DATA_DIR=/tmp/rel1m .venv/bin/python -m service data release

    .venv/bin/python bench/bench_release.py accuracy  --data-dir /tmp/rel1m   # errors, shown cells, intervals, rankings
    .venv/bin/python bench/bench_release.py sliding   --data-dir /tmp/rel1m   # users estimated on 24 hourly as_of
    .venv/bin/python bench/bench_release.py latency   --data-dir /tmp/rel1m   # cold Release.load and answers (a fresh process)
    .venv/bin/python bench/bench_release.py build     --data-dir /tmp/rel1m [--copy]  # `data release --rebuild`: time, peak RSS
    .venv/bin/python bench/bench_release.py scratch   --data-dir /tmp/rel1m   # the same build in process: where the time goes
    .venv/bin/python bench/bench_release.py incremental --data-dir /tmp/rel1m # one hour released on top of the rest
    .venv/bin/python bench/bench_release.py attacks   --data-dir /tmp/rel1m [--other-secret-dir DIR] [--http]

`attacks --http` also serves the data with gunicorn and SIGNALS_PRIVACY_RELEASE=1, once with
bench/release_wsgi.py (the app built without a store: the release) and once with service.wsgi:app
(as shipped), and runs bench_attacks.py's three attacks against each. docs/benchmarks.md section 26
has the figures.

Each subcommand prints a Markdown report and writes it to bench/out/release-<subcommand>-<data dir name>.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

OUT = ROOT / "bench" / "out"
HOUR = dt.timedelta(hours=1)
WINDOWS = ("24h", "7d", "30d")
WINDOW_HOURS = {"24h": 24, "7d": 7 * 24, "30d": 30 * 24}
LEVELS = ("country", "region", "county", "city")
DIMENSIONS = ("keyword", "domain", "platform", "page_context", *LEVELS)

# Size bands of the exact value (issue 50's targets are stated on them).
SUM_BANDS = [(100_000, None, ">= 100,000"), (10_000, 100_000, "10,000-100,000"), (1_000, 10_000, "1,000-10,000"),
             (100, 1_000, "100-1,000")]
USER_BANDS = [(1_000, None, ">= 1,000"), (100, 1_000, "100-1,000"), (10, 100, "10-100")]
# Interval coverage by the cell's exact users (every shown cell, the smallest and the empty included).
USER_GROUPS = [(1_000, None, ">= 1,000"), (100, 1_000, "100-1,000"), (10, 100, "10-100"), (1, 10, "1-9"),
               (0, 1, "0 (noise only)")]
SHOWN_AT = (10, 25, 50, 100)


def _pct(x: float) -> str:
    return "" if x != x else f"{x:.1%}"


def write(name: str, data_dir: Path, text: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"release-{name}-{data_dir.name}.md"
    path.write_text(text + "\n")
    print(text)
    print(f"\n(written to {path.relative_to(ROOT)})", file=sys.stderr)


# --- the release and the exact values ----------------------------------------------------------


def load_release(data_dir: Path) -> Any:
    from service.release.storage import ReleaseStore
    from service.release.windows import Release

    return Release.load(ReleaseStore(data_dir))


class Exact:
    """Plain aggregates of the stored events (no bounding, no noise)."""

    def __init__(self, data_dir: Path) -> None:
        from service.store.reader import read_table

        self.frames = {"suppressions": read_table(data_dir, "suppressions").sort("ts"),
                       "keyword_changes": read_table(data_dir, "keyword_changes").sort("ts")}

    def rows(self, source: str, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
        frame = self.frames[source]
        ts = frame.get_column("ts")
        a, b = int(ts.search_sorted(start, side="left")), int(ts.search_sorted(end, side="left"))
        return frame.slice(a, max(0, b - a))

    def cells(self, start: dt.datetime, end: dt.datetime, key: str | None, *, bucket: str | None = None,
              where: pl.Expr | None = None) -> pl.DataFrame:
        """suppressions, events, users (and `keywords`: distinct keywords) per value of `key` (a
        column, "ts" truncated to `bucket`, or None: one row of totals)."""
        rows = self.rows("suppressions", start, end)
        if where is not None:
            rows = rows.filter(where)
        measures = [pl.col("suppressions").sum().cast(pl.Int64).alias("suppressions"),
                    pl.len().cast(pl.Int64).alias("events"),
                    pl.col("user_id").n_unique().cast(pl.Int64).alias("users"),
                    pl.col("keyword").drop_nulls().n_unique().cast(pl.Int64).alias("keywords")]
        if key is None:
            return rows.select(measures).with_columns(pl.lit("all").alias("key"))
        if key == "ts":
            every = {"hour": "1h", "day": "1d", "week": "1w"}[bucket or "hour"]
            return rows.group_by(pl.col("ts").dt.truncate(every).alias("key")).agg(measures)
        return (rows.filter(pl.col(key).is_not_null()).group_by(pl.col(key).cast(pl.String).alias("key")).agg(measures))

    def changes(self, start: dt.datetime, end: dt.datetime) -> pl.DataFrame:
        rows = self.rows("keyword_changes", start, end).filter(pl.col("keyword").is_not_null())
        return rows.group_by(pl.col("keyword").cast(pl.String).alias("key")).agg(
            *((pl.col("action").cast(pl.String) == a).sum().cast(pl.Int64).alias(n)
              for a, n in (("add", "adds"), ("remove", "removes"), ("edit", "edits"))),
            pl.col("user_id").n_unique().cast(pl.Int64).alias("users"))


# --- 1. accuracy -------------------------------------------------------------------------------


class Case:
    """One answer against its exact cells: `shown` (key, published columns, intervals) and `exact`
    (key, exact columns, users); `pairs`: published column -> (exact column, kind: sum | users)."""

    def __init__(self, endpoint: str, window: str, label: str, shown: pl.DataFrame, exact: pl.DataFrame,
                 pairs: dict[str, tuple[str, str]]) -> None:
        self.endpoint, self.window, self.label = endpoint, window, label
        self.shown, self.exact, self.pairs = shown, exact, pairs

    def errors(self) -> list[dict[str, Any]]:
        """One record per (shown cell, measure): exact, published, interval, the cell's exact users."""
        joined = self.shown.join(self.exact, on="key", how="left", suffix="_exact")
        out = []
        has_intervals = "intervals" in joined.columns
        for row in joined.iter_rows(named=True):
            users = row.get("users_exact", row.get("users")) if "users_exact" in joined.columns else row.get("users")
            users = users or 0
            for column, (exact_column, kind) in self.pairs.items():
                exact_name = exact_column + "_exact" if exact_column + "_exact" in joined.columns else exact_column
                exact = row.get(exact_name) or 0
                interval = None
                if has_intervals:  # the interval's field is the published name (users_est, unique_users)
                    fields = row["intervals"] or {}
                    names = (column, "users_est", "unique_users") if column == "users" else (column,)
                    interval = next((fields[n] for n in names if fields.get(n) is not None), None)
                out.append({"endpoint": self.endpoint, "window": self.window, "measure": column, "kind": kind,
                            "exact": float(exact), "published": float(row[column]), "users": float(users),
                            "low": None if interval is None else float(interval[0]),
                            "high": None if interval is None else float(interval[1])})
        return out

    def visibility(self) -> dict[str, Any]:
        exact_users = dict(zip(self.exact.get_column("key").to_list(), self.exact.get_column("users").to_list(),
                               strict=True))
        shown = set(self.shown.get_column("key").to_list())
        out: dict[str, Any] = {"shown": len(shown), "cells": sum(1 for u in exact_users.values() if u > 0)}
        for k in SHOWN_AT:
            having = [key for key, u in exact_users.items() if u >= k]
            out[f">={k}"] = len(having)
            out[f">={k} shown"] = sum(1 for key in having if key in shown)
        out["shown <10"] = sum(1 for key in shown if exact_users.get(key, 0) < 10)
        out["shown 0"] = sum(1 for key in shown if exact_users.get(key, 0) == 0)
        small = [key for key, u in exact_users.items() if 0 < u < 10]
        out["small"] = len(small)
        out["small shown"] = sum(1 for key in small if key in shown)
        return out


def accuracy_cases(release: Any, exact: Exact, as_of: dt.datetime) -> Iterator[Case]:
    from service.api.windows import window_range
    from service.engine.requests import (
        DomainTimeseries,
        FlexibleQuery,
        GeoHeat,
        KeywordActivity,
        KeywordTimeseries,
        TopKeywords,
    )
    from service.release.engine import ReleaseEngine, ReleaseSnapshot

    engine, snap = ReleaseEngine(), ReleaseSnapshot(release)
    span30 = window_range("30d", as_of)
    by_keyword = exact.cells(span30.start, span30.end, "keyword").sort("suppressions", descending=True)
    by_domain = exact.cells(span30.start, span30.end, "domain").sort("suppressions", descending=True)
    subjects = {"keyword": [by_keyword["key"][i] for i in (0, 9, 99) if i < by_keyword.height],
                "domain": [by_domain["key"][i] for i in (0, 9, 29) if i < by_domain.height]}
    sums_users = {"suppressions": ("suppressions", "sum"), "events": ("events", "sum"), "users": ("users", "users")}
    for window in WINDOWS:
        span = window_range(window, as_of)
        shown = engine.top_keywords(snap, as_of, TopKeywords(window, 100_000, intervals=True))
        yield Case("top-keywords", window, "limit=all",
                   shown.select(pl.col("keyword_raw").alias("key"), "suppressions", "users_est", "intervals"),
                   exact.cells(span.start, span.end, "keyword"),
                   {"suppressions": ("suppressions", "sum"), "users_est": ("users", "users")})
        for level in LEVELS:
            shown = engine.geo_heat(snap, as_of, GeoHeat(window, level, intervals=True))
            yield Case(f"geo-heat {level}", window, "",
                       shown.select(pl.col("geo_key").alias("key"), "suppressions", "unique_users", "keyword_count",
                                    "intervals"),
                       exact.cells(span.start, span.end, level),
                       {"suppressions": ("suppressions", "sum"), "unique_users": ("users", "users"),
                        "keyword_count": ("keywords", "keywords")})
        shown = engine.keyword_activity(snap, as_of, KeywordActivity(window, "all", 100_000, intervals=True))
        yield Case("keyword-activity", window, "type=all",
                   shown.select(pl.col("keyword").alias("key"), "adds", "removes", "edits", "unique_users", "intervals"),
                   exact.changes(span.start, span.end),
                   {"adds": ("adds", "sum"), "removes": ("removes", "sum"), "edits": ("edits", "sum"),
                    "unique_users": ("users", "users")})
        buckets = {"24h": ("hour",), "7d": ("hour", "day"), "30d": ("day", "week")}[window]
        for column, values in subjects.items():
            for value in values:
                for bucket in buckets:
                    request = (KeywordTimeseries if column == "keyword" else DomainTimeseries)(
                        value, window, bucket, intervals=True)
                    method = engine.keyword_timeseries if column == "keyword" else engine.domain_timeseries
                    shown = method(snap, as_of, request).filter(pl.col("users_est") > 0)
                    true = exact.cells(span.start, span.end, "ts", bucket=bucket, where=pl.col(column).cast(pl.String) == value)
                    yield Case(f"{column}-timeseries", window, f"{value} bucket={bucket}",
                               shown.rename({"ts": "key"}).rename({"users_est": "users"}), true, sums_users)
        shown = engine.query(snap, as_of, FlexibleQuery(window, {}, ("platform",), None, limit=1000, intervals=True))
        yield Case("query by platform", window, "group_by=[platform]",
                   shown.rename({"platform": "key", "unique_users": "users"}), exact.cells(span.start, span.end, "platform"),
                   sums_users)
        shown = engine.query(snap, as_of, FlexibleQuery(window, {}, (), None, intervals=True))
        yield Case("query totals", window, "no group_by",
                   shown.with_columns(pl.lit("all").alias("key")).rename({"unique_users": "users"}),
                   exact.cells(span.start, span.end, None), sums_users)
        if window != "24h":
            shown = engine.query(snap, as_of, FlexibleQuery(window, {}, ("platform", "time"), "day", limit=1000,
                                                            intervals=True))
            true = (exact.rows("suppressions", span.start, span.end)
                    .group_by(pl.col("platform").cast(pl.String), pl.col("ts").dt.truncate("1d"))
                    .agg(pl.col("suppressions").sum().cast(pl.Int64), pl.len().cast(pl.Int64).alias("events"),
                         pl.col("user_id").n_unique().cast(pl.Int64).alias("users"))
                    .select((pl.col("platform") + "|" + pl.col("ts").dt.strftime("%Y-%m-%d")).alias("key"),
                            "suppressions", "events", "users"))
            yield Case("query by platform x day", window, "group_by=[platform, time] bucket=day",
                       shown.select((pl.col("platform") + "|" + pl.col("ts").dt.strftime("%Y-%m-%d")).alias("key"),
                                    "suppressions", "events", pl.col("unique_users").alias("users"), "intervals"),
                       true, sums_users)


def rankings(release: Any, exact: Exact, as_of: dt.datetime, rows: int = 50) -> list[dict[str, Any]]:
    """bench_rankings.py's 33 rankings, read from the release: of the first `rows` rows, those
    published at more than twice their exact value."""
    from service.api.windows import window_range
    from service.engine.requests import FlexibleQuery, GeoHeat, KeywordActivity, TopKeywords
    from service.release.engine import ReleaseEngine, ReleaseSnapshot

    engine, snap = ReleaseEngine(), ReleaseSnapshot(release)
    out = []

    def check(name: str, window: str, shown: pl.DataFrame, key: str, column: str, truth: pl.DataFrame, measure: str) -> None:
        published = shown.head(rows).select(pl.col(key).cast(pl.String).alias("key"), pl.col(column).alias("published"))
        joined = published.join(truth.select("key", pl.col(measure).alias("exact")), on="key", how="left",
                                maintain_order="left").with_columns(pl.col("exact").fill_null(0))
        over = joined.filter(pl.col("published") > 2 * pl.col("exact"))
        worst = joined.with_columns(r=pl.col("published") / pl.col("exact").clip(lower_bound=1)).sort("r").tail(1)
        out.append({"ranking": name, "window": window, "rows": joined.height, "over": over.height,
                    "worst": (f"{worst['key'][0]}: {worst['published'][0]:,} vs {worst['exact'][0]:,}"
                              if worst.height else "")})

    span30 = window_range("30d", as_of)
    changes = exact.changes(span30.start, span30.end).with_columns(
        (pl.col("adds") + pl.col("removes") + pl.col("edits")).alias("total"))
    for kind, column, measure in (("all", "total_events", "total"), ("added", "adds", "adds")):
        check(f"/keyword-activity type={kind}", "30d", engine.keyword_activity(snap, as_of, KeywordActivity("30d", kind, rows)),
              "keyword", column, changes, measure)
    for window in ("24h", "30d"):
        span = window_range(window, as_of)
        check("/top-keywords", window, engine.top_keywords(snap, as_of, TopKeywords(window, rows)), "keyword_raw",
              "suppressions", exact.cells(span.start, span.end, "keyword"), "suppressions")
    for window in ("7d", "30d"):
        span = window_range(window, as_of)
        check("/geo-heat level=city", window, engine.geo_heat(snap, as_of, GeoHeat(window, "city")), "geo_key",
              "suppressions", exact.cells(span.start, span.end, "city"), "suppressions")
    for dimension in ("keyword", "domain", "city"):
        key = "city_id" if dimension == "city" else dimension
        for window in ("24h", "7d", "30d"):
            span = window_range(window, as_of)
            truth = exact.cells(span.start, span.end, dimension)
            for measure, column in (("suppressions", "suppressions"), ("events", "events"), ("unique_users", "users")):
                shown = engine.query(snap, as_of, FlexibleQuery(window, {}, (dimension,), None, order_by=measure, limit=rows))
                check(f"/query group_by={dimension} order_by={measure}", window, shown, key, measure, truth, column)
    return out


def accuracy(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    release = load_release(args.data_dir)
    as_of = release.through
    exact = Exact(args.data_dir)
    records: list[dict[str, Any]] = []
    visibility: list[tuple[Case, dict[str, Any]]] = []
    for case in accuracy_cases(release, exact, as_of):
        records += case.errors()
        visibility.append((case, case.visibility()))
    frame = pl.DataFrame(records, infer_schema_length=None).with_columns(
        ((pl.col("published") - pl.col("exact")) / pl.col("exact")).alias("signed"),
        ((pl.col("published") - pl.col("exact")).abs() / pl.col("exact")).alias("error"),
        ((pl.col("low") <= pl.col("exact")) & (pl.col("exact") <= pl.col("high"))).alias("covered"))
    events = sum(f.height for f in exact.frames.values())
    lines = [f"# Release accuracy: {args.data_dir} ({events:,} stored events), as_of {as_of:%Y-%m-%dT%H:%MZ}", "",
             "Relative error |published - exact| / exact of every shown cell, by the exact value's size "
             "(sums: suppressions, events, adds/removes/edits; users: user counts and, for geo-heat, "
             "keyword_count); `signed`: the median of (published - exact) / exact (the bounding's bias is "
             "negative). Exact = plain aggregates of the stored events, no bounding.", ""]

    def table(group_by: list[str], title: str) -> None:
        nonlocal lines
        lines += [title, "", f"| {' | '.join(group_by)} | size | cells | median | p95 | signed median |",
                  f"|{'---|' * len(group_by)}---|---:|---:|---:|---:|"]
        for kind, bands in (("sum", SUM_BANDS), ("users", USER_BANDS), ("keywords", USER_BANDS)):
            part = frame.filter(pl.col("kind") == kind)
            keys = part.select(group_by).unique().sort(group_by).iter_rows()
            for key in keys:
                sub = part.filter(pl.all_horizontal(pl.col(c) == v for c, v in zip(group_by, key, strict=True)))
                for low, high, label in bands:
                    band = sub.filter((pl.col("exact") >= low) & ((pl.col("exact") < high) if high else pl.lit(True)))
                    if band.height:
                        lines.append(f"| {' | '.join(str(k) for k in key)} | {label} | {band.height} | "
                                     f"{band['error'].median():.1%} | {band['error'].quantile(0.95, 'higher'):.1%} | "
                                     f"{band['signed'].median():+.1%} |")
        lines.append("")

    table(["kind"], "## Pooled (every endpoint and window)")
    table(["endpoint", "measure"], "## Per endpoint and measure (windows pooled)")
    table(["endpoint", "measure", "window"], "## Per endpoint, measure and window")

    # Targets of issue 50.
    lines += ["## Issue 50's accuracy targets", "", "| target | cells | median | p95 | met |", "|---|---:|---:|---:|---|"]
    for label, cond, limit in (("sums >= 100,000: median <= 1 %", (pl.col("kind") == "sum") & (pl.col("exact") >= 100_000), 0.01),
                               ("sums >= 10,000: median <= 5 %", (pl.col("kind") == "sum") & (pl.col("exact") >= 10_000), 0.05),
                               ("user counts >= 1,000: median <= 5 %",
                                (pl.col("kind") == "users") & (pl.col("exact") >= 1_000), 0.05)):
        sub = frame.filter(cond)
        median = sub["error"].median() if sub.height else float("nan")
        p95 = sub["error"].quantile(0.95, "higher") if sub.height else float("nan")
        lines.append(f"| {label} | {sub.height} | {_pct(median)} | {_pct(p95)} | {'yes' if median <= limit else 'NO'} |")
        worst = (sub.filter(pl.col("kind") == "sum") if "sums" in label else sub).group_by("endpoint", "measure").agg(
            pl.len(), pl.col("error").median()).sort("error", descending=True).head(4)
        for row in worst.iter_rows(named=True):
            lines.append(f"|  … {row['endpoint']} {row['measure']} | {row['len']} | {row['error']:.1%} | | |")
    lines.append("")

    # Interval coverage by exact users per cell.
    labels = [label for *_, label in USER_GROUPS]
    lines += ["## Intervals (`intervals=true`): share holding the exact value, by the cell's exact users", "",
              "Target (issue 50): at least 85 % in every users-per-cell group. Sums are the bounded sums' "
              "intervals against the unbounded exact value.", "",
              f"| endpoint | kind | {' | '.join(labels)} |", f"|---|---|{'---:|' * len(labels)}"]
    with_interval = frame.filter(pl.col("low").is_not_null())

    def coverage_row(name: str, sub: pl.DataFrame, kind: str) -> str:
        cells = []
        for low, high, _label in USER_GROUPS:
            g = sub.filter((pl.col("users") >= low) & ((pl.col("users") < high) if high else pl.lit(True)))
            cells.append(f"{g['covered'].mean():.1%} of {g.height:,}" if g.height else "")
        return f"| {name} | {kind} | {' | '.join(cells)} |"

    for kind in ("sum", "users", "keywords"):
        lines.append(coverage_row("**all**", with_interval.filter(pl.col("kind") == kind), kind))
    for endpoint in sorted(set(with_interval["endpoint"].to_list())):
        for kind in ("sum", "users", "keywords"):
            sub = with_interval.filter((pl.col("endpoint") == endpoint) & (pl.col("kind") == kind))
            if sub.height:
                lines.append(coverage_row(endpoint, sub, kind))
    lines.append("")

    # Shown cells.
    lines += ["## Cells shown against the cells with at least 10 / 25 / 50 / 100 exact users", "",
              "`>= k`: cells with at least k exact users (shown of them); `small`: cells of 1-9 exact users "
              "(shown of them); `shown <10` / `shown 0`: shown cells with fewer than 10 / no exact users. "
              "Timeseries: buckets (a hidden bucket shows 0).", "",
              "| endpoint | window | case | shown | cells with users | >= 10 | >= 25 | >= 50 | >= 100 | small | shown <10 | shown 0 |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case, v in visibility:
        if case.endpoint.endswith("timeseries") and "bucket=hour" not in case.label and case.window != "30d":
            continue
        cells = " | ".join(f"{v[f'>={k} shown']:,} of {v[f'>={k}']:,}" for k in SHOWN_AT)
        lines.append(f"| {case.endpoint} | {case.window} | {case.label} | {v['shown']:,} | {v['cells']:,} | {cells} | "
                     f"{v['small shown']:,} of {v['small']:,} | {v['shown <10']:,} | {v['shown 0']:,} |")
    lines.append("")
    city30 = next(v for c, v in visibility if c.endpoint == "geo-heat city" and c.window == "30d")
    lines += [f"**The 30-day city map**: {city30['shown']:,} places shown (of {city30['cells']:,} cities with users; "
              f"{city30['>=50 shown']:,} of the {city30['>=50']:,} with at least 50 users, "
              f"{city30['>=100 shown']:,} of the {city30['>=100']:,} with at least 100).", ""]

    # What small cells become: their published users where shown.
    small = frame.filter((pl.col("kind") == "users") & (pl.col("users") < 10))
    if small.height:
        lines += [f"Shown cells with fewer than 10 exact users: {small.height:,}; their published users median "
                  f"{small['published'].median():.0f} (exact median {small['exact'].median():.0f}).", ""]

    # Rankings.
    ranked = rankings(release, exact, as_of)
    lines += ["## Rankings: of the first 50 rows, those above twice their exact value", "",
              "Target (issue 50): at most 1 in each ranking.", "",
              "| ranking | window | rows | over 2x | worst row (published vs exact) |", "|---|---|---:|---:|---|"]
    for r in ranked:
        lines.append(f"| `{r['ranking']}` | {r['window']} | {r['rows']} | {r['over']} | {r['worst']} |")
    total = sum(r["over"] for r in ranked)
    lines += ["", f"{len(ranked)} rankings; rows over 2x in all: {total}; the most in one: "
                  f"{max(r['over'] for r in ranked)}; rankings with more than 1: "
                  f"{sum(1 for r in ranked if r['over'] > 1)}.", "",
              f"{len(visibility)} cases, {time.perf_counter() - started:.0f} s."]
    write("accuracy", args.data_dir, "\n".join(lines))


# --- 2. users on sliding windows ---------------------------------------------------------------

SLIDING_TABLES = ("totals", "totals via countries", "platforms", "keywords", "domains", "countries", "cities")


def _noise_free_user_days(data_dir: Path, tables: list[str], first: dt.date, last: dt.date) -> dict[str, pl.DataFrame]:
    """Per table: (cell, hour, user_days) exactly as the release bounds them (bounding.bounded_hours),
    without noise, for the days first..last."""
    from service.release.bounding import bounded_hours
    from service.release.menu import TABLES_BY_NAME
    from service.release.sources import FrameDays
    from service.store.reader import EventStore

    days = FrameDays(EventStore(data_dir).snapshot())
    out: dict[str, list[pl.DataFrame]] = {t: [] for t in tables}
    day = first
    while day <= last:
        for name in tables:
            table = TABLES_BY_NAME[name]
            out[name].append(bounded_hours(table, days.rows(table.source, day)).select("cell", "hour", "user_days"))
        day += dt.timedelta(days=1)
    return {name: pl.concat(parts) for name, parts in out.items()}


def sliding(args: argparse.Namespace) -> None:
    from service.api.windows import window_range
    from service.engine.requests import FlexibleQuery, GeoHeat, TopKeywords
    from service.release import answers
    from service.release.estimates import days_touched, repeat_factor
    from service.release.menu import TABLES_BY_NAME, USER_DAYS

    started = time.perf_counter()
    release = load_release(args.data_dir)
    exact = Exact(args.data_dir)
    newest = release.through
    hours = [newest - k * HOUR for k in range(args.hours - 1, -1, -1)]
    earliest = hours[0] - dt.timedelta(days=31)
    ideal = _noise_free_user_days(args.data_dir, ["platforms", "keywords", "domains", "countries", "cities"],
                                  earliest.date(), newest.date())
    source = {"totals": "platforms", "totals via countries": "countries", "platforms": "platforms", "keywords": "keywords", "domains": "domains",
              "countries": "countries", "cities": "cities"}
    key_of = {"totals": None, "totals via countries": None, "platforms": "platform", "keywords": "keyword", "domains": "domain",
              "countries": "country", "cities": "city"}
    rows = []
    for as_of in hours:
        for window in WINDOWS:
            span = window_range(window, as_of)
            for name in SLIDING_TABLES:
                table = TABLES_BY_NAME[source[name]]
                if name == "totals via countries":
                    # The fix weighed for totals: every user-day is in one country cell (K = 1), so the
                    # countries' user-days over their repeat factor (of the window's length) count users.
                    f = repeat_factor(release, table, USER_DAYS, max(1.0, span.hours / 24), as_of)  # type: ignore[arg-type]
                    total = release.view("countries").window(span.start, span.end).get_column("user_days").sum()
                    shown = pl.DataFrame({"key": ["all"], "published": [round(total / f)]})
                elif name == "totals":
                    shown = answers.query(release, as_of, FlexibleQuery(window, {}, (), None))
                    shown = shown.select(pl.lit("all").alias("key"), pl.col("unique_users").alias("published"))
                elif name == "platforms":
                    shown = answers.query(release, as_of, FlexibleQuery(window, {}, ("platform",), None, limit=100))
                    shown = shown.select(pl.col("platform").alias("key"), pl.col("unique_users").alias("published"))
                elif name == "domains":
                    shown = answers.query(release, as_of, FlexibleQuery(window, {}, ("domain",), None, limit=1000))
                    shown = shown.select(pl.col("domain").alias("key"), pl.col("unique_users").alias("published"))
                elif name == "keywords":
                    shown = answers.top_keywords(release, as_of, TopKeywords(window, 100_000))
                    shown = shown.select(pl.col("keyword_raw").alias("key"), pl.col("users_est").alias("published"))
                else:
                    level = key_of[name]
                    shown = answers.geo_heat(release, as_of, GeoHeat(window, level))
                    shown = shown.select(pl.col("geo_key").alias("key"), pl.col("unique_users").alias("published"))
                truth = exact.cells(span.start, span.end, key_of[name]).select("key", "users")
                factor = repeat_factor(release, table, USER_DAYS, days_touched(span.start, span.end), as_of)
                # The fix weighed: the factor of the window's length in days, not of the UTC days it touches.
                by_length = repeat_factor(release, table, USER_DAYS, max(1.0, span.hours / 24), as_of)  # type: ignore[arg-type]
                bounded = ideal[source[name]].filter((pl.col("hour") >= span.start) & (pl.col("hour") < span.end))
                if name.startswith("totals"):
                    bounded = bounded.select(pl.lit("all").alias("key"), pl.col("user_days").sum())
                else:
                    bounded = bounded.group_by(pl.col("cell").alias("key")).agg(pl.col("user_days").sum())
                joined = (shown.join(truth, on="key", how="inner").join(bounded, on="key", how="left")
                          .with_columns(pl.col("user_days").fill_null(0)))
                for row in joined.iter_rows(named=True):
                    rows.append({"table": name, "window": window, "as_of": as_of, "exact": row["users"],
                                 "published": row["published"], "noise_free": row["user_days"] / factor,
                                 "by_length": row["user_days"] / by_length,
                                 "needed": row["user_days"] / row["users"] if row["users"] else None,
                                 "factor": factor})
    frame = pl.DataFrame(rows).with_columns(
        ((pl.col("published") - pl.col("exact")) / pl.col("exact")).alias("signed"),
        ((pl.col("noise_free") - pl.col("exact")) / pl.col("exact")).alias("signed_nf"),
        ((pl.col("by_length") - pl.col("exact")) / pl.col("exact")).alias("signed_len"))
    lines = [f"# Users estimated on sliding windows: {args.data_dir}, {len(hours)} as_of from "
             f"{hours[0]:%Y-%m-%dT%H:%MZ} to {hours[-1]:%Y-%m-%dT%H:%MZ}", "",
             "Per table and window: the median over shown cells with at least 100 exact users of "
             "(published - exact) / exact, at each as_of; `noise-free`: the release's own estimate "
             "(bounded user-days of the window / the repeat factor it used) without any noise; "
             "`factor used` / `factor needed`: the repeat factor applied, and the one that would make the "
             "noise-free estimate exact (the cells' bounded user-days over their exact users, pooled); "
             "`by length`: the noise-free estimate with the repeat factor of the window's length in days "
             "(24h: 1, 7d: the 7-day block's) instead of the UTC days it touches (a fix weighed).", "",
             "| table | window | cells | published: mean of medians | min / max over as_of | noise-free: mean | "
             "min / max | factor used (range) | factor needed (range) | by length: mean | min / max |",
             "|---|---|---:|---:|---|---:|---|---|---|---:|---|"]
    big = frame.filter(pl.col("exact") >= 100)
    per_hour = (big.group_by("table", "window", "as_of")
                .agg(pl.len(), pl.col("signed").median(), pl.col("signed_nf").median(), pl.col("signed_len").median(),
                     pl.col("factor").first(),
                     (pl.col("noise_free") * pl.col("factor")).sum().alias("ud"), pl.col("exact").sum().alias("users"))
                .with_columns((pl.col("ud") / pl.col("users")).alias("needed")).sort("table", "window", "as_of"))
    for name in SLIDING_TABLES:
        for window in WINDOWS:
            g = per_hour.filter((pl.col("table") == name) & (pl.col("window") == window))
            if not g.height:
                continue
            lines.append(f"| {name} | {window} | {g['len'].mean():.0f} | {g['signed'].mean():+.1%} | "
                         f"{g['signed'].min():+.1%} / {g['signed'].max():+.1%} | {g['signed_nf'].mean():+.1%} | "
                         f"{g['signed_nf'].min():+.1%} / {g['signed_nf'].max():+.1%} | "
                         f"{g['factor'].min():.3f}-{g['factor'].max():.3f} | {g['needed'].min():.3f}-{g['needed'].max():.3f} | "
                         f"{g['signed_len'].mean():+.1%} | {g['signed_len'].min():+.1%} / {g['signed_len'].max():+.1%} |")
    newest_cells = big.filter(pl.col("as_of") == newest)
    lines += ["", "Across cells (the newest as_of; cells of at least 100 exact users): the noise-free estimate with the "
                  "factor of the window's length, p5 / median / p95 of its signed error: what one repeat factor per "
                  "table costs cells that repeat more or less than the table's average.", "",
              "| table | window | cells | p5 | median | p95 | worst cell (exact users: estimate) |", "|---|---|---:|---:|---:|---:|---|"]
    for name in SLIDING_TABLES[2:]:
        for window in WINDOWS:
            g = newest_cells.filter((pl.col("table") == name) & (pl.col("window") == window))
            if g.height < 3:
                continue
            worst = g.sort(pl.col("signed_len").abs()).tail(1).row(0, named=True)
            lines.append(f"| {name} | {window} | {g.height} | {g['signed_len'].quantile(0.05, 'lower'):+.1%} | "
                         f"{g['signed_len'].median():+.1%} | {g['signed_len'].quantile(0.95, 'higher'):+.1%} | "
                         f"{worst['exact']:,}: {worst['by_length']:,.0f} |")
    lines += ["", "Per as_of (UTC hour), the median signed error of the published users (noise-free in brackets):", "",
              f"| table | window | {' | '.join(f'{h:%H}' for h in hours)} |", f"|---|---|{'---:|' * len(hours)}"]
    for name in SLIDING_TABLES:
        for window in WINDOWS:
            g = per_hour.filter((pl.col("table") == name) & (pl.col("window") == window))
            if not g.height:
                continue
            by = {r["as_of"]: r for r in g.iter_rows(named=True)}
            cells = [f"{by[h]['signed']:+.0%} ({by[h]['signed_nf']:+.0%})" if h in by else "" for h in hours]
            lines.append(f"| {name} | {window} | {' | '.join(cells)} |")
    lines += ["", "The repeat factors' own noise: the latest released block of each length, per table "
                  "(`rel. s.d.`: the factor's relative noise s.d., sigma * sqrt(1/numerator^2 + 1/denominator^2)):", "",
              "| table | measure | 7 days: factor (rel. s.d.) | 30 days | 90 days |", "|---|---|---|---|---|"]
    scalars = release.scalars.filter(pl.col("start") + pl.duration(days=pl.col("days")) <= newest)
    for (table_name, measure), group in sorted(scalars.group_by("table", "measure"), key=lambda kv: kv[0]):
        cells = []
        for length in (7, 30, 90):
            latest = group.filter(pl.col("days") == length).sort("start").tail(1)
            if not latest.height:
                cells.append("")
                continue
            num, den, sig = latest["numerator"][0], latest["denominator"][0], latest["sigma"][0]
            cells.append(f"{num / den:.3f} ({sig * math.sqrt(1 / num ** 2 + 1 / den ** 2):.1%})")
        lines.append(f"| {table_name} | {measure} | {' | '.join(cells)} |")
    lines += ["", f"{time.perf_counter() - started:.0f} s."]
    write("sliding", args.data_dir, "\n".join(lines))


# --- 3. speed -----------------------------------------------------------------------------------


def _env(data_dir: Path, secret: str) -> dict[str, str]:
    return {**os.environ, "SIGNALS_DATA_DIR": str(data_dir), "SIGNALS_SECRET": secret}


def _run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of the child, and its stdout's last line."""
    started = time.perf_counter()
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    out = process.stdout.read() if process.stdout else ""
    err = process.stderr.read() if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({process.returncode}):\n{err[-2000:]}")
    last = out.strip().splitlines()[-1] if out.strip() else ""
    return seconds, usage.ru_maxrss / 1024, last


def build(args: argparse.Namespace) -> None:
    """`python -m service data release --rebuild` from scratch: wall time and peak RSS."""
    lines = [f"# Building the release from scratch: {args.data_dir}" + (" (in a copy)" if args.copy else ""), "",
             "| run | wall | peak RSS | load average before | the command's summary |", "|---|---:|---:|---:|---|"]
    for run in range(args.runs):
        with contextlib.ExitStack() as stack:
            data_dir = args.data_dir
            if args.copy:  # the events hard-linked, the release built afresh, then removed
                data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp)))
                _copy_store(args.data_dir, data_dir, with_release=False)
            load = os.getloadavg()[0]
            seconds, rss, last = _run_measured([sys.executable, "-m", "service", "data", "release", "--rebuild",
                                                "--no-progress"], _env(data_dir, args.secret))
        lines.append(f"| {run + 1} | {seconds:.1f} s | {rss:,.0f} MB | {load:.1f} | {last} |")
        print(lines[-1], file=sys.stderr)
    lines += ["", f"Load average after: {os.getloadavg()[0]:.1f}."]
    write("build", args.data_dir, "\n".join(lines))


class Timers:
    """Wraps functions the schedule calls (by module attribute) and adds up their time and calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - started
                self.calls[label] = self.calls.get(label, 0) + 1

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _timers() -> Timers:
    from service.release import builder
    from service.release.storage import ReleaseStore

    timers = Timers()
    timers.wrap(builder, "bounded_hours", "bounding (bounded_hours)")
    timers.wrap(builder, "kept_pairs", "repeat-factor pairs (kept_pairs)")
    timers.wrap(builder, "node_draws", "noise draws (node_draws)")
    timers.wrap(builder, "rows_frame", "rows_frame")
    timers.wrap(builder, "hot_cells", "hot_cells (reads the day before)")
    timers.wrap(builder, "scalar_rows", "scalar_rows")
    timers.wrap(ReleaseStore, "released_nodes", "released_nodes (reads a day file)")
    timers.wrap(ReleaseStore, "add", "store.add (rewrites a day file)")
    return timers


def _copy_store(data_dir: Path, target: Path, with_release: bool) -> None:
    """A copy of the data directory: the events hard-linked (never written), the release copied."""
    for item in data_dir.iterdir():
        if item.name == "release":
            if with_release:
                shutil.copytree(item, target / "release")
        elif item.is_dir():
            shutil.copytree(item, target / item.name, copy_function=os.link)
        else:
            shutil.copy2(item, target / item.name)


def trim(release_dir: Path, through: dt.datetime) -> int:
    """Drop every node (and scalar block) that closes after `through`, as if the schedule had run
    only up to it; returns the rows dropped."""
    from service.release.levels import LEVELS

    dropped = 0
    lengths = pl.DataFrame({"level": list(LEVELS), "_hours": [int(v.length / HOUR) for v in LEVELS.values()]})
    for folder in release_dir.iterdir():
        if not folder.is_dir():
            continue
        for path in folder.glob("*.parquet"):
            if dt.date.fromisoformat(path.stem) < through.date() - dt.timedelta(days=8):
                continue
            frame = pl.read_parquet(path)
            if folder.name == "scalars":
                keep = frame.filter(pl.col("start") + pl.duration(days=pl.col("days")) <= through)
            else:
                keep = (frame.join(lengths, on="level", how="left")
                        .filter(pl.col("start") + pl.duration(hours=pl.col("_hours")) <= through).drop("_hours"))
            if keep.height != frame.height:
                dropped += frame.height - keep.height
                if keep.height:
                    keep.write_parquet(path)
                else:
                    path.unlink()
    state = json.loads((release_dir / "STATE.json").read_text())
    state["through"] = through.isoformat()
    (release_dir / "STATE.json").write_text(json.dumps(state))
    return dropped


def _incremental_hours(through: dt.datetime, first: dt.date) -> list[tuple[str, dt.datetime]]:
    """The hours to release on top of the rest: the newest, and the last of each kind of closing."""
    from service.release.repeat import block_end

    out = [("the newest hour (an hour node)", through)]
    t = through
    found: dict[str, dt.datetime] = {}
    while t.date() > first + dt.timedelta(days=2) and len(found) < 5:
        if t.hour == 6 and "quarter" not in found:
            found["quarter"] = t
        if t.hour == 0:
            day = (t - HOUR).date()
            if "day" not in found and day.weekday() != 6 and not any(block_end(day, n) for n in (30, 90)):
                found["day"] = t
            if "week" not in found and day.weekday() == 6:
                found["week"] = t
            if "30" not in found and block_end(day, 30):
                found["30"] = t
            if "90" not in found and block_end(day, 90):
                found["90"] = t
        t -= HOUR
    names = {"quarter": "a quarter's end (hour and quarter nodes)", "day": "midnight (hour, quarter, day nodes)",
             "week": "Monday 00:00 (+ the ISO week and its 7-day repeat blocks)",
             "30": "the end of a 30-day repeat block (+ its 30 days of pairs)",
             "90": "the end of a 90-day repeat block (+ its 90 days of pairs)"}
    if found.get("30") == found.get("90"):
        found.pop("30", None)
        names["90"] = "the end of a 30- and a 90-day repeat block (+ 90 days of pairs)"
    return out + [(names[k], v) for k, v in sorted(found.items(), key=lambda kv: kv[1], reverse=True)]


def incremental(args: argparse.Namespace) -> None:
    """One hour released on top of a release that stops the hour before (a copy, trimmed)."""
    from service.release.builder import release_through
    from service.release.noise import release_key
    from service.release.sources import FrameDays
    from service.release.storage import ReleaseStore
    from service.store.reader import EventStore

    original = ReleaseStore(args.data_dir)
    through = original.through()
    assert through is not None, "build the release first"
    opened = time.perf_counter()
    frames = EventStore(args.data_dir).snapshot()
    events = FrameDays(frames)
    open_seconds = time.perf_counter() - opened
    first = events.first_day()
    assert first is not None
    lines = [f"# One hour released on top of the rest: {args.data_dir} (released through {through:%Y-%m-%dT%H:%MZ})", "",
             f"Each run: a copy of the release with every node closing after H - 1h dropped, then "
             f"`builder.release_through(store, FrameDays(snapshot), key, H)` in process (the events' snapshot "
             f"opened once before: {open_seconds:.2f} s). `identical`: the hour's nodes equal the "
             f"release built from scratch.", "",
             "| H | what closes at H | nodes | wall | of it: reading released day files (calls) | bounding | "
             "repeat pairs | writing day files (calls) | identical |", "|---|---|---:|---:|---|---:|---:|---|---|"]
    for label, hour in _incremental_hours(through, first):
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            target = Path(tmp)
            _copy_store(args.data_dir, target, with_release=True)
            trim(target / "release", hour - HOUR)
            store = ReleaseStore(target)
            timers = _timers()
            started = time.perf_counter()
            try:
                summary = release_through(store, events, release_key(args.secret), hour)
            finally:
                timers.restore()
            seconds = time.perf_counter() - started
            same = _same_release(original, store, hour - dt.timedelta(days=8), hour)
        t, c = timers.seconds, timers.calls
        lines.append(f"| {hour:%a %m-%d %H:%M} | {label} | {summary.nodes} | {seconds:.2f} s | "
                     f"{t.get('released_nodes (reads a day file)', 0):.2f} s ({c.get('released_nodes (reads a day file)', 0)}) | "
                     f"{t.get('bounding (bounded_hours)', 0):.2f} s | {t.get('repeat-factor pairs (kept_pairs)', 0):.2f} s | "
                     f"{t.get('store.add (rewrites a day file)', 0):.2f} s ({c.get('store.add (rewrites a day file)', 0)}) | "
                     f"{'yes' if same else 'NO'} |")
        print(lines[-1], file=sys.stderr)
    lines += ["", f"Load average after: {os.getloadavg()[0]:.1f}."]
    write("incremental", args.data_dir, "\n".join(lines))


def _same_release(a: Any, b: Any, since: dt.datetime, through: dt.datetime) -> bool:
    """Whether the two releases hold the same nodes closing in (since, through]."""
    from service.release.levels import LEVELS
    from service.release.menu import TABLES

    lengths = pl.DataFrame({"level": list(LEVELS), "_hours": [int(v.length / HOUR) for v in LEVELS.values()]})

    def closing(frame: pl.DataFrame) -> pl.DataFrame:
        end = pl.col("start") + pl.duration(hours=pl.col("_hours"))
        return (frame.join(lengths, on="level", how="left").filter((end > since) & (end <= through))
                .drop("_hours").sort("level", "start", "cell", nulls_last=True))

    for table in TABLES:
        if not closing(a.read_table(table)).equals(closing(b.read_table(table))):
            return False

    def blocks(frame: pl.DataFrame) -> pl.DataFrame:
        end = pl.col("start") + pl.duration(days=pl.col("days"))
        return frame.filter((end > since) & (end <= through)).sort("table", "measure", "days", "start")

    return blocks(a.read_scalars()).equals(blocks(b.read_scalars()))


def scratch(args: argparse.Namespace) -> None:
    """The build from scratch in process, with where its time goes (a copy of the store)."""
    from service.release.builder import release_through
    from service.release.noise import release_key
    from service.release.sources import FrameDays
    from service.release.storage import ReleaseStore
    from service.store.reader import EventStore

    through = ReleaseStore(args.data_dir).through()
    assert through is not None
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        target = Path(tmp)
        _copy_store(args.data_dir, target, with_release=False)
        events = FrameDays(EventStore(target).snapshot())
        timers = _timers()
        started = time.perf_counter()
        try:
            summary = release_through(ReleaseStore(target), events, release_key(args.secret), through)
        finally:
            timers.restore()
        seconds = time.perf_counter() - started
    lines = [f"# Where a build from scratch spends its time: {args.data_dir}, through {through:%Y-%m-%dT%H:%MZ}", "",
             f"{summary.nodes} nodes over {summary.days} days in {seconds:.1f} s (peak RSS of this process "
             f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB).", "",
             "| part | seconds | share | calls |", "|---|---:|---:|---:|"]
    for label, value in sorted(timers.seconds.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {label} | {value:.1f} | {value / seconds:.0%} | {timers.calls[label]:,} |")
    write("scratch", args.data_dir, "\n".join(lines))


LATENCY_CASES: list[tuple[str, str, Callable[[str], Any]]] = []


def latency_child(args: argparse.Namespace) -> None:
    """In a fresh process: Release.load, then each endpoint's first (cold) and repeated answers."""
    started = time.perf_counter()
    from service.engine.requests import (
        DomainTimeseries,
        FlexibleQuery,
        GeoHeat,
        KeywordActivity,
        KeywordTimeseries,
        TopKeywords,
        Trending,
    )
    from service.release.engine import ReleaseEngine, ReleaseSnapshot
    from service.release.storage import ReleaseStore
    from service.release.windows import Release

    imported = time.perf_counter() - started
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    release = Release.load(ReleaseStore(args.data_dir))
    loaded = time.perf_counter() - t
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import gc

    gc.collect()
    resident = _resident_mb()
    engine, snap, as_of = ReleaseEngine(), ReleaseSnapshot(release), release.through
    top = engine.top_keywords(snap, as_of, TopKeywords("30d", 1))["keyword_raw"][0]
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("top-keywords 24h limit 50", lambda: engine.top_keywords(snap, as_of, TopKeywords("24h", 50))),
        ("top-keywords 30d limit 500", lambda: engine.top_keywords(snap, as_of, TopKeywords("30d", 500))),
        ("top-keywords 30d compare + intervals", lambda: engine.top_keywords(
            snap, as_of, TopKeywords("30d", 50, compare="previous_period", intervals=True))),
        (f"keyword-timeseries {top!r} 30d hour", lambda: engine.keyword_timeseries(
            snap, as_of, KeywordTimeseries(top, "30d", "hour"))),
        (f"keyword-timeseries {top!r} 7d hour", lambda: engine.keyword_timeseries(
            snap, as_of, KeywordTimeseries(top, "7d", "hour"))),
        (f"keyword-timeseries {top!r} 90d day", lambda: engine.keyword_timeseries(
            snap, as_of, KeywordTimeseries(top, "90d", "day"))),
        ("domain-timeseries reddit.com 30d day", lambda: engine.domain_timeseries(
            snap, as_of, DomainTimeseries("reddit.com", "30d", "day"))),
        ("geo-heat city 30d", lambda: engine.geo_heat(snap, as_of, GeoHeat("30d", "city"))),
        ("geo-heat city 24h", lambda: engine.geo_heat(snap, as_of, GeoHeat("24h", "city"))),
        ("geo-heat country 7d intervals", lambda: engine.geo_heat(snap, as_of, GeoHeat("7d", "country", intervals=True))),
        ("trending 24h keyword suppressions", lambda: engine.trending(
            snap, as_of, Trending("24h", "keyword", "suppressions", 20, 10))),
        ("trending 30d keyword events", lambda: engine.trending(
            snap, as_of, Trending("30d", "keyword", "events", 20, 10))),
        ("keyword-activity 30d all", lambda: engine.keyword_activity(snap, as_of, KeywordActivity("30d", "all", 50))),
        ("query totals 30d", lambda: engine.query(snap, as_of, FlexibleQuery("30d", {}, (), None))),
        ("query by platform 7d", lambda: engine.query(snap, as_of, FlexibleQuery("7d", {}, ("platform",), None))),
        ("query by city 30d limit 1000", lambda: engine.query(snap, as_of, FlexibleQuery("30d", {}, ("city",), None,
                                                                                          limit=1000))),
        ("query keyword x day 30d limit 1000", lambda: engine.query(
            snap, as_of, FlexibleQuery("30d", {}, ("keyword", "time"), "day", limit=1000))),
        ("query 48 cities x hour 7d", lambda: engine.query(
            snap, as_of, FlexibleQuery("7d", {"cities": tuple(_cities(release, 48))}, ("time",), "hour", limit=1000))),
    ]
    rows = []
    for name, fn in cases:
        t = time.perf_counter()
        frame = fn()
        cold = time.perf_counter() - t
        warm = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fn()
            warm.append(time.perf_counter() - t)
        rows.append({"case": name, "rows": frame.height, "cold": cold, "warm": statistics.median(warm)})
    print(json.dumps({"imported": imported, "loaded": loaded, "rss_before": rss0, "rss_after": rss1,
                      "resident": resident, "views_mb": sum(v.rows.estimated_size() for v in release.views.values()) / 1e6,
                      "rss_end": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rows": {n: v.rows.height for n, v in release.views.items()},
                      "cases": rows}))


def _resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cities(release: Any, n: int) -> list[str]:
    from service.engine.requests import GeoHeat
    from service.release import answers

    shown = answers.geo_heat(release, release.through, GeoHeat("30d", "city"))
    return shown.get_column("geo_key").head(n).to_list()


def latency(args: argparse.Namespace) -> None:
    lines = [f"# Cold answers from the release: {args.data_dir}", "",
             "A fresh process per run: `Release.load` (every table read and indexed, what a worker does "
             "on start and on every new generation), then each answer once (cold) and "
             f"{args.repeats} more times (median).", ""]
    runs = []
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, __file__, "latency-child", "--data-dir", str(args.data_dir),
                               "--repeats", str(args.repeats)], cwd=ROOT, capture_output=True, text=True,
                              env=_env(args.data_dir, args.secret))
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    loads = [r["loaded"] for r in runs]
    lines += [f"- imports {statistics.median(r['imported'] for r in runs):.2f} s; `Release.load` "
              f"{', '.join(f'{x:.2f}' for x in loads)} s; peak RSS {runs[0]['rss_before']:,.0f} MB before the "
              f"load, {runs[0]['rss_after']:,.0f} MB after, {runs[0]['rss_end']:,.0f} MB at the end; resident after the load "
              f"{runs[0]['resident']:,.0f} MB, of it the views' frames {runs[0]['views_mb']:,.0f} MB",
              f"- released rows held: {', '.join(f'{k} {v:,}' for k, v in runs[0]['rows'].items())}", "",
              "| answer | rows | cold (first) | warm (median) |", "|---|---:|---:|---:|"]
    for i, case in enumerate(runs[0]["cases"]):
        cold = statistics.median(r["cases"][i]["cold"] for r in runs)
        warm = statistics.median(r["cases"][i]["warm"] for r in runs)
        lines.append(f"| {case['case']} | {case['rows']} | {cold * 1000:,.0f} ms | {warm * 1000:,.0f} ms |")
    lines += ["", f"Load average after: {os.getloadavg()[0]:.1f}."]
    write("latency", args.data_dir, "\n".join(lines))


# --- 4. attacks ---------------------------------------------------------------------------------

NYC = "5128581"  # GeoNames: New York City


def _auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive scores above a negative), ties half: 0.5 is chance."""
    if not positive or not negative:
        return float("nan")
    ranked = sorted([(v, 1) for v in positive] + [(v, 0) for v in negative])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mean_rank = (i + j + 1) / 2
        rank_sum += mean_rank * sum(1 for k in range(i, j) if ranked[k][1])
        i = j
    n1, n0 = len(positive), len(negative)
    return (rank_sum - n1 * (n1 + 1) / 2) / (n1 * n0)


def _best_accuracy(positive: list[float], negative: list[float]) -> float:
    """The best accuracy of any threshold on the score, chosen knowing the answers (an upper bound)."""
    values = sorted(set(positive) | set(negative))
    best = 0.0
    n = len(positive) + len(negative)
    for t in values + [values[-1] + 1] if values else []:
        right = sum(1 for v in positive if v >= t) + sum(1 for v in negative if v < t)
        best = max(best, right / n, 1 - right / n)
    return best


def _query_body(window: str, filters: dict[str, list[str]], group_by: list[str] | None = None,
                as_of: dt.datetime | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"window": window, "filters": filters}
    if group_by:
        body["group_by"] = group_by
    if as_of is not None:
        body["as_of"] = as_of.strftime("%Y-%m-%dT%H:%M:%SZ")
    return body


def _request(body: dict[str, Any]) -> Any:
    """The FlexibleQuery the HTTP layer would build from `body` (filters already normalised)."""
    from service.engine.requests import FlexibleQuery

    return FlexibleQuery(body["window"], {k: tuple(v) for k, v in body.get("filters", {}).items()},
                         tuple(body.get("group_by", ())), body.get("bucket"), limit=body.get("limit", 100))


SHAPES_REFUSED = [
    ("D(P, p): users[P, platforms != p]", _query_body("30d", {"cities": [NYC], "platforms": [
        "android", "edge", "firefox", "ios", "other", "safari"]})),
    ("users[P] by platform", _query_body("30d", {"cities": [NYC]}, ["platform"])),
    ("city x platform", _query_body("30d", {}, ["city", "platform"])),
    ("keyword filter within a country", _query_body("7d", {"countries": ["US"], "keywords": ["ai"]})),
]


def attacks(args: argparse.Namespace) -> None:
    from service.release import answers
    from service.release.engine import ReleaseEngine, ReleaseSnapshot

    release = load_release(args.data_dir)
    exact = Exact(args.data_dir)
    as_of = release.through
    engine, snap = ReleaseEngine(), ReleaseSnapshot(release)
    rng = random.Random(7)
    lines = [f"# Attacks against the release: {args.data_dir}, as_of {as_of:%Y-%m-%dT%H:%MZ}", ""]

    # (a) differencing along a filter that is not a place: the shapes it needs.
    lines += ["## (a) Differencing along a filter that is not a place", "",
              "| request | in process (answers.query_shape) |", "|---|---|"]
    refused_in_process = []
    for label, body in SHAPES_REFUSED:
        try:
            answers.query_shape(_request(body))
            verdict = "answered (NOT refused)"
        except answers.OutsideMenu:
            verdict = "OutsideMenu (422 outside-release)"
        refused_in_process.append(verdict)
        lines.append(f"| {label}: `{json.dumps(body)}` | {verdict} |")
    lines.append("")

    # (b) the membership oracle.
    span = window_range_of("30d", as_of)
    city_users = dict(exact.cells(span.start, span.end, "city").select("key", "users").iter_rows())
    shown = set(answers.geo_heat(release, as_of, _geo("30d", "city")).get_column("geo_key").to_list())
    from service.release import domains

    public = [c for c in domains.values("city") if c not in shown and c != NYC]
    with_users = [c for c in public if 1 <= city_users.get(c, 0) <= 7]
    without = [c for c in public if city_users.get(c, 0) == 0]
    n = min(len(with_users), len(without), args.oracle_towns)
    sample_with, sample_without = rng.sample(with_users, n), rng.sample(without, n)
    base_body = _query_body("30d", {"cities": [NYC]})
    base = engine.query(snap, as_of, _request(base_body)).to_dicts()[0]
    scores: dict[str, dict[str, list[float]]] = {m: {"with": [], "without": []}
                                                  for m in ("unique_users", "events", "suppressions", "combined")}
    identical = {"with": 0, "without": 0}
    sd = {m: release_sd(release, as_of, m) for m in ("unique_users", "events", "suppressions")}
    for group, towns in (("with", sample_with), ("without", sample_without)):
        for town in towns:
            row = engine.query(snap, as_of, _request(_query_body("30d", {"cities": [NYC, town]}))).to_dicts()[0]
            identical[group] += row == base
            combined = 0.0
            for m in ("unique_users", "events", "suppressions"):
                d = float(row[m] - base[m])
                scores[m][group].append(d)
                combined += d / sd[m]
            scores["combined"][group].append(combined)
    lines += ["## (b) The membership oracle: {cities: [NYC, Z]} against {cities: [NYC]}", "",
              f"Towns Z of the public domain not on the 30-day city map: {len(with_users):,} with 1-7 users over the "
              f"30 days, {len(without):,} with none; {n} of each drawn. The attacker's score is the difference of "
              f"the two answers (per measure, and the three in noise s.d. summed); `AUC`: the chance a town with "
              f"users scores above one without (0.5 = chance); `best threshold`: the accuracy of the best cut, "
              f"chosen knowing the answers (an upper bound for the attacker).", "",
              f"- answers identical to {{cities: [NYC]}}: {identical['with']} of {n} towns with users, "
              f"{identical['without']} of {n} without", "",
              "| score | AUC | best threshold | mean with users | mean without |", "|---|---:|---:|---:|---:|"]
    for m, groups in scores.items():
        lines.append(f"| {m} | {_auc(groups['with'], groups['without']):.3f} | "
                     f"{_best_accuracy(groups['with'], groups['without']):.1%} | "
                     f"{statistics.fmean(groups['with']):.1f} | {statistics.fmean(groups['without']):.1f} |")
    # The same for small towns that the map shows is not the question; towns of 8-30 users, for scale.
    larger = [c for c in public if 8 <= city_users.get(c, 0) <= 30]
    if larger:
        sample = rng.sample(larger, min(len(larger), n))
        diffs = [float(engine.query(snap, as_of, _request(_query_body("30d", {"cities": [NYC, t]}))).to_dicts()[0]
                       ["unique_users"] - base["unique_users"]) for t in sample]
        lines += ["", f"For scale, {len(sample)} unshown towns of 8-30 users: users AUC against the empty ones "
                      f"{_auc(diffs, scores['unique_users']['without']):.3f}."]
    lines.append("")

    # (c) two releases of the same store under different secrets.
    lines += _two_secrets(args, release, exact, as_of)

    # (d) averaging shifted windows.
    lines += _shifted(release, exact, as_of, engine, snap, rng)

    text = "\n".join(lines)
    if args.http:
        text = _http_attacks(args, text, base_body, sample_with[:args.http_towns], sample_without[:args.http_towns])
    write("attacks", args.data_dir, text)


def window_range_of(window: str, as_of: dt.datetime) -> Any:
    from service.api.windows import window_range

    return window_range(window, as_of)


def _geo(window: str, level: str) -> Any:
    from service.engine.requests import GeoHeat

    return GeoHeat(window, level)


def release_sd(release: Any, as_of: dt.datetime, measure: str) -> float:
    """The noise s.d. of one city's published `measure` over 30 days (from the answer's own s.d.)."""
    from service.release import answers

    frame = answers.query(release, as_of, _request(_query_body("30d", {"cities": [NYC]})), noise=True)
    return float(frame[measure + "_std"][0]) or 1.0


def _two_secrets(args: argparse.Namespace, release: Any, exact: Exact, as_of: dt.datetime) -> list[str]:
    from service.engine.requests import GeoHeat, TopKeywords
    from service.release import answers
    from service.release.builder import release_through
    from service.release.menu import TABLES
    from service.release.noise import release_key
    from service.release.sources import FrameDays
    from service.release.storage import ReleaseStore
    from service.store.reader import EventStore

    other = args.other_secret_dir
    if other is None:
        other = args.tmp / f"{args.data_dir.name}-other-secret"
    if not (other / "release" / "STATE.json").exists():
        if other.exists():
            shutil.rmtree(other)
        other.mkdir(parents=True)
        _copy_store(args.data_dir, other, with_release=False)
        started = time.perf_counter()
        release_through(ReleaseStore(other), FrameDays(EventStore(other).snapshot()),
                        release_key(args.secret + "-other"), as_of)
        print(f"other secret's release built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    b = load_release(other)
    a_store, b_store = ReleaseStore(args.data_dir), ReleaseStore(other)
    lines = ["## (c) Two releases of the same store, two secrets", "",
             f"The same events released twice through {as_of:%Y-%m-%dT%H:%MZ}: key fingerprints "
             f"`{release.key}` and `{b.key}`. Per table, the day nodes' released values: how many are equal in the "
             f"two, and the s.d. of their difference in units of the node's noise s.d. (independent draws: "
             f"sqrt 2 = 1.41; the same noise: 0).", "",
             "| table | values compared | equal | s.d. of the difference / sigma |", "|---|---:|---:|---:|"]
    for table in TABLES:
        m = "user_days"
        x = a_store.read_table(table).filter((pl.col("level") == "day") & pl.col("cell").is_not_null())
        y = b_store.read_table(table).filter((pl.col("level") == "day") & pl.col("cell").is_not_null())
        j = x.join(y, on=["level", "start", "cell"], suffix="_b")
        diff = (j[m] - j[m + "_b"]) / j[f"sigma_{m}"]
        lines.append(f"| {table.name} ({m}) | {j.height:,} | {(j[m] == j[m + '_b']).mean():.2%} | {diff.std():.3f} |")
    # Answers: the published errors under the two secrets.
    span = window_range_of("30d", as_of)
    truth = exact.cells(span.start, span.end, "city").select("key", pl.col("users").alias("exact"))
    ga = answers.geo_heat(release, as_of, GeoHeat("30d", "city")).select(pl.col("geo_key").alias("key"), "unique_users")
    gb = answers.geo_heat(b, as_of, GeoHeat("30d", "city")).select(pl.col("geo_key").alias("key"), "unique_users")
    both = ga.join(gb, on="key", suffix="_b").join(truth, on="key", how="left").with_columns(pl.col("exact").fill_null(0))
    ea = (both["unique_users"] - both["exact"]).cast(pl.Float64)
    eb = (both["unique_users_b"] - both["exact"]).cast(pl.Float64)
    corr = pl.DataFrame({"a": ea, "b": eb}).select(pl.corr("a", "b"))[0, 0] if both.height > 2 else float("nan")
    ka = answers.top_keywords(release, as_of, TopKeywords("30d", 100_000)).select("keyword_raw", "suppressions")
    kb = answers.top_keywords(b, as_of, TopKeywords("30d", 100_000)).select("keyword_raw", "suppressions")
    kj = ka.join(kb, on="keyword_raw", suffix="_b")
    lines += ["", f"- 30-day city map: {ga.height} places under one secret, {gb.height} under the other, {both.height} "
                  f"in both; their user counts equal in {(both['unique_users'] == both['unique_users_b']).sum()}; "
                  f"correlation of the two errors (published - exact) {corr:.2f}",
              f"- 30-day top keywords: {kj.height} in both, suppressions equal in "
              f"{(kj['suppressions'] == kj['suppressions_b']).sum()}", ""]
    return lines


def _shifted(release: Any, exact: Exact, as_of: dt.datetime, engine: Any, snap: Any, rng: random.Random) -> list[str]:
    lines = ["## (d) Averaging shifted windows", "",
             "For cities of a size band over 30 days: `/query {cities: [c]}` over 30 days at 25 `as_of`, each an "
             "hour after the one before (the last one the newest); the error (published - exact of that window) "
             "of one answer and of the mean of the 25, their s.d. over the cities; `ratio`: the mean's s.d. over "
             "one answer's (issue 41's bound: at least 0.5); `suppressed`: answers showing 0 users; `corr`: the "
             "correlation of neighbouring windows' errors.", "",
             "| cities (30-day exact users) | cities | suppressed answers | one answer: error s.d. (exact) | "
             "mean of 25: error s.d. (exact) | ratio | corr |", "|---|---:|---:|---:|---:|---:|---:|"]
    hours = [as_of - k * HOUR for k in range(24, -1, -1)]
    truths = {h: dict(exact.cells(h - dt.timedelta(days=30), h, "city").select("key", "users").iter_rows()) for h in hours}
    for low, high in ((20, 50), (51, 150), (151, 1000)):
        places = sorted(c for c, u in truths[as_of].items() if low <= u <= high)
        places = rng.sample(places, min(len(places), 40))
        single, mean, suppressed, single_exact, mean_exact = [], [], 0, 0, 0
        pairs_a, pairs_b = [], []
        for place in places:
            errors, published = [], []
            for h in hours:
                row = engine.query(snap, h, _request(_query_body("30d", {"cities": [place]}))).to_dicts()[0]
                published.append(row["unique_users"])
                errors.append(row["unique_users"] - truths[h].get(place, 0))
                suppressed += row["unique_users"] == 0
            single.append(errors[-1])
            mean.append(statistics.fmean(errors))
            single_exact += published[-1] == truths[as_of][place]
            mean_exact += round(statistics.fmean(published)) == truths[as_of][place]
            pairs_a += errors[:-1]
            pairs_b += errors[1:]
        s1 = statistics.pstdev(single) if len(single) > 1 else float("nan")
        s2 = statistics.pstdev(mean) if len(mean) > 1 else float("nan")
        corr = pl.DataFrame({"a": pairs_a, "b": pairs_b}, schema={"a": pl.Float64, "b": pl.Float64}).select(
            pl.corr("a", "b"))[0, 0]
        lines.append(f"| {low}-{high} | {len(places)} | {suppressed} of {len(places) * len(hours)} | {s1:.2f} "
                     f"({single_exact}) | {s2:.2f} ({mean_exact}) | {s2 / s1:.2f} | {corr:.2f} |")
    lines.append("")
    return lines


@contextlib.contextmanager
def _served(data_dir: Path, target: str) -> Iterator[Any]:
    """bench_attacks.served with the gunicorn target as a parameter: `service.wsgi:app` (as shipped)
    or `release_wsgi:app` (bench/release_wsgi.py: the app built without a store, serving the release)."""
    import httpx
    from bench_endpoints import free_port, server_env, wait_ready

    env = server_env(data_dir)
    made = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--tier", "professional"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    key = made.stdout.strip().splitlines()[-1]
    port = free_port()
    command = [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py"]
    if target != "service.wsgi:app":
        command += ["--pythonpath", str(ROOT / "bench")]
    process = subprocess.Popen([*command, target], cwd=ROOT, env=server_env(data_dir, port),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(process, base)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
            yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _http_attacks(args: argparse.Namespace, text: str, base_body: dict[str, Any], with_users: list[str],
                  without: list[str]) -> str:
    """The web process with SIGNALS_PRIVACY_RELEASE=1, per gunicorn target: the refused shapes, the
    oracle on a sample of towns, GET /api/v1/privacy, and issue 41's three attacks (bench_attacks.py)."""
    import bench_attacks

    os.environ["SIGNALS_PRIVACY_RELEASE"] = "1"
    os.environ["SIGNALS_SECRET"] = args.secret
    for target in args.targets:
        started = time.monotonic()
        refused = []
        with _served(args.data_dir, target) as client:
            caller = bench_attacks.Caller(client)
            privacy = client.get("/api/v1/privacy")
            for _label, body in SHAPES_REFUSED:
                caller.pacer.wait()
                resp = client.post("/api/v1/signals/query", json=body)
                caller.sent += 1
                kind = resp.json().get("type", "") if "problem" in resp.headers.get("content-type", "") else ""
                refused.append(f"{resp.status_code} {kind.rsplit('/', 1)[-1]}".strip())
            base = caller.query(base_body).content
            same = {"with": 0, "without": 0}
            for group, towns in (("with", with_users), ("without", without)):
                for town in towns:
                    same[group] += caller.query(_query_body("30d", {"cities": [NYC, town]})).content == base
            first = caller.query({"window": "30d"})
            as_of = dt.datetime.fromisoformat(first.headers["X-Signals-As-Of"].replace("Z", "+00:00"))
            results = {}
            if not args.skip_issue41:
                truth = bench_attacks.Truth(args.data_dir)
                for name, attack in (("cloning", bench_attacks.cloning), ("differencing", bench_attacks.differencing),
                                     ("sliding", bench_attacks.sliding)):
                    results[name] = attack(caller, truth, as_of, random.Random(f"7-{name}"))
                    print(target, name, results[name], file=sys.stderr)
        seconds = time.monotonic() - started
        text += (f"\n## Over HTTP: gunicorn `{target}`, one worker, SIGNALS_PRIVACY_RELEASE=1\n\n"
                 f"- `GET /api/v1/privacy`: {privacy.status_code}"
                 + (f", epsilon per user-day {privacy.json().get('epsilon_per_user_day')}, per user-month "
                    f"{privacy.json().get('epsilon_per_user_month')}" if privacy.status_code == 200 else "") + "\n"
                 f"- the shapes of (a): {', '.join(refused)}\n"
                 f"- the oracle on {len(with_users)} + {len(without)} of the towns of (b): the body of "
                 f"{{cities: [NYC, Z]}} byte for byte that of {{cities: [NYC]}} for {same['with']} towns with users "
                 f"and {same['without']} without\n\n")
        if results:
            text += bench_attacks.report(target, 0, 0, results, caller.sent, seconds).replace(
                f"## Attacks ({target}): 0 events over 0 days", "### Issue 41's three attacks (bench/bench_attacks.py)")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, fn, helptext in (("accuracy", accuracy, "errors, shown cells, intervals, rankings"),
                               ("sliding", sliding, "users estimated on windows ending at consecutive hours"),
                               ("build", build, "data release --rebuild: wall time and peak RSS"),
                               ("scratch", scratch, "a build from scratch in process, with where the time goes"),
                               ("incremental", incremental, "one hour released on top of the rest"),
                               ("latency", latency, "cold Release.load and answers in a fresh process"),
                               ("attacks", attacks, "the attacks of issues 41 and 50 against the release"),
                               ("latency-child", latency_child, argparse.SUPPRESS)):
        sub = commands.add_parser(name, help=helptext)
        sub.add_argument("--data-dir", type=Path, required=True)
        sub.add_argument("--secret", default=os.environ.get("SIGNALS_SECRET", "bench-secret"),
                         help="the secret the release was built with (default $SIGNALS_SECRET or bench-secret)")
        sub.add_argument("--tmp", type=Path, default=Path("/tmp"), help="where copies of the store go")
        sub.set_defaults(func=fn)
        if name == "sliding":
            sub.add_argument("--hours", type=int, default=24, help="consecutive as_of (default 24)")
        if name == "build":
            sub.add_argument("--copy", action="store_true",
                             help="build in a copy of the store (the events hard-linked), leaving its release as it is")
        if name in ("build", "latency"):
            sub.add_argument("--runs", type=int, default=1 if name == "build" else 3)
        if name == "attacks":
            sub.add_argument("--other-secret-dir", type=Path, default=None,
                             help="a release of the same store under another secret (default: built under --tmp)")
            sub.add_argument("--oracle-towns", type=int, default=400, help="towns of each kind for the oracle")
            sub.add_argument("--http", action="store_true", help="also over HTTP: the web process serving the release")
            sub.add_argument("--http-towns", type=int, default=100, help="towns of each kind asked over HTTP")
            sub.add_argument("--targets", nargs="+", default=["release_wsgi:app", "service.wsgi:app"],
                             help="gunicorn targets to attack (default: the release's, then the shipped one)")
            sub.add_argument("--skip-issue41", action="store_true", help="over HTTP, only (a) and (b)")
        if name in ("latency", "latency-child"):
            sub.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
