"""Issue 12, part 2: an ingest killed at any point never shows half a generation, leaves nothing
behind after the next ingest, and running it again lands each row exactly once.

The crash tests kill a real `python -m service data ingest` process (SIGKILL) while it stands at a
named stage (tests/support/pausing_ingest.py stops it there), then check what a freshly started
reader loads, and what running the same ingest again (the real command line) leaves in the store.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from service.store import ingest, layout, leftovers, reader, schema, snapshot, snapshot_reading, writer_lock
from tests.support.crashed_ingest import BAD_LINE, kill, suppression_rows, write_files
from tests.support.processes import ROOT, cli, service_env
from tests.support.secret import TEST_SECRET

SECRET = TEST_SECRET  # the command line's (service_env), so every path hashes alike


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return write_files(tmp_path)


def _ingest(data: Path, *paths: Path) -> ingest.IngestReport:
    return ingest.ingest_files(data, list(paths), secret=SECRET, now=dt.datetime.now(dt.UTC), progress=False)


def _loaded(data: Path) -> dict[str, pl.DataFrame]:
    """What a freshly started worker serves, in the stored schema and a canonical row order."""
    frames = reader.EventStore(data).snapshot()
    return {
        table: getattr(frames, table).cast(schema.SCHEMAS[table]).sort(pl.all()) for table in schema.TABLES
    }


def _same(left: dict[str, pl.DataFrame], right: dict[str, pl.DataFrame]) -> bool:
    return all(left[table].equals(right[table]) for table in schema.TABLES)


def _quarantined_bad_lines(data: Path) -> int:
    return sum(
        1
        for path in layout.quarantine_dir(data).glob("*-b*.ndjson")
        for line in path.read_text().splitlines()
        if json.loads(line)["row_number"] == BAD_LINE
    )


def _start_paused(data: Path, stage: str, done: int, marker: Path, *paths: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.pausing_ingest", stage, str(done), str(marker), "--",
         "data", "ingest", *map(str, paths), "--no-progress"],
        cwd=ROOT, env=service_env(data), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not marker.exists():
        if process.poll() is not None:
            pytest.fail(f"the ingest ended before reaching {stage} {done}: {process.communicate()[0]}")
        assert time.monotonic() < deadline, f"the ingest did not reach {stage} {done}"
        time.sleep(0.05)
    return process


# (stage, files done): the crashed run lands 8 partition files and 1 quarantine file (9 in all)
STAGES = [
    ("parsing", 1),  # b.ndjson read and validated, c.csv next
    ("staging", 4),  # 4 of 9 files staged
    ("renaming", 0),  # all staged, the manifest in place, nothing renamed
    ("renaming", 5),  # the quarantine file and 4 partition files renamed into place, 4 to go
    ("compacting", 0),  # every file in place; B comes before A's last event: suppressions compacted next
    ("snapshot", 1),  # every file in place; the snapshot's suppressions written, the rest not yet
    ("snapshot", 7),  # the snapshot's tables and spans written, its record not yet
    ("publishing", 0),  # everything in place, GENERATION's new value written but not renamed
    ("published", 1),  # GENERATION renamed: landed
]


@pytest.mark.parametrize(("stage", "done"), STAGES, ids=[f"{s}-{d}" for s, d in STAGES])
def test_an_ingest_killed_at_each_stage(tmp_path: Path, files: dict[str, Path], stage: str, done: int) -> None:
    data = tmp_path / "data"
    _ingest(data, files["a"])
    before = _loaded(data)
    reference = tmp_path / "reference"
    _ingest(reference, files["a"])
    _ingest(reference, files["b"], files["c"])
    after = _loaded(reference)
    assert not _same(before, after)

    process = _start_paused(data, stage, done, tmp_path / "marker", files["b"], files["c"])
    try:
        if stage not in ("parsing", "published"):
            # Mid-landing: its files are not leftovers, and the web process's sweep keeps off them.
            assert leftovers.sweep_if_idle(data) is None
            with pytest.raises(writer_lock.StoreBusy), writer_lock.lock(data, wait=False):
                pass
            if stage == "staging":
                assert len(list(layout.staging_dir(data).iterdir())) == done
            if stage == "snapshot":
                assert snapshot.staged_snapshot_dir(data, 2).is_dir()
                assert set(snapshot.existing(data)) == {1}
        # A worker started now serves the old data (or, once published, the new), never a mix.
        assert _same(_loaded(data), after if stage == "published" else before)
    finally:
        kill(process)

    # After the kill: exactly the old data, or exactly the new.
    assert _same(_loaded(data), after if stage == "published" else before)
    assert layout.read_generation(data) == (2 if stage == "published" else 1)

    # The operator runs the ingest again.
    rerun = cli(data, "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress")
    assert rerun.returncode == 0, rerun.stderr
    if stage == "published":
        assert rerun.stdout.count("skipped, already in the store: the same content landed in generation 2") == 2
        assert "nothing landed, data generation 2" in rerun.stdout
    else:
        assert "Total: 150 accepted, 1 rejected, 0 files refused; landed, data generation 2." in rerun.stdout
    if stage in ("staging", "renaming", "snapshot", "publishing"):
        assert "removed the leftovers of an unfinished ingest" in rerun.stderr
    assert list(layout.staging_dir(data).iterdir()) == []
    assert sorted(p.name for p in layout.generations_dir(data).iterdir()) == ["g00000001.json", "g00000002.json"]
    assert set(snapshot.existing(data)) == {2}  # generation 1's snapshot removed once 2 was published
    assert _same(_loaded(data), after)  # each row exactly once
    assert _quarantined_bad_lines(data) == 1

    # And once more: nothing changes.
    again = cli(data, "data", "ingest", str(files["b"]), str(files["c"]), "--no-progress")
    assert again.returncode == 0 and again.stdout.count("skipped, already in the store") == 2
    assert _same(_loaded(data), after) and _quarantined_bad_lines(data) == 1


# An ingest of rows after the store's last event: the snapshot gets a new segment beside the
# previous generation's, which are hard-linked after it is written.
APPEND_STAGES = [
    ("snapshot", 0),  # the new suppressions segment about to be written
    ("linking", 0),  # every new file written, the previous segments not yet linked
    ("publishing", 0),
]


@pytest.mark.parametrize(("stage", "done"), APPEND_STAGES, ids=[f"{s}-{d}" for s, d in APPEND_STAGES])
def test_an_appending_ingest_killed_at_each_stage(tmp_path: Path, files: dict[str, Path], stage: str, done: int) -> None:
    later = tmp_path / "later.ndjson"
    later.write_text("".join(json.dumps(row) + "\n" for row in suppression_rows(30, 20, 2, "later")))
    data = tmp_path / "data"
    _ingest(data, files["a"], files["c"])
    before = _loaded(data)
    reference = tmp_path / "reference"
    _ingest(reference, files["a"], files["c"])
    _ingest(reference, later)
    after = _loaded(reference)
    segments = snapshot_reading.read_meta(snapshot.snapshot_dir(reference, 2))["segments"]
    assert segments == {"suppressions": [snapshot.segment_name("suppressions", 1), snapshot.segment_name("suppressions", 2)],
                        "keyword_changes": [snapshot.segment_name("keyword_changes", 1)]}  # appended, linked

    process = _start_paused(data, stage, done, tmp_path / "marker", later)
    try:
        assert _same(_loaded(data), before)
        if stage == "linking":
            staged = snapshot.staged_snapshot_dir(data, 2)
            assert (staged / snapshot.segment_name("suppressions", 2)).is_file()
            assert not (staged / snapshot.segment_name("suppressions", 1)).exists()
    finally:
        kill(process)
    assert _same(_loaded(data), before) and layout.read_generation(data) == 1
    rerun = cli(data, "data", "ingest", str(later), "--no-progress")
    assert rerun.returncode == 0, rerun.stderr
    assert "removed the leftovers of an unfinished ingest" in rerun.stderr
    assert list(layout.staging_dir(data).iterdir()) == []
    assert set(snapshot.existing(data)) == {2}
    assert snapshot_reading.read_meta(snapshot.snapshot_dir(data, 2))["segments"] == segments
    assert _same(_loaded(data), after)


def test_the_reported_crash_state_is_invisible_and_swept(
    tmp_path: Path, files: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's store: files named for generation 3 while GENERATION says 2, and 89 staged files
    (left by the writer before this change, which kept no manifest)."""
    data = tmp_path / "data"
    _ingest(data, files["a"])
    _ingest(data, files["b"])
    published = _loaded(data)
    landed = sorted(layout.table_dir(data, schema.SUPPRESSIONS).glob("date=*/part-g00000002-*.parquet"))
    for i, path in enumerate(landed[:2]):
        shutil.copy(path, path.with_name(layout.partition_file_name(3, f"{i:032x}")))
    staging = layout.staging_dir(data)
    for i in range(89):
        shutil.copy(landed[i % len(landed)], staging / f"suppressions-2025-05-0{1 + i % 9}-{i:032x}.parquet")

    assert layout.read_generation(data) == 2
    assert _same(_loaded(data), published)  # a new worker does not load generation 3's two files

    with caplog.at_level(logging.WARNING, logger="service.store.writer"):
        report = _ingest(data, files["c"])
    assert [r.getMessage() for r in caplog.records] == [
        f"removed the leftovers of an unfinished ingest in {data}: generation 3 (never published): "
        "2 partition files, 0 quarantine files, 0 manifests; 89 staged files in .staging"
    ]
    assert report.swept is not None and report.swept.partitions == 2
    assert report.generation == 3 and list(staging.iterdir()) == []
    reference = tmp_path / "reference"
    for path in files.values():
        _ingest(reference, path)
    assert _same(_loaded(data), _loaded(reference))


