"""Events and helpers for the collector's tests (tests/collector/): events in the contract's raw
form, bodies, the collector app's test client, and landing rounds on a data directory."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from falcon import testing

from service.accounts import AccountStore
from service.api.windows import floor_hour
from service.collector import log as event_log
from service.collector.app import create_collector_app
from service.collector.events import check_body
from service.collector.index import LandedIndex
from service.collector.lander import land_once
from service.settings import Settings
from service.store import counting, schema
from service.store.target import ParquetTarget

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
SECRET = "collector-test-secret"


def ts(hours_ago: float = 1.0) -> str:
    return (NOW - dt.timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def suppression(event_id: str | None = "s1", **fields: Any) -> dict[str, Any]:
    event = {"event_id": event_id, "type": "suppression", "ts": ts(), "user_id": "user-1", "keyword": "Crypto",
             "domain": "old.reddit.com", "platform": "chrome", "page_context": "feed", "country": "US",
             "region": "US-CA", "county": "06037", "suppressions": 2}
    event.update(fields)
    return {k: v for k, v in event.items() if not (k == "event_id" and v is None)}


def keyword_change(event_id: str = "k1", **fields: Any) -> dict[str, Any]:
    event = {"event_id": event_id, "type": "keyword_change", "ts": ts(), "user_id": "user-1", "keyword": "crypto",
             "action": "add", "platform": "firefox", "country": "DE"}
    event.update(fields)
    return event


def ndjson(events: Iterable[dict[str, Any] | str]) -> bytes:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events).encode()


def many(count: int, prefix: str = "e", start: int = 0) -> list[dict[str, Any]]:
    return [suppression(f"{prefix}{i}", user_id=f"u{i % 50}", keyword=f"kw{i % 7}")
            for i in range(start, start + count)]


def make_client(settings: Settings, accounts: AccountStore) -> testing.TestClient:
    return testing.TestClient(create_collector_app(settings, accounts=accounts))


def post(client: testing.TestClient, key: str | None, body: bytes, **headers: str) -> testing.Result:
    sent = {"Content-Type": "application/x-ndjson", **headers}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return client.simulate_post("/api/v1/events", body=body, headers=sent)


def append(data_dir: Path, events: list[dict]) -> event_log.Batch:
    checked = check_body(ndjson(events), now=NOW, secret=SECRET, late_hours=48)
    return event_log.append(data_dir, event_log.batch_frame(checked.frames))


def land(data_dir: Path):
    target = ParquetTarget(data_dir)
    with target.lock():
        target.sweep()
        index = LandedIndex(data_dir).load()
    return land_once(data_dir, target, index, now=NOW)


def stored_ids(data_dir: Path) -> dict[str, int]:
    """Events in the store per table (the published generation)."""
    return counting.count(Settings(data_dir=data_dir), schema.TABLES)


HOUR = floor_hour(NOW)


def at_hour_start(count: int, prefix: str) -> list[dict]:
    """Events at the start of the running hour (never in the future, whatever the minute)."""
    start = HOUR.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [suppression(f"{prefix}{i}", ts=start, user_id=f"u{i}") for i in range(count)]


def land_at(data_dir: Path, now: dt.datetime, **options):
    target = ParquetTarget(data_dir)
    with target.lock():
        target.sweep()
        index = LandedIndex(data_dir).load()
    return land_once(data_dir, target, index, now=now, **options)


def run_keys(argv: list[str], settings: Settings, capsys) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `python -m service keys ...` (the command's own parser)."""
    import argparse

    from service.cli import keys as keys_cli

    parser = argparse.ArgumentParser(prog="python -m service")
    keys_cli.register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
        code = args.func(args, settings)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def create_key(settings: Settings, capsys, *options: str) -> str:
    """`keys create OPTIONS`: the key it prints last."""
    code, out, err = run_keys(["keys", "create", *options], settings, capsys)
    assert (code, err) == (0, ""), err
    return out.splitlines()[-1]
