"""The files an ingest is killed in the middle of (the Parquet store's and ClickHouse's crash
tests), and the kill itself."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
from pathlib import Path

BAD_LINE = 61  # B's line with an unknown platform: quarantined, once


def suppression_rows(n: int, first_day: int, days: int, user: str) -> list[dict[str, object]]:
    return [
        {
            "ts": (dt.datetime(2025, 5, first_day + i % days, 8, tzinfo=dt.UTC) + dt.timedelta(minutes=i)).isoformat(),
            "user_id": f"{user}-{i % 7}",
            "keyword": ["spoilers", "crypto", "elon musk"][i % 3],
            "domain": ["reddit.com", "x.com"][i % 2],
            "platform": "chrome",
            "page_context": "feed",
            "country": "US",
            "region": "US-CA",
            "suppressions": 1 + i % 4,
        }
        for i in range(n)
    ]


def write_files(tmp_path: Path) -> dict[str, Path]:
    """A: the store's old data. B (NDJSON, six days, one bad line) and C (CSV, keyword changes,
    two days): the ingest that gets killed. Days of A and B overlap."""
    a = tmp_path / "a.ndjson"
    a.write_text("".join(json.dumps(row) + "\n" for row in suppression_rows(40, 1, 3, "old")))
    rows = suppression_rows(120, 2, 6, "new")
    rows.insert(BAD_LINE - 1, {**rows[0], "platform": "netscape"})
    b = tmp_path / "b.ndjson"
    b.write_text("".join(json.dumps(row) + "\n" for row in rows))
    c = tmp_path / "c.csv"
    c.write_text("ts,user_id,keyword,action,platform,country\n" + "".join(
        f"2025-05-0{1 + i % 2}T09:{i:02d}:00Z,changer-{i % 5},gore,add,ios,GB\n" for i in range(30)
    ))  # fmt: skip
    return {"a": a, "b": b, "c": c}


def kill(process: subprocess.Popen) -> None:
    """SIGKILL: no handler, no cleanup, as a crash."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
