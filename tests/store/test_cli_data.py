"""service.cli.data: the `data demo` and `data ingest` commands, through a parser built like
`service/__main__.py` builds it."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

import service.cli.data
from service.settings import Settings
from service.store import layout, schema


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(prog="python -m service")
    sub = parser.add_subparsers(dest="command", required=True)
    service.cli.data.register(sub)
    args = parser.parse_args(argv)
    return args.func(args, settings)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", secret="cli-test-secret")


def parquet_files(data_dir: Path, table: str) -> list[Path]:
    return sorted(layout.table_dir(data_dir, table).glob("date=*/*.parquet"))


def recent_ts(hours_ago: float = 1) -> str:
    moment = dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours_ago)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_demo_then_refuse_then_replace(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    demo_args = ["data", "demo", "--events", "3000", "--days", "3", "--seed", "5", "--no-progress"]
    assert main(demo_args, settings) == 0
    out = capsys.readouterr().out
    assert "3,000 suppressions" in out and "210 keyword changes" in out and "data generation 1" in out
    assert "Injected bursts:" in out and "trending window 24h" in out
    first = parquet_files(settings.data_dir, schema.SUPPRESSIONS)
    assert first

    assert main(demo_args, settings) == 1
    captured = capsys.readouterr()
    assert "already holds event data" in captured.err and "--replace" in captured.err
    assert captured.out == ""
    assert parquet_files(settings.data_dir, schema.SUPPRESSIONS) == first

    assert main([*demo_args, "--replace"], settings) == 0
    assert "data generation 2" in capsys.readouterr().out
    assert not any(path.exists() for path in first)


def test_demo_ends_at_the_start_of_the_current_hour(settings: Settings) -> None:
    before = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    assert main(["data", "demo", "--events", "500", "--days", "1", "--no-progress"], settings) == 0
    after = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    frame = pl.concat([pl.read_parquet(p) for p in parquet_files(settings.data_dir, schema.SUPPRESSIONS)])
    assert frame["ts"].max() < after
    assert frame["ts"].min() >= before - dt.timedelta(days=1)


def test_demo_progress_bar_on_stderr(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "demo", "--events", "500", "--days", "1"], settings) == 0
    captured = capsys.readouterr()
    assert "demo" in captured.err and "%" in captured.err
    assert "%" not in captured.out


def test_demo_in_pieces_with_a_line_per_piece(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["data", "demo", "--events", "4000", "--days", "40", "--piece-events", "1500"]
    assert main(argv, settings) == 0
    captured = capsys.readouterr()
    pieces = [line for line in captured.err.splitlines() if line.startswith("demo: piece ")]
    assert len(pieces) >= 3 and "landed as generation 1 " in pieces[0]
    assert "4,000 suppressions" in captured.out and f"data generation {len(pieces)} ({len(pieces)} pieces" in captured.out
    assert main([*argv, "--replace", "--no-progress"], settings) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and f"data generation {2 * len(pieces)} " in captured.out


@pytest.mark.parametrize(
    "argv",
    [
        ["data"],
        ["data", "demo", "--events", "0"],
        ["data", "demo", "--piece-events", "0"],
        ["data", "demo", "--events", "many"],
        ["data", "demo", "--days", "-1"],
        ["data", "ingest"],
        ["data", "ingest", "x.ndjson", "--table", "users"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv, settings)
    assert caught.value.code == 2
    assert capsys.readouterr().err


def test_ingest_missing_file_exits_2_and_ingests_nothing(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.ndjson"
    good.write_text(json.dumps(change_row()) + "\n")
    assert main(["data", "ingest", str(good), str(tmp_path / "missing.ndjson")], settings) == 2
    err = capsys.readouterr().err
    assert "missing.ndjson: file not found" in err and "nothing was ingested" in err
    assert layout.read_generation(settings.data_dir) == 0


def change_row(**changes: object) -> dict[str, object]:
    row = {"ts": recent_ts(), "user_id": "u1", "keyword": "Spoilers", "action": "add", "platform": "ios",
           "country": "US"}  # fmt: skip
    row.update(changes)
    return row


def test_ingest_reports_accepted_and_quarantined_rows(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "changes.ndjson"
    source.write_text("\n".join([json.dumps(change_row()), "{oops", json.dumps(change_row(action="mute"))]) + "\n")
    csv_source = tmp_path / "more.csv"
    csv_source.write_text(f"ts,user_id,keyword,action,platform,country\n{recent_ts(2)},u2,gore,remove,chrome,GB\n")

    assert main(["data", "ingest", str(source), str(csv_source), "--no-progress"], settings) == 0
    out = capsys.readouterr().out
    assert f"{source}: 1 row accepted into keyword_changes, 2 rejected" in out
    assert f"{csv_source}: 1 row accepted into keyword_changes" in out
    assert "Total: 2 accepted, 2 rejected, 0 files refused; landed, data generation 1." in out
    assert len(list(layout.quarantine_dir(settings.data_dir).glob("*-changes.ndjson"))) == 1


def test_ingest_with_a_refused_file_exits_1(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.ndjson"
    good.write_text(json.dumps(change_row()) + "\n")
    refused = tmp_path / "refused.ndjson"
    refused.write_text(json.dumps(change_row(note="extra column")) + "\n")

    assert main(["data", "ingest", str(good), str(refused), "--no-progress"], settings) == 1
    captured = capsys.readouterr()
    assert f"error: {refused}: unknown column for table keyword_changes: 'note'" in captured.err
    assert "1 accepted" in captured.out and "1 file refused" in captured.out
    assert len(parquet_files(settings.data_dir, schema.KEYWORD_CHANGES)) == 1  # the good file still landed


def test_ingest_table_option(settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "changes.ndjson"
    source.write_text(json.dumps(change_row()) + "\n")
    assert main(["data", "ingest", str(source), "--table", "suppressions", "--no-progress"], settings) == 1
    assert "missing required columns" in capsys.readouterr().err
    assert main(["data", "ingest", str(source), "--table", "keyword_changes", "--no-progress"], settings) == 0


def test_ingest_again_skips_and_force_loads(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "changes.ndjson"
    source.write_text(json.dumps(change_row()) + "\n")
    assert main(["data", "ingest", str(source), "--no-progress"], settings) == 0
    capsys.readouterr()
    assert main(["data", "ingest", str(source), "--no-progress"], settings) == 0
    out = capsys.readouterr().out
    assert f"{source}: skipped, already in the store: the same content landed in generation 1 (" in out
    assert "use --force to load it again" in out
    assert "Total: 0 accepted, 0 rejected, 0 files refused, 1 file skipped; nothing landed, data generation 1." in out
    assert main(["data", "ingest", str(source), "--force", "--no-progress"], settings) == 0
    assert "landed, data generation 2." in capsys.readouterr().out
    assert len(parquet_files(settings.data_dir, schema.KEYWORD_CHANGES)) == 2


def ingest_at(now: dt.datetime, times: list[str], settings: Settings, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """`data ingest` of one keyword change at each of `times` (a user each) with the clock at
    `now`; its standard output."""
    from service.clock import FixedClock

    monkeypatch.setattr(service.cli.data, "SystemClock", lambda: FixedClock(now))
    source = tmp_path / "changes.ndjson"
    source.write_text("\n".join(json.dumps(change_row(ts=ts, user_id=f"u{i}")) for i, ts in enumerate(times)) + "\n")
    assert main(["data", "ingest", str(source), "--no-progress"], settings) == 0
    return capsys.readouterr().out


def test_ingest_says_when_rows_of_the_current_hour_are_counted(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Answers cover whole hours up to as_of (the start of the current hour): rows of the current
    # hour land now but are counted from the hour's end, and the command says so.
    out = ingest_at(dt.datetime(2026, 11, 27, 3, 20, tzinfo=dt.UTC),
                    ["2026-11-27T03:05:00Z", "2026-11-27T03:19:59Z", "2026-11-27T02:59:59Z"],
                    settings, tmp_path, monkeypatch, capsys)
    assert "Note: 2 rows fall in the current hour; answers cover whole hours only, so they are counted " \
           "from 2026-11-27T04:00:00Z. Rows of earlier hours are served once the workers follow data " \
           "generation 1 (within seconds)." in out


def test_ingest_of_earlier_hours_only_adds_no_note(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    at = dt.datetime(2026, 11, 27, 3, 0, tzinfo=dt.UTC)  # the first instant of the hour
    out = ingest_at(at, ["2026-11-27T02:59:59Z"], settings, tmp_path, monkeypatch, capsys)
    assert "landed, data generation 1." in out and "Note:" not in out
    # One row of the current hour: the sentence says "it".
    out = ingest_at(at, ["2026-11-27T03:00:00Z"], settings, tmp_path, monkeypatch, capsys)
    assert "Note: 1 row falls in the current hour; answers cover whole hours only, so it is counted from " \
           "2026-11-27T04:00:00Z. Rows of earlier" in out


def test_ingest_names_the_later_hour_of_a_row_ahead_of_the_clock(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A row may be up to 5 minutes ahead of the clock (validate.MAX_FUTURE_SKEW): at 03:58 one at
    # 04:02 is accepted, and it is counted an hour after the current hour's rows.
    out = ingest_at(dt.datetime(2026, 11, 27, 3, 58, tzinfo=dt.UTC), ["2026-11-27T03:30:00Z", "2026-11-27T04:02:00Z"],
                    settings, tmp_path, monkeypatch, capsys)
    assert "Note: 2 rows fall in the current hour or later; answers cover whole hours only, so they are " \
           "counted from 2026-11-27T04:00:00Z (the latest, at 2026-11-27T04:02:00Z, from 2026-11-27T05:00:00Z)." in out
