"""service.store.ingest and service.store.writer: formats, quarantine, atomic landing."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

from service.store import ingest, layout, schema, user_ids, writer
from tests.support import event_rows
from tests.support.landing import write_events

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
SECRET = "test-secret"


def suppression(**changes: Any) -> dict[str, Any]:
    """A row with text ingest normalises (keyword case, the domain's www.)."""
    return event_rows.suppression(**{"keyword": "Spoilers", "domain": "www.reddit.com", "suppressions": 2, **changes})


def change(**changes: Any) -> dict[str, Any]:
    return event_rows.change(**{"ts": "2025-06-01T09:00:00Z", "user_id": "install-9", "keyword": "AI Art",
                          "platform": "ios", "country": "GB", **changes})


def write_ndjson(path: Path, lines: list[str | dict[str, Any]]) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def run(data_dir: Path, paths: list[Path], **kwargs: Any) -> ingest.IngestReport:
    return ingest.ingest_files(data_dir, paths, secret=SECRET, now=NOW, progress=False, **kwargs)


def stored(data_dir: Path, table: str) -> pl.DataFrame:
    files = sorted(layout.table_dir(data_dir, table).glob("date=*/*.parquet"))
    if not files:
        return pl.DataFrame(schema=schema.SCHEMAS[table])
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files])


def visible_files(data_dir: Path) -> list[Path]:
    return [p for table in schema.TABLES for p in layout.table_dir(data_dir, table).rglob("*") if p.is_file()]


def quarantine_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------------------------------------
# Formats and row-level recovery


def test_ndjson_with_broken_and_bad_lines_keeps_the_good_rows(tmp_path: Path) -> None:
    source = write_ndjson(
        tmp_path / "events.ndjson",
        [
            suppression(),
            '{"ts": "2025-06-01T10:00:00Z", "user_id": ',  # truncated line
            suppression(platform="netscape"),
            "",  # blank lines are skipped but still counted
            "[1, 2]",
            suppression(user_id="install-2", suppressions=4),
        ],
    )
    data = tmp_path / "data"
    report = run(data, [source])

    (file,) = report.files
    assert (file.table, file.accepted, file.rejected, file.error) == (schema.SUPPRESSIONS, 2, 3, None)
    assert report.generation == 1 and layout.read_generation(data) == 1
    rows = stored(data, schema.SUPPRESSIONS)
    assert rows["keyword"].to_list() == ["spoilers", "spoilers"]
    assert rows["domain"].to_list() == ["reddit.com", "reddit.com"]
    assert sorted(rows["suppressions"].to_list()) == [2, 4]

    assert file.quarantine is not None and file.quarantine.parent == layout.quarantine_dir(data)
    assert re.fullmatch(r"20250601T120000Z-events\.ndjson", file.quarantine.name)
    lines = quarantine_lines(file.quarantine)
    assert [line["row_number"] for line in lines] == [2, 3, 5]
    assert lines[0]["reason"].startswith("invalid JSON")
    assert lines[0]["row"] == '{"ts": "2025-06-01T10:00:00Z", "user_id": '  # the original text
    assert lines[1]["reason"].startswith("platform: 'netscape' is not one of")
    assert lines[1]["row"]["platform"] == "netscape"  # the original object, not re-quoted
    assert lines[2] == {"row_number": 5, "reason": "not a JSON object but a list", "row": [1, 2]}


def test_ndjson_lines_with_conflicting_types_still_load(tmp_path: Path) -> None:
    source = write_ndjson(
        tmp_path / "mixed.jsonl",
        [suppression(county="06037"), suppression(county=6037, suppressions=True), suppression(city=5368361)],
    )
    report = run(tmp_path / "data", [source])
    assert (report.accepted, report.rejected) == (2, 1)
    (line,) = quarantine_lines(report.files[0].quarantine)
    assert line["row_number"] == 2


def test_csv_plain_file(tmp_path: Path) -> None:
    rows = [suppression(), suppression(keyword="Crypto", country="GB", region=None, county=None, city="2643743")]
    source = tmp_path / "events.csv"
    pl.DataFrame(rows).write_csv(source)
    report = run(tmp_path / "data", [source])
    assert (report.accepted, report.rejected) == (2, 0)
    got = stored(tmp_path / "data", schema.SUPPRESSIONS).sort("keyword")
    assert got.select("keyword", "country", "region", "county", "city").rows() == [
        ("crypto", "GB", None, None, "2643743"),
        ("spoilers", "US", "US-CA", "06037", "5368361"),
    ]


