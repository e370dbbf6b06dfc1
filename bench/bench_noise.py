"""The privacy stage's cost (`Privacy.publish`, in process) on the same synthetic cells under two
code trees, side by side: each round runs every case once in a fresh process per tree, the trees
alternating, so that the load of a shared machine hits both alike; the median over rounds is
reported, and the ratio of the medians.

Cases (every cell has users, so none is suppressed for want of data; the numbers are drawn for
real, under a fixed secret):

- keywords-30d: 20,000 keyword cells over 30 days, their user counts only (issue 41's first
  figure: 51 ms before the time levels and place layers, 423 ms after).
- county-platform-90d: 20,000 (county, platform) cells over 90 days, users, suppressions and events
  with their caps (a `/query` grouped by county x platform: a place layer per county).
- county-keyword-90d: 500,000 (county, keyword) cells over 90 days, the same measures (the largest
  publication on the request path is of this order).
- city-hour-7d: 48 cities filtered, grouped by hour over 7 days (168 cells, one layer per city
  and hour) plus the same grouped by city and hour (8,064 cells): the differencing attack's shape.

    .venv/bin/python bench/bench_noise.py --code /tmp/base --code . [--rounds 5] [--cases NAME...]
    .venv/bin/python bench/bench_noise.py --code /tmp/base --code . --data-dir bench/out/data-10000000-90-7

`--code` names a tree holding `service/` (the first is "before", the last "after"). Each tree's
published frames are printed as a hash: two trees that differ only in speed must show the same.

With `--data-dir` (a demo data set, e.g. bench/out/data-10000000-90-7), the cases are instead
whole engine calls (`PolarsEngine.<endpoint>`, as bench/bench_endpoints.py times its "engine"
column, with the served privacy parameters and the bench secret) on the snapshot loaded
by each tree, the same requests in every tree (`--endpoint-cases`: parts of bench_endpoints'
case names); a process per tree and round loads the snapshot once and runs each case --repeats
times after a warm-up, its best kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("keywords-30d", "county-platform-90d", "county-keyword-90d", "city-hour-7d")
SECRET = "bench-noise-secret"
AS_OF = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _inputs(case: str):  # noqa: ANN202 - runs inside the tree under test
    import numpy as np
    import polars as pl

    from service.api.windows import TimeRange
    from service.privacy import Contributions, Published
    from service.privacy.cells import CellContext

    rng = np.random.default_rng(7)
    measures = ("suppressions", "unique_users", "events")

    def query_cells(dims: dict[str, list[str]], days: int, bucket: str | None = None):
        names = list(dims)
        grid = pl.DataFrame({names[0]: dims[names[0]]})
        for name in names[1:]:
            grid = grid.join(pl.DataFrame({name: dims[name]}), how="cross")
        n = grid.height
        users = rng.integers(1, 400, n)
        frame = grid.with_columns(
            pl.Series("unique_users", users, dtype=pl.Int64),
            pl.Series("suppressions_pilot", users * rng.integers(1, 20, n), dtype=pl.Int64),
            pl.Series("events_pilot", users * rng.integers(1, 10, n), dtype=pl.Int64),
        )
        per_user = grid.with_columns(pl.Series("suppressions", rng.integers(40, 400, n), dtype=pl.Int64),
                                     pl.Series("events", rng.integers(40, 300, n), dtype=pl.Int64))
        totals = grid.with_columns(pl.Series("suppressions", users * 12, dtype=pl.Int64),
                                   pl.Series("events", users * 6, dtype=pl.Int64))
        window = TimeRange(AS_OF - dt.timedelta(days=days), AS_OF)
        versions = {(AS_OF - dt.timedelta(days=d)).date(): d % 3 for d in range(days + 1)}
        cell = CellContext(table="suppressions", dims=tuple(names),
                           published=tuple(Published(m, m, "unique_users") for m in measures),
                           time_range=window, versions=versions, bucket=bucket)
        return frame, cell, Contributions(per_user, keys=tuple(names), totals=totals)

    if case == "keywords-30d":
        n = 20_000
        frame = pl.DataFrame({"keyword": [f"keyword {i}" for i in range(n)],
                              "unique_users": rng.integers(1, 400, n)})
        window = TimeRange(AS_OF - dt.timedelta(days=30), AS_OF)
        cell = CellContext(table="keyword_changes", dims=("keyword",),
                           published=(Published("unique_users", "unique_users", "unique_users"),),
                           time_range=window, versions={window.start.date(): 3})
        return [(frame, cell, None)]
    counties = [f"US-{i:05d}" for i in range(2_860)]
    platforms = ["chrome", "firefox", "safari", "edge", "android", "ios", "other"]
    if case == "county-platform-90d":
        return [query_cells({"county": counties, "platform": platforms}, 90)]
    if case == "county-keyword-90d":
        return [query_cells({"county": counties[:2_500], "keyword": [f"kw{i}" for i in range(200)]}, 90)]
    if case == "city-hour-7d":
        cities = [f"city {i}" for i in range(48)]
        hours = [AS_OF - dt.timedelta(hours=h) for h in range(1, 169)]
        grouped = query_cells({"city": cities, "ts": hours}, 7, bucket="hour")
        filtered_frame, _cell, contributions = query_cells({"ts": hours}, 7, bucket="hour")
        filtered = CellContext(table="suppressions", dims=("ts",), published=grouped[1].published,
                               time_range=grouped[1].time_range, versions=grouped[1].versions, bucket="hour",
                               fixed={"city": tuple(cities)})
        return [grouped, (filtered_frame, filtered, contributions)]
    raise ValueError(case)


ENDPOINT_CASES = ("query 90d US, county x platform", "query 90d keyword x day", "top-keywords 30d limit 500",
                  "geo-heat 30d city", "trending 30d keyword unique_users", "keyword-timeseries 90d hour, #1 ")


def endpoint_worker(data_dir: str, parts: list[str], repeats: int) -> None:
    """In the tree under test: the engine's calls for bench_endpoints' cases named by `parts`."""
    sys.path.insert(1, str(Path.cwd() / "bench"))
    import polars as pl
    from bench_endpoints import case_requests, case_subjects, endpoint_of

    from service.api.windows import compute_as_of
    from service.app import privacy_params
    from service.clock import SystemClock
    from service.engine.polars import PolarsEngine, user_keys
    from service.privacy import Privacy
    from service.settings import Settings
    from service.store.reader import EventStore

    frames = EventStore(Path(data_dir)).snapshot()
    user_keys.learn(frames)
    as_of = compute_as_of(SystemClock().now(), frames.last_event)
    settings = Settings.from_env()  # SIGNALS_SECRET: the run's (main), the same in every tree
    engine = PolarsEngine(Privacy(settings.secret, privacy_params(settings)))
    requests = [(name, req) for name, req in case_requests(*case_subjects(engine, frames, as_of))
                if any(part in name for part in parts)]
    out = {}
    for name, req in requests:
        run = getattr(engine, endpoint_of(req))
        first = run(frames, as_of, req)
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            run(frames, as_of, req)
            timings.append(time.perf_counter() - started)
        digest = "-"
        if isinstance(first, pl.DataFrame):
            # Values, not a process's categories: a Categorical's IPC bytes hold its dictionary.
            first = first.with_columns(pl.col(name).cast(pl.String) for name, dtype in first.schema.items()
                                       if isinstance(dtype, pl.Categorical | pl.Enum))
            rows = first.hash_rows(seed=0).sort().to_list()  # in any order, any chunking
            digest = hashlib.sha256(repr((first.schema, rows)).encode()).hexdigest()[:12]
        out[name] = {"ms": min(timings) * 1000, "rows": first.height if isinstance(first, pl.DataFrame) else 0,
                     "hash": digest}
    print(json.dumps(out))


def worker(case: str, repeats: int) -> None:
    """In the tree under test (its root first on sys.path): time `publish` on the case's inputs."""
    import polars as pl

    from service.privacy import Privacy

    inputs = _inputs(case)
    privacy = Privacy(SECRET)
    timings, digest = [], hashlib.sha256()
    for run in range(repeats + 1):  # the first run warms up
        started = time.perf_counter()
        outs = [privacy.publish(frame, cell, contributions) for frame, cell, contributions in inputs]
        elapsed = time.perf_counter() - started
        if run:
            timings.append(elapsed)
        else:
            for out in outs:
                digest.update(out.sort(pl.all()).write_ipc(None).getvalue())
    print(json.dumps({"ms": min(timings) * 1000, "rows": sum(f.height for f, _c, _x in inputs),
                      "hash": digest.hexdigest()[:12]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, action="append", help="a code tree (repeat: before, after)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per process (its best is kept)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--data-dir", help="time whole engine calls on this demo data set instead")
    parser.add_argument("--endpoint-cases", nargs="+", default=list(ENDPOINT_CASES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "endpoints":
        endpoint_worker(args.data_dir, args.endpoint_cases, args.repeats)
        return
    if args.worker:
        worker(args.worker, args.repeats)
        return
    from bench_secret import bench_secret  # here: the workers run in trees that may not have it

    bench_secret()  # in the environment the workers inherit
    trees = [path.resolve() for path in (args.code or [ROOT])]
    results: dict[tuple[str, Path], list[dict]] = {}
    for _round in range(args.rounds):
        for case in (["endpoints"] if args.data_dir else args.cases):
            for tree in trees if _round % 2 == 0 else reversed(trees):
                argv = ["bench_noise", "--worker", case, "--repeats", str(args.repeats)]
                if args.data_dir:
                    argv += ["--data-dir", str(Path(args.data_dir).resolve()), "--endpoint-cases", *args.endpoint_cases]
                code = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv = {argv!r};"
                        f"__file__ = {str(Path(__file__).resolve())!r}; exec("
                        f"compile(open({str(Path(__file__).resolve())!r}).read(), 'bench_noise', 'exec'))")
                out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True)
                answer = json.loads(out.stdout.strip().splitlines()[-1])
                for name, result in (answer.items() if args.data_dir else [(case, answer)]):
                    results.setdefault((name, tree), []).append(result)
    header = "| case | rows | " + " | ".join(f"{tree.name or tree} (ms)" for tree in trees) + \
        " | ratio last/first | numbers (hash per tree) |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for case in dict.fromkeys(name for name, _tree in results):
        medians = [statistics.median(r["ms"] for r in results[(case, tree)]) for tree in trees]
        # The numbers' hash per tree (equal hashes: equal numbers, row for row).
        same = " / ".join(",".join(sorted({r["hash"] for r in results[(case, tree)]})) for tree in trees)
        print(f"| {case} | {results[(case, trees[0])][0]['rows']:,} | " + " | ".join(f"{m:.0f}" for m in medians)
              + f" | {medians[-1] / medians[0]:.2f} | {same} |")


if __name__ == "__main__":
    main()
