"""Issue 22: one copy of the events per machine.

Real gunicorn processes on a store landed by the real command line: the workers map the
generation's snapshot, so adding workers adds no copy of the data (a measurement of PSS, with a
generous bound, not a timing); a generation landed while requests run is taken up by every worker
without an error or a response that mixes generations, and the old snapshot's files are removed.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import threading
import time
from pathlib import Path

import httpx
import polars as pl
import pytest

from service.store import layout, schema, snapshot
from tests.support import process_memory
from tests.support.landing import write_events
from tests.support.process_memory import MIB
from tests.support.processes import cli, create_key, gunicorn_process

DEMO_EVENTS = 1_500_000

GETS = [
    ("/api/v1/signals/top-keywords", {"window": "30d"}),
    ("/api/v1/signals/keyword-timeseries", {"keyword": "weather"}),
    ("/api/v1/signals/domain-timeseries", {"domain": "reddit.com"}),
    ("/api/v1/signals/geo-heat", {"window": "30d"}),
    ("/api/v1/signals/trending", {"window": "7d"}),
    ("/api/v1/signals/keyword-activity", {"window": "30d"}),
]
QUERY = {"window": "90d", "group_by": ["country", "platform"]}


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("shared") / "data"
    result = cli(data_dir, "data", "demo", "--events", str(DEMO_EVENTS), "--no-progress")
    assert result.returncode == 0, result.stderr
    return data_dir


def _snapshot_bytes(data_dir: Path) -> int:
    directory = snapshot.snapshot_dir(data_dir, layout.read_generation(data_dir))
    return sum(path.stat().st_size for path in directory.iterdir())


def _every_endpoint(base: str, key: str, rounds: int) -> None:
    """Every endpoint `rounds` times from 3 threads, so that every worker serves some of each. Each
    request on a connection of its own: a threaded worker keeps the connections it accepted, so
    kept-alive connections could all land on one worker."""
    def one(_: int) -> list[int]:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}", "Connection": "close"},
                          timeout=60) as http:
            statuses = [http.get(path, params=params).status_code for path, params in GETS]
            return statuses + [http.post("/api/v1/signals/query", json=QUERY).status_code]

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for statuses in pool.map(one, range(rounds)):
            assert set(statuses) == {200}, statuses


def _measure(data_dir: Path, key: str, workers: int) -> tuple[int, list[process_memory.Usage]]:
    with gunicorn_process(data_dir, WEB_CONCURRENCY=str(workers), SIGNALS_CACHE_RESPONSES="false",
                          SIGNALS_LOG_LEVEL="warning") as (base, log, pid):
        _every_endpoint(base, key, rounds=3 * workers)
        processes = process_memory.tree_usage(pid, under=snapshot.snapshots_dir(data_dir))
    assert "Traceback" not in log[0], log[0]
    assert len(processes) == workers + 1
    return sum(p.pss for p in processes), processes


@pytest.mark.process
def test_memory_does_not_grow_with_workers_beyond_their_own_overhead(demo_store: Path) -> None:
    data_dir = demo_store
    key = create_key(data_dir, "professional")
    data = _snapshot_bytes(data_dir)
    one, one_processes = _measure(data_dir, key, 1)
    three, three_processes = _measure(data_dir, key, 3)
    report = (f"data {data / MIB:.0f} MiB; 1 worker: {one / MIB:.0f} MiB "
              f"{[round(p.pss / MIB) for p in one_processes]}; 3 workers: {three / MIB:.0f} MiB "
              f"{[round(p.pss / MIB) for p in three_processes]}")
    workers = three_processes[1:]
    # Every worker reads the data from the mapped snapshot (a private copy, or a conversion after
    # reading, would leave the mapping untouched), and the mapped pages count once over all of them.
    assert all(p.mapped_rss > data / 2 for p in workers), report
    assert sum(p.mapped_pss for p in workers) < 1.1 * data, report
    # What one worker holds beyond the shared data (interpreter, libraries, query temporaries)
    # bounds what each added worker adds.
    own = one_processes[1].pss - one_processes[1].mapped_pss
    assert three - one < 2 * own + data / 2, report


def _suppressions_now(rows: int, now: dt.datetime) -> pl.DataFrame:
    """`rows` events of the last hours, all for one keyword (so that answers change)."""
    index = pl.int_range(0, rows, eager=True)
    start = int((now - dt.timedelta(hours=2)).timestamp() * 1_000_000)
    return pl.DataFrame({
        "ts": (start + (index % 3600) * 1_000_000).cast(pl.Datetime("us", "UTC")),
        "user_id": (index % 997).cast(pl.UInt64),
        "keyword": pl.Series(["weather"] * rows),
        "domain": pl.Series(["reddit.com"] * rows),
        "platform": pl.Series(["chrome"] * rows),
        "page_context": pl.Series(["feed"] * rows),
        "country": pl.Series(["US"] * rows),
        "region": pl.Series(["US-CA"] * rows),
        "county": pl.Series(["06037"] * rows),
        "city": pl.Series(["5368361"] * rows),
        "suppressions": pl.Series([2] * rows, dtype=pl.Int32),
    }).select(pl.col(c).cast(t) for c, t in schema.SUPPRESSIONS_SCHEMA.items())


@pytest.mark.process
def test_a_generation_landed_while_requests_run(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = cli(data_dir, "data", "demo", "--events", "200000", "--no-progress")
    assert result.returncode == 0, result.stderr
    key = create_key(data_dir, "professional")
    before = layout.read_generation(data_dir)
    old_snapshot = snapshot.snapshot_dir(data_dir, before)
    assert old_snapshot.is_dir()
    seen: list[tuple[str, str, int, bytes]] = []  # (request, as_of, generation, body)
    failures: list[str] = []
    stop = threading.Event()

    def client() -> None:
        path, params = GETS[1]
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            while not stop.wait(0.5):  # well below the plan's rate limit (300 a minute)
                for name, send in (
                    ("timeseries", lambda: http.get(path, params=params)),
                    ("query", lambda: http.post("/api/v1/signals/query", json=QUERY)),
                ):
                    try:
                        response = send()
                    except httpx.HTTPError as exc:
                        failures.append(f"{name}: {exc!r}")
                        continue
                    if response.status_code != 200:
                        failures.append(f"{name}: {response.status_code} {response.text[:200]}")
                        continue
                    seen.append((name, response.headers["Last-Modified"],
                                 int(response.headers["X-Signals-Data-Generation"]), response.content))

    with gunicorn_process(data_dir, WEB_CONCURRENCY="2", SIGNALS_CACHE_RESPONSES="false",
                          SIGNALS_LOG_LEVEL="warning") as (base, log, pid):
        threads = [threading.Thread(target=client) for _ in range(3)]
        for thread in threads:
            thread.start()
        try:
            # Land only once both requests were answered from the old generation (a loaded machine
            # can take seconds over the first answers).
            deadline = time.monotonic() + 60
            while {n for n, _a, g, _b in list(seen) if g == before} != {"timeseries", "query"}:
                assert time.monotonic() < deadline and not failures, ("no answers before the landing", failures)
                time.sleep(0.2)
            landed = write_events(data_dir, schema.SUPPRESSIONS,
                                         _suppressions_now(20_000, dt.datetime.now(dt.UTC)))
            assert landed and layout.read_generation(data_dir) == before + 1
            deadline = time.monotonic() + 30
            while {n for n, _a, g, _b in list(seen) if g == before + 1} != {"timeseries", "query"}:
                assert time.monotonic() < deadline, "the workers did not take up the new generation"
                time.sleep(0.2)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        # The old snapshot was removed after publishing, while workers still mapped it.
        assert not old_snapshot.exists()
        assert set(snapshot.existing(data_dir)) == {before + 1}
        # Past the workers' check interval (1 s), every request is answered from the new
        # generation, by whichever worker.
        time.sleep(2)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            after = [http.post("/api/v1/signals/query", json=QUERY) for _ in range(6)]
        assert {int(r.headers["X-Signals-Data-Generation"]) for r in after} == {before + 1}, log
        maps = process_memory.tree_usage(pid, under=snapshot.snapshots_dir(data_dir))
        # No request holds the old generation any more: its mappings are gone with it. A segment
        # the new generation shares with the old one (hard-linked: the same inode) may stay mapped
        # through the old path, so files are told apart by inode, not by path.
        mapped = set().union(*(process_memory.mapped_inodes(p.pid, snapshot.snapshots_dir(data_dir)) for p in maps))
        current = {path.stat().st_ino for path in snapshot.snapshot_dir(data_dir, before + 1).iterdir()}
    assert failures == []
    assert "Traceback" not in log[0], log[0]
    # No response mixes generations: per request, hour and generation, one body; and the landing
    # changed the answers, so a mix would show.
    bodies: dict[tuple[str, str, int], set[bytes]] = {}
    for name, as_of, generation, body in seen:
        bodies.setdefault((name, as_of, generation), set()).add(body)
    assert all(len(found) == 1 for found in bodies.values()), {k: len(v) for k, v in bodies.items()}
    for name in ("timeseries", "query"):
        by_generation = {g: b for (n, _a, g), b in bodies.items() if n == name}
        assert set(by_generation) == {before, before + 1}
        assert by_generation[before] != by_generation[before + 1]
    assert any(p.mapped_rss for p in maps)  # the workers map the new snapshot
    assert mapped and mapped <= current, (mapped, current)