def test_csv_with_quoting_short_records_and_bad_bytes(tmp_path: Path) -> None:
    header = "ts,user_id,keyword,action,platform,country"
    lines = [
        header,
        '2025-06-01T09:00:00Z,u1,"guns, violence",add,chrome,US',
        "2025-06-01T09:00:00Z,u2,spoilers",  # short record: refused, not padded with nulls
        "",
        "2025-06-01T09:00:00Z,u3,caf\xe9,add,chrome,US",  # Latin-1 byte, not UTF-8
        '2025-06-01T09:00:00Z,u4,"multi\nline",edit,ios,FR',
        "2025-06-01T09:00:00Z,u5,spoilers,add,chrome,US,extra",
    ]
    source = tmp_path / "changes.csv"
    source.write_bytes("\n".join(lines).encode("latin-1"))
    report = run(tmp_path / "data", [source])
    (file,) = report.files
    assert (file.table, file.accepted, file.rejected) == (schema.KEYWORD_CHANGES, 2, 3)
    got = stored(tmp_path / "data", schema.KEYWORD_CHANGES).sort("user_id")
    assert sorted(got["keyword"].to_list()) == ["guns, violence", "multi line"]
    reasons = {line["row_number"]: line["reason"] for line in quarantine_lines(file.quarantine)}
    assert reasons == {
        2: "expected 6 fields, found 3",
        3: "record is not valid UTF-8",
        5: "expected 6 fields, found 7",
    }


def test_csv_with_bom_and_crlf(tmp_path: Path) -> None:
    source = tmp_path / "excel.csv"
    text = "ts,user_id,keyword,action,platform,country\r\n2025-06-01T09:00:00Z,u1,spoilers,add,chrome,US\r\n"
    source.write_bytes(b"\xef\xbb\xbf" + text.encode())
    report = run(tmp_path / "data", [source])
    assert (report.accepted, report.rejected, report.failed) == (1, 0, ())


def test_parquet_input_with_native_types(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        [
            suppression(ts=dt.datetime(2025, 6, 1, 10, 30), county=6037, city=5368361),
            suppression(ts=dt.datetime(2025, 5, 31, 23, 59), county=6037, city=5368361, suppressions=0),
        ]
    )
    source = tmp_path / "events.parquet"
    frame.write_parquet(source)
    report = run(tmp_path / "data", [source])
    assert (report.accepted, report.rejected) == (1, 1)
    (line,) = quarantine_lines(report.files[0].quarantine)
    assert line["row_number"] == 2 and line["reason"] == "suppressions: 0 is less than 1"
    assert line["row"]["county"] == 6037


def test_table_override(tmp_path: Path) -> None:
    source = write_ndjson(tmp_path / "rows.ndjson", [change()])
    report = run(tmp_path / "data", [source], table=schema.SUPPRESSIONS)
    (file,) = report.files
    assert file.table == schema.SUPPRESSIONS and file.accepted == 0
    assert "missing required columns: domain, page_context, suppressions" in file.error
    assert "unknown column for table suppressions: 'action'" in file.error


# ---------------------------------------------------------------------------------------------
# Files that cannot be used do not stop the others


def test_refused_files_do_not_stop_the_others(tmp_path: Path) -> None:
    good = write_ndjson(tmp_path / "good.ndjson", [suppression()])
    changes = write_ndjson(tmp_path / "changes.ndjson", [change()])
    unknown_column = write_ndjson(tmp_path / "typo.ndjson", [suppression(regoin="US-CA")])
    no_table = write_ndjson(tmp_path / "which.ndjson", [{"ts": "2025-06-01T09:00:00Z", "keyword": "x"}])
    broken_parquet = tmp_path / "broken.parquet"
    broken_parquet.write_bytes(b"PAR1 this is not parquet")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    missing = tmp_path / "missing.ndjson"
    data = tmp_path / "data"

    report = run(data, [good, unknown_column, no_table, broken_parquet, text, missing, changes])

    errors = {f.path.name: f.error for f in report.files}
    assert errors["good.ndjson"] is None and errors["changes.ndjson"] is None
    assert "did you mean 'region'?" in errors["typo.ndjson"]
    assert "cannot tell the table" in errors["which.ndjson"]
    assert errors["broken.parquet"].startswith("unreadable Parquet file")
    assert errors["notes.txt"].startswith("unsupported file type '.txt'")
    assert errors["missing.ndjson"] == "file not found"
    assert len(report.failed) == 5
    # Both tables landed in one call with one generation bump.
    assert stored(data, schema.SUPPRESSIONS).height == 1
    assert stored(data, schema.KEYWORD_CHANGES).height == 1
    assert report.generation == 1 and len(report.written) == 2


