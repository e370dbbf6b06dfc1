"""`python -m service data clickhouse-init` on a store made by an earlier version: the tables are
brought to the current column types and codecs, every row stays (same count and content hash),
the answers stay the same, ingest goes on where it was (what was landed is still known), and
running it again changes nothing.

Processes of their own for everything that opens the chdb directory (tests/support/
clickhouse_probe.py, clickhouse_answers.py): a chdb directory opens in one process at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.crashed_ingest import write_files
from tests.support.processes import ROOT, service_env

# The tables as the first version of the ClickHouse engine created them (no codecs).
EARLIER = [
    """CREATE TABLE IF NOT EXISTS signals.suppressions (
        ts DateTime64(6, 'UTC'), user_id UInt64, keyword String, domain LowCardinality(String),
        platform LowCardinality(String), page_context LowCardinality(String), country LowCardinality(String),
        region LowCardinality(Nullable(String)), county LowCardinality(Nullable(String)),
        city LowCardinality(Nullable(String)), suppressions Int32, generation UInt32
    ) ENGINE = MergeTree PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, domain, platform, country, ts)""",
    """CREATE TABLE IF NOT EXISTS signals.keyword_changes (
        ts DateTime64(6, 'UTC'), user_id UInt64, keyword String, action LowCardinality(String),
        platform LowCardinality(String), country LowCardinality(String), generation UInt32
    ) ENGINE = MergeTree PARTITION BY toYYYYMM(ts) ORDER BY (toDate(ts), keyword, ts)""",
    """CREATE TABLE IF NOT EXISTS signals.landings (
        generation UInt32, published UInt8, landed_at String, sources String, other_files Array(String)
    ) ENGINE = MergeTree ORDER BY (generation, published)""",
]

_RUN_STATEMENTS = """
import json, sys
from service.clickhouse.connection import ClickHouse
ch = ClickHouse(sys.argv[1])
for statement in json.loads(sys.argv[2]):
    ch.command(statement)
print(json.dumps(ch.frame("SELECT table, name, compression_codec AS codec FROM system.columns "
                          "WHERE database = currentDatabase() AND compression_codec != ''").rows()))
ch.close()
"""


def _python(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def _cli(data: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=180, env=service_env(data, SIGNALS_ENGINE="clickhouse", SIGNALS_CLICKHOUSE_URL=url))


def _state(url: str) -> tuple[dict, dict]:
    probe = json.loads(_python("-m", "tests.support.clickhouse_probe", url).stdout.strip().splitlines()[-1])
    answers = json.loads(_python("-m", "tests.support.clickhouse_answers", url).stdout.strip().splitlines()[-1])
    return probe, answers


def _codecs(url: str, statements: list[str] = ()) -> set[tuple[str, str, str]]:
    done = _python("-c", _RUN_STATEMENTS, url, json.dumps(list(statements)))
    return {tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])}


def test_clickhouse_init_migrates_an_earlier_store_without_losing_rows(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    files = write_files(tmp_path / "files")
    data, url = tmp_path / "data", f"chdb://{tmp_path / 'chdb'}"
    assert _codecs(url, EARLIER) == set()  # the earlier schema: no codecs
    for call in ([files["a"]], [files["b"], files["c"]]):
        landed = _cli(data, url, "data", "ingest", *map(str, call), "--no-progress")
        assert landed.returncode == 0, landed.stderr
    before, answers_before = _state(url)
    assert before["generation"] == 2 and before["tables"]["suppressions"][0] == 160
    assert json.loads(answers_before["exact top_keywords"])  # answers with rows in them

    migrated = _cli(data, url, "data", "clickhouse-init")
    assert migrated.returncode == 0, migrated.stderr
    assert "migrated: ALTER TABLE `signals`.suppressions MODIFY COLUMN suppressions Int32 CODEC(T64, LZ4)" \
        in migrated.stdout, migrated.stdout
    assert migrated.stdout.count("migrated: ") == 3  # suppressions and the two generation columns
    assert _codecs(url) == {("suppressions", "suppressions", "CODEC(T64, LZ4)"),
                            ("suppressions", "generation", "CODEC(T64, LZ4)"),
                            ("keyword_changes", "generation", "CODEC(T64, LZ4)")}
    after, answers_after = _state(url)
    assert after == before
    assert answers_after == answers_before

    again = _cli(data, url, "data", "clickhouse-init")  # nothing left to do
    assert again.returncode == 0 and "migrated" not in again.stdout and "ClickHouse tables ready" in again.stdout
    skipped = _cli(data, url, "data", "ingest", str(files["a"]), "--no-progress")  # landings kept
    assert skipped.returncode == 0 and "already in the store" in skipped.stdout, skipped.stdout
    assert _state(url) == (before, answers_before)
