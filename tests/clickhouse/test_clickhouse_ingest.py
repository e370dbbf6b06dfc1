"""Ingest into ClickHouse (SIGNALS_ENGINE=clickhouse, chdb): the real command line; the same
validation, quarantine and idempotence as the Parquet store; killed at any stage and run again, it
lands each row exactly once; and chdb's one-process rule is enforced with a clear message.

Each test uses chdb directories of its own, read from other processes (tests/support/
clickhouse_probe.py): a chdb directory opens in one process at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.crashed_ingest import BAD_LINE, kill, write_files
from tests.support.processes import ROOT, service_env


def _env(data: Path, url: str) -> dict[str, str]:
    return service_env(data, SIGNALS_ENGINE="clickhouse", SIGNALS_CLICKHOUSE_URL=url)


def _cli(data: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT, env=_env(data, url),
                          capture_output=True, text=True, timeout=180)


def _probe(url: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.support.clickhouse_probe", url], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _store(tmp_path: Path, name: str) -> tuple[Path, str]:
    data, url = tmp_path / f"{name}-data", f"chdb://{tmp_path / f'{name}-chdb'}"
    made = _cli(data, url, "data", "clickhouse-init")
    assert made.returncode == 0 and "ClickHouse tables ready" in made.stdout, made.stderr
    return data, url


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_files(tmp_path_factory.mktemp("ingest-files"))


@pytest.fixture(scope="module")
def after(tmp_path_factory: pytest.TempPathFactory, files: dict[str, Path]) -> dict:
    """The reference: A, then B and C, ingested without a crash."""
    reference, url = _store(tmp_path_factory.mktemp("reference"), "reference")
    for call in ([files["a"]], [files["b"], files["c"]]):
        assert _cli(reference, url, "data", "ingest", *map(str, call), "--no-progress").returncode == 0
    return _probe(url)


def _quarantined_bad_lines(data: Path) -> int:
    return sum(1 for path in (data / "quarantine").glob("*-b*.ndjson")
               for line in path.read_text().splitlines() if json.loads(line)["row_number"] == BAD_LINE)


def test_ingest_validates_quarantines_and_skips_what_is_in(tmp_path: Path, files) -> None:
    data, url = _store(tmp_path, "plain")
    again = _cli(data, url, "data", "clickhouse-init")  # idempotent
    assert again.returncode == 0 and "ClickHouse tables ready" in again.stdout, again.stderr
    landed = _cli(data, url, "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress")
    assert landed.returncode == 0, landed.stderr
    assert "Total: 150 accepted, 1 rejected, 0 files refused; landed, data generation 1." in landed.stdout, \
        landed.stdout
    assert _quarantined_bad_lines(data) == 1
    assert not (data / "suppressions").exists()  # nothing in the Parquet store
    state = _probe(url)
    assert state["generation"] == 1
    assert state["tables"]["suppressions"][0] == 120 and state["tables"]["keyword_changes"][0] == 30
    again = _cli(data, url, "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress")
    assert again.returncode == 0 and again.stdout.count("skipped, already in the store: the same content "
                                                        "landed in generation 1") == 2
    assert _probe(url) == state and _quarantined_bad_lines(data) == 1
    forced = _cli(data, url, "data", "ingest", str(files["c"]), "--force", "--no-progress")
    assert "landed, data generation 2" in forced.stdout
    assert _probe(url)["tables"]["keyword_changes"][0] == 60


# (stage, done) in ClickHouseTarget.write_tables: "staging" before each table's insert,
# "publishing" with every row and the quarantine file in, unpublished.
STAGES = [("staging", 1), ("publishing", 0), ("published", 1)]


@pytest.mark.parametrize(("stage", "done"), STAGES, ids=[f"{s}-{d}" for s, d in STAGES])
def test_an_ingest_killed_at_each_stage_then_run_again(tmp_path: Path, files, after, stage: str, done: int) -> None:
    data, url = _store(tmp_path, "crashed")
    assert _cli(data, url, "data", "ingest", str(files["a"]), "--no-progress").returncode == 0
    before = _probe(url)
    assert before != after and before["generation"] == 1

    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.pausing_ingest", stage, str(done), str(tmp_path / "marker"), "--",
         "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress"],
        cwd=ROOT, env=_env(data, url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(process, tmp_path / "marker")
        # chdb: while the ingest holds the directory, a second one is refused, saying why.
        second = _cli(data, url, "data", "ingest", str(files["a"]), "--no-progress")
        assert second.returncode == 1
        assert "held by another process" in second.stderr and "nothing was loaded" in second.stderr
    finally:
        kill(process)

    state = _probe(url)
    assert state["generation"] == (2 if stage == "published" else 1)
    published = {t: v[:2] for t, v in state["tables"].items()}
    assert published == {t: v[:2] for t, v in (after if stage == "published" else before)["tables"].items()}

    rerun = _cli(data, url, "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress")
    assert rerun.returncode == 0, rerun.stderr
    if stage == "published":
        assert rerun.stdout.count("skipped, already in the store: the same content landed in generation 2") == 2
    else:
        assert "Total: 150 accepted, 1 rejected, 0 files refused; landed, data generation 2." in rerun.stdout
    if stage in ("staging", "publishing"):
        assert "removed the leftovers of an unfinished ingest" in rerun.stderr
    assert _probe(url) == after  # each row exactly once, with the reference's generations
    assert _quarantined_bad_lines(data) == 1


def _wait_for(process: subprocess.Popen, marker: Path) -> None:
    import time

    deadline = time.monotonic() + 120
    while not marker.exists():
        if process.poll() is not None:
            pytest.fail(f"the ingest ended early: {process.communicate()[0]}")
        assert time.monotonic() < deadline
        time.sleep(0.05)
