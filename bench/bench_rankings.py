"""The first rows of every ranking against their exact values: how many are published at more than
twice the truth (issue 33's measure of "a ranking led by noise").

For each ranking a person reads top down — `/keyword-activity` 30d (type all and added),
`/top-keywords` 24h and 30d, `/geo-heat` 7d by city, and `/query` grouped by keyword, domain or
city over 24h, 7d and 30d ordered by each measure — the engine answers in-process exactly as served
(settings' privacy parameters, the bench secret), and DuckDB computes the exact, uncapped,
noise-free value of each of the first `--rows` rows from the same Parquet files. A row counts as
"over 2x" when the number the ranking is ordered by is published at more than twice its exact value.

    .venv/bin/python bench/bench_rankings.py                       # the 10M benchmark data (bench_endpoints')
    .venv/bin/python bench/bench_rankings.py --data-dir ./data     # the run command's demo set, say

Prints a table (and writes bench/out/rankings-<rule>.md); `--rule` weighs a part of the cap rule
(bench/cap_rules.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_secret import bench_secret  # noqa: E402
from cap_rules import RULES, cap_rule  # noqa: E402

from service.api.windows import compute_as_of, window_range  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.requests import FlexibleQuery, GeoHeat, KeywordActivity, TopKeywords  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventFrames, EventStore  # noqa: E402

ROWS = 50


@dataclasses.dataclass(frozen=True)
class Ranking:
    """One ranking: its name, the published frame's key and ordering columns, and the exact value's
    SQL (table, key expression, measure expression)."""

    name: str
    key: str
    column: str
    table: str
    sql_key: str
    sql_measure: str


def rankings(engine: Engine, frames: EventFrames, as_of: dt.datetime, rows: int = ROWS
             ) -> Iterator[tuple[Ranking, str, pl.DataFrame]]:
    """Every ranking of issue 33 with its window and its first `rows` published rows."""
    count = {"suppressions": "sum(suppressions)", "events": "count(*)", "unique_users": "count(DISTINCT user_id)"}
    for kind, column, sql in (("all", "total_events", "count(*)"),
                              ("added", "adds", "count(*) FILTER (WHERE action = 'add')")):
        shown = engine.keyword_activity(frames, as_of, KeywordActivity("30d", kind, rows))
        yield Ranking(f"/keyword-activity type={kind}", "keyword", column, "keyword_changes", "keyword", sql), "30d", shown
    for window in ("24h", "30d"):
        shown = engine.top_keywords(frames, as_of, TopKeywords(window, rows)).with_columns(pl.col("keyword_raw").alias("key"))
        yield Ranking("/top-keywords", "key", "suppressions", "suppressions", "keyword", count["suppressions"]), window, shown
    for window in ("7d", "30d"):  # over 30 days a city's cap reads its family's mean (docs/privacy.md)
        shown = engine.geo_heat(frames, as_of, GeoHeat(window, "city"))
        yield (Ranking("/geo-heat level=city", "geo_key", "suppressions", "suppressions", "city", count["suppressions"]),
               window, shown.head(rows))
    for dimension in ("keyword", "domain", "city"):
        key = "city_id" if dimension == "city" else dimension
        for window in ("24h", "7d", "30d"):
            for measure in ("suppressions", "events", "unique_users"):
                shown = engine.query(frames, as_of, FlexibleQuery(window, {}, (dimension,), None, order_by=measure, limit=rows))
                yield (Ranking(f"/query group_by={dimension} order_by={measure}", key, measure, "suppressions", dimension,
                               count[measure]), window, shown)


class Exact:
    """Exact values by DuckDB, straight from the store's Parquet files."""

    def __init__(self, data_dir: Path) -> None:
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        for table in ("suppressions", "keyword_changes"):
            self.con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{data_dir / table}/*/*.parquet', "
                             "hive_partitioning = true)")

    def values(self, ranking: Ranking, window: str, as_of: dt.datetime) -> pl.DataFrame:
        span = window_range(window, as_of)
        start, end = (f"TIMESTAMPTZ '{m:%Y-%m-%d %H:%M:%S}+00'" for m in (span.start, span.end))
        sql = (f"SELECT {ranking.sql_key}::VARCHAR AS key, ({ranking.sql_measure})::BIGINT AS exact "
               f"FROM {ranking.table} WHERE ts >= {start} AND ts < {end} AND {ranking.sql_key} IS NOT NULL GROUP BY 1")
        return pl.from_arrow(self.con.sql(sql).to_arrow_table())


def compare(shown: pl.DataFrame, ranking: Ranking, exact: pl.DataFrame) -> pl.DataFrame:
    """The shown rows (in order) with their exact value and whether they are over twice it."""
    rows = shown.select(pl.col(ranking.key).cast(pl.String).alias("key"), pl.col(ranking.column).alias("published"))
    joined = rows.join(exact, on="key", how="left", maintain_order="left").with_columns(pl.col("exact").fill_null(0))
    return joined.with_columns(over=pl.col("published") > 2 * pl.col("exact"))


def report(engine: Engine, frames: EventFrames, as_of: dt.datetime, data_dir: Path, rows: int = ROWS) -> pl.DataFrame:
    """One row per ranking: rows shown, rows over 2x, and the worst row (published / exact)."""
    exact = Exact(data_dir)
    out = []
    for ranking, window, shown in rankings(engine, frames, as_of, rows):
        checked = compare(shown, ranking, exact.values(ranking, window, as_of))
        worst = checked.with_columns(ratio=pl.col("published") / pl.col("exact").clip(lower_bound=1)).sort("ratio").tail(1)
        out.append({"ranking": ranking.name, "window": window, "rows": checked.height,
                    "over_2x": int(checked.get_column("over").sum()),
                    "worst": (f"{worst['key'][0]}: {worst['published'][0]:,} published, {worst['exact'][0]:,} exact"
                              if worst.height else "")})
    return pl.DataFrame(out)


def secrets(served: str, count: int) -> list[str]:
    """The served secret and `count` - 1 others derived from it (each a different draw of every
    cell's noise, the same data)."""
    return [served] + [f"{served}/draw-{i}" for i in range(1, max(1, count))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="a store's data directory (default: the 10M data)")
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--rule", choices=RULES, default="served",
                        help="the cap rule as served, or without a part of it (bench/cap_rules.py)")
    parser.add_argument("--cap-fit", type=float, default=None, metavar="SHARE",
                        help="the ceiling's share of a cell's sum read low instead of PrivacyParams.cap_fit")
    parser.add_argument("--secrets", type=int, default=1, metavar="N",
                        help="draw the noise under N secrets (the served one and N-1 others) and add up "
                             "the rows over 2x: one draw swings by a row or two")
    args = parser.parse_args()
    if args.data_dir is None:
        from bench_endpoints import ensure_data
        args.data_dir, _info = ensure_data(10_000_000, 90, 7)
    frames = EventStore(args.data_dir).snapshot()
    last = frames.suppressions.get_column("ts").max()
    as_of = compute_as_of(last + dt.timedelta(hours=1), last)
    settings = Settings()
    with cap_rule(args.rule, privacy_params(settings)) as params:
        if args.cap_fit is not None:
            params = dataclasses.replace(params, cap_fit=args.cap_fit)
        draws = [report(Engine(Privacy(secret, params)), frames, as_of, args.data_dir, args.rows)
                 for secret in secrets(bench_secret(), args.secrets)]
    table = draws[0]
    rule = args.rule if args.cap_fit is None else f"{args.rule}, cap_fit {args.cap_fit}"
    lines = [f"First {args.rows} rows of each ranking on {args.data_dir}, as_of {as_of:%Y-%m-%dT%H:%MZ}, "
             f"cap rule: {rule}, {len(draws)} secret(s)", "",
             "| ranking | window | rows | over 2x exact (served secret) | over 2x, all draws / most in one "
             "| worst row (served secret) |", "|---|---|---:|---:|---|---|"]
    for i, r in enumerate(table.iter_rows(named=True)):
        counts = [draw["over_2x"][i] for draw in draws]
        lines.append(f"| `{r['ranking']}` | {r['window']} | {r['rows']} | {r['over_2x']} | "
                     f"{sum(counts)} / {max(counts)} | {r['worst']} |")
    totals = [int(draw["over_2x"].sum()) for draw in draws]
    lines += ["", f"Rows over 2x in all rankings, per draw: {totals}; the most in one ranking of one draw: "
                  f"{max(int(draw['over_2x'].max()) for draw in draws)}"]
    text = "\n".join(lines)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rankings-{args.rule}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