def test_nothing_good_means_no_bump(tmp_path: Path) -> None:
    source = write_ndjson(tmp_path / "bad.ndjson", [suppression(platform="netscape")])
    empty = tmp_path / "empty.ndjson"
    empty.write_text("")
    report = run(tmp_path / "data", [source, empty])
    assert report.generation == 0 and report.written == ()
    assert layout.read_generation(tmp_path / "data") == 0
    assert report.files[1].accepted == report.files[1].rejected == 0 and report.files[1].error is None


def test_quarantine_names_do_not_collide(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_ndjson(tmp_path / "a" / "events.ndjson", [suppression(platform="x")])
    second = write_ndjson(tmp_path / "b" / "events.ndjson", [suppression(platform="y")])
    report = run(tmp_path / "data", [first, second])
    names = [f.quarantine.name for f in report.files]
    assert names == ["20250601T120000Z-events.ndjson", "20250601T120000Z-events-2.ndjson"]
    again = run(tmp_path / "data", [first])
    assert again.files[0].quarantine.name == "20250601T120000Z-events-3.ndjson"


# ---------------------------------------------------------------------------------------------
# What lands, and how


def test_partitions_by_utc_day_sorted_and_hashed(tmp_path: Path) -> None:
    source = write_ndjson(
        tmp_path / "days.ndjson",
        [
            suppression(ts="2025-06-01T01:30:00+02:00", user_id="raw-id-A"),  # 2025-05-31 23:30 UTC
            suppression(ts="2025-06-01T08:00:00Z", user_id="raw-id-B"),
            suppression(ts="2025-06-01T07:00:00Z", user_id="raw-id-A"),
        ],
    )
    data = tmp_path / "data"
    report = run(data, [source])
    days = sorted(p.parent.name for p in report.written)
    assert days == ["date=2025-05-31", "date=2025-06-01"]
    assert all(re.fullmatch(r"part-g00000001-[0-9a-f]{32}\.parquet", p.name) for p in report.written)
    june = pl.read_parquet(layout.partition_dir(data, schema.SUPPRESSIONS, "2025-06-01"))
    assert june["ts"].is_sorted()
    assert dict(june.schema) == schema.SUPPRESSIONS_SCHEMA
    expected = user_ids.hash_user_ids(pl.Series(["raw-id-A", "raw-id-B"]), SECRET).to_list()
    assert sorted(june["user_id"].to_list()) == sorted(expected)
    for path in report.written:  # the raw ids are nowhere in the stored bytes
        assert b"raw-id-" not in path.read_bytes()
    metadata = pq.ParquetFile(report.written[0]).metadata
    column = metadata.row_group(0).column(0)
    assert column.compression == "ZSTD" and column.statistics is not None


def test_each_ingest_bumps_the_generation_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = write_ndjson(tmp_path / "one.ndjson", [suppression(), suppression(ts="2025-05-20T00:00:00Z")])
    second = write_ndjson(tmp_path / "two.ndjson", [change()])
    assert run(data, [first, second]).generation == 1
    assert run(data, [first], force=True).generation == 2
    assert stored(data, schema.SUPPRESSIONS).height == 4


def test_failure_while_staging_leaves_nothing_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    days = write_ndjson(
        tmp_path / "days.ndjson", [suppression(ts="2025-05-30T10:00:00Z"), suppression(ts="2025-05-31T10:00:00Z")]
    )
    changes = write_ndjson(tmp_path / "changes.ndjson", [change(), change(action="bogus")])
    real = writer._write_staged
    calls = []

    def failing(frame: pl.DataFrame, path: Path) -> None:
        calls.append(path)
        if len(calls) == 2:
            path.write_bytes(b"half a file")  # a partial write, then the disk fills up
            raise OSError(28, "No space left on device")
        real(frame, path)

    monkeypatch.setattr(writer, "_write_staged", failing)
    with pytest.raises(OSError, match="No space left"):
        run(data, [days, changes])
    assert len(calls) == 2
    assert visible_files(data) == []
    assert list(layout.staging_dir(data).iterdir()) == []
    assert layout.read_generation(data) == 0
    assert not any(layout.quarantine_dir(data).glob("*"))  # the rejected row's file was removed again


def test_failure_while_renaming_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    source = write_ndjson(
        tmp_path / "days.ndjson",
        [suppression(ts="2025-05-29T10:00:00Z"), suppression(ts="2025-05-30T10:00:00Z"), suppression()],
    )
    real = os.replace
    renames = []

    def failing(src: Any, dst: Any) -> None:
        if "part-" in str(dst):
            renames.append(dst)
            if len(renames) == 3:
                raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(writer.os, "replace", failing)
    with pytest.raises(OSError, match="Input/output"):
        run(data, [source])
    assert len(renames) == 3  # two files had landed before the third rename failed
    assert visible_files(data) == []
    assert list(layout.staging_dir(data).iterdir()) == []
    assert layout.read_generation(data) == 0


def test_writer_refuses_frames_not_in_the_stored_schema(tmp_path: Path) -> None:
    frame = pl.DataFrame({"ts": [NOW], "user_id": ["raw"]})
    with pytest.raises(ValueError, match="stored schema"):
        write_events(tmp_path, schema.SUPPRESSIONS, frame)
    assert write_events(tmp_path, schema.SUPPRESSIONS, pl.DataFrame(schema=schema.SUPPRESSIONS_SCHEMA)) == []
    assert layout.read_generation(tmp_path) == 0


def test_progress_bar_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_ndjson(tmp_path / "one.ndjson", [suppression()])
    ingest.ingest_files(tmp_path / "data", [source], secret=SECRET, now=NOW, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ingest" in captured.err and "1/1" in captured.err


def test_a_deeply_nested_ndjson_line_is_quarantined_alone(tmp_path):
    import datetime as _dt
    import json as _json

    from service.store.ingest import ingest_files

    good = {"ts": "2026-03-10T10:00:00Z", "user_id": "u1", "keyword": "snakes", "domain": "reddit.com",
            "platform": "chrome", "page_context": "feed", "country": "US", "suppressions": 2}
    path = tmp_path / "nested.ndjson"
    path.write_text(_json.dumps(good) + "\n" + "[" * 100_000 + "\n")
    report = ingest_files(tmp_path / "data", [path], secret="s",
                          now=_dt.datetime(2026, 3, 10, 12, tzinfo=_dt.UTC), progress=False)
    assert (report.accepted, report.rejected) == (1, 1)


def _mixed_file(tmp_path):
    import json as _json

    good = {"ts": "2026-03-10T10:00:00Z", "user_id": "u1", "keyword": "snakes", "domain": "reddit.com",
            "platform": "chrome", "page_context": "feed", "country": "US", "suppressions": 2}
    path = tmp_path / "mixed.ndjson"
    path.write_text(_json.dumps(good) + "\n" + _json.dumps({**good, "platform": "netscape"}) + "\n")
    return path


def _landed_files(data_dir):
    return [p for p in data_dir.rglob("*") if p.is_file() and p.suffix in (".parquet", ".ndjson")]


@pytest.mark.parametrize("failing", ["quarantine", "landing", "generation"])
def test_a_failure_at_any_step_leaves_nothing_behind(tmp_path, monkeypatch, failing):
    import datetime as _dt

    from service.store import ingest as ingest_module
    from service.store import layout as layout_module
    from service.store import writer as writer_module

    def boom(*args, **kwargs):
        raise OSError("disk full")

    target = {"quarantine": (ingest_module, "_quarantine_text"), "landing": (writer_module, "_write_staged"),
              "generation": (layout_module, "write_generation")}[failing]
    monkeypatch.setattr(*target, boom)
    data_dir = tmp_path / "data"
    with pytest.raises(OSError, match="disk full"):
        ingest_module.ingest_files(data_dir, [_mixed_file(tmp_path)], secret="s",
                                   now=_dt.datetime(2026, 3, 10, 12, tzinfo=_dt.UTC), progress=False)
    assert _landed_files(data_dir) == []
    assert layout_module.read_generation(data_dir) == 0
    assert list(layout_module.staging_dir(data_dir).glob("*")) == []
    assert list(layout_module.generations_dir(data_dir).glob("*")) == []


def test_report_gives_the_newest_landed_event_and_the_rows_of_the_current_hour(tmp_path: Path) -> None:
    # NOW is 12:00 sharp: 12:00:00 is the current hour's first instant, 11:59:59 the last hour's.
    # The rejected row (a platform not in the contract) counts in neither.
    source = write_ndjson(tmp_path / "events.ndjson", [
        suppression(ts="2025-06-01T11:59:59Z"), suppression(ts="2025-06-01T12:00:00Z", user_id="install-2"),
        suppression(ts="2025-06-01T12:01:00Z", platform="netscape"),
    ])
    changes = write_ndjson(tmp_path / "changes.ndjson", [change(ts="2025-06-01T12:00:30Z")])
    data = tmp_path / "data"
    report = run(data, [source, changes])
    assert report.landed and report.rows_in_current_hour == 2
    assert report.newest_event == dt.datetime(2025, 6, 1, 12, 0, 30, tzinfo=dt.UTC)

    again = run(data, [source, changes])  # skipped: nothing landed, so nothing to say
    assert not again.landed and again.newest_event is None and again.rows_in_current_hour == 0


# ---------------------------------------------------------------------------------------------
# Idempotent per file: running an ingest again never lands a row twice


def test_a_file_already_in_the_store_is_skipped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = write_ndjson(tmp_path / "events.ndjson", [suppression(), suppression(platform="netscape")])
    first = run(data, [source])
    again = run(data, [source])
    (file,) = again.files
    assert file.skipped == (
        "already in the store: the same content landed in generation 1 (2025-06-01T12:00:00Z, as events.ndjson); "
        "use --force to load it again"
    )
    assert (file.accepted, file.rejected, file.quarantine, file.error) == (0, 0, None, None)
    assert file.sha256 == first.files[0].sha256
    assert again.generation == 1 and again.written == ()
    assert stored(data, schema.SUPPRESSIONS).height == 1
    assert len(list(layout.quarantine_dir(data).iterdir())) == 1  # not quarantined twice either
    # The same bytes under another name are the same rows.
    copy = tmp_path / "copy.ndjson"
    copy.write_bytes(source.read_bytes())
    assert run(data, [copy]).files[0].skipped is not None
    # On purpose: --force loads it again.
    forced = run(data, [source], force=True)
    assert forced.generation == 2 and forced.files[0].skipped is None
    assert stored(data, schema.SUPPRESSIONS).height == 2


def test_the_same_content_twice_in_one_call_lands_once(tmp_path: Path) -> None:
    one = write_ndjson(tmp_path / "one.ndjson", [suppression()])
    two = tmp_path / "two.ndjson"
    two.write_bytes(one.read_bytes())
    report = run(tmp_path / "data", [one, two])
    assert report.files[1].skipped == f"same content as {one}, earlier in this call"
    assert report.accepted == 1 and stored(tmp_path / "data", schema.SUPPRESSIONS).height == 1


def test_a_refused_or_failed_file_is_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    source = write_ndjson(tmp_path / "events.ndjson", [suppression()])
    monkeypatch.setattr(writer, "_write_staged", lambda frame, path: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        run(data, [source])
    monkeypatch.undo()
    assert run(data, [source]).accepted == 1  # nothing landed before, so nothing is skipped now


def test_data_replaced_by_the_demo_is_no_longer_in_the_store(tmp_path: Path) -> None:
    from service.demo.generate import generate_demo

    data = tmp_path / "data"
    source = write_ndjson(tmp_path / "events.ndjson", [suppression()])
    run(data, [source])
    generate_demo(data, events=500, days=1, end=NOW, secret=SECRET, progress=False, replace=True)
    assert run(data, [source]).accepted == 1


def test_the_manifest_records_what_a_generation_landed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = write_ndjson(tmp_path / "events.ndjson", [suppression(), suppression(platform="x")])
    report = run(data, [source])
    manifest = json.loads(layout.manifest_path(data, 1).read_text())
    assert manifest["generation"] == 1 and manifest["landed_at"] == "2025-06-01T12:00:00Z"
    assert manifest["sources"] == [
        {"sha256": report.files[0].sha256, "file": "events.ndjson", "table": "suppressions", "rows": 1}
    ]
    assert manifest["partitions"] == [p.relative_to(data).as_posix() for p in report.written]
    assert manifest["other_files"] == [report.files[0].quarantine.relative_to(data).as_posix()]


def test_a_quarantine_without_good_rows_lands_without_a_generation(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = write_ndjson(tmp_path / "bad.ndjson", [suppression(platform="x")])
    report = run(data, [source])
    assert report.generation == 0 and report.files[0].quarantine.exists()
    assert not layout.generations_dir(data).exists() and list(layout.staging_dir(data).iterdir()) == []