def test_the_web_process_sweeps_at_start(tmp_path: Path, files: dict[str, Path]) -> None:
    data = tmp_path / "data"
    _ingest(data, files["a"])
    leftover = layout.partition_dir(data, schema.SUPPRESSIONS, "2025-05-01") / layout.partition_file_name(2, "f" * 32)
    shutil.copy(next(layout.table_dir(data, schema.SUPPRESSIONS).glob("date=*/*.parquet")), leftover)
    (layout.staging_dir(data) / "keyword_changes-2025-05-01-0123.parquet").write_bytes(b"half a file")
    started = subprocess.run([sys.executable, "-c", "import service.wsgi"], cwd=ROOT, env=service_env(data),
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert (
        "removed the leftovers of an unfinished ingest in " + str(data) + ": generation 2 (never published): "
        "1 partition file, 0 quarantine files, 0 manifests; 1 staged file in .staging"
    ) in started.stderr
    assert not leftover.exists() and list(layout.staging_dir(data).iterdir()) == []


def test_files_beyond_the_next_generation_are_never_swept(tmp_path: Path, files: dict[str, Path]) -> None:
    """GENERATION lost or set back by hand: its published data must not be taken for leftovers."""
    data = tmp_path / "data"
    _ingest(data, files["a"])
    _ingest(data, files["b"])
    (data / layout.GENERATION_FILE).write_text("0\n")
    kept = sorted(data.rglob("part-*.parquet"))
    with pytest.raises(leftovers.StoreInconsistent, match="says 0, but the store holds files of generation 1, 2"):
        leftovers.sweep(data)
    refused = cli(data, "data", "ingest", str(files["c"]), "--no-progress")
    assert refused.returncode == 1
    assert "Nothing was removed; restore GENERATION" in refused.stderr and "nothing was ingested" in refused.stderr
    assert sorted(data.rglob("part-*.parquet")) == kept
    assert leftovers.sweep_if_idle(data) is None  # the web process logs it and serves what GENERATION says


def test_an_ingest_waits_for_the_one_in_progress(tmp_path: Path, files: dict[str, Path]) -> None:
    data = tmp_path / "data"
    process = _start_paused(data, "staging", 1, tmp_path / "marker", files["b"])
    try:
        second = subprocess.Popen(
            [sys.executable, "-m", "service", "data", "ingest", str(files["c"]), "--no-progress"],
            cwd=ROOT, env=service_env(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(4)  # time enough to start and to land a 30-row file, were it not waiting
        assert second.poll() is None  # waiting, not landing beside the first
    finally:
        kill(process)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert "another process is writing to" in err
    assert "removed the leftovers of an unfinished ingest" in err  # the killed one's staged file
    assert "landed, data generation 1." in out
    assert list(layout.staging_dir(data).iterdir()) == []
