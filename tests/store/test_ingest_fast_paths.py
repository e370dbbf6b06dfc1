"""Issue 22, ingest throughput: the faster paths give exactly what the plain ones give.

- geography checked once per place and joined back (large files) = checked row by row;
- an NDJSON file read without a Python object per line = read line by line (the rejected rows'
  text included);
- map_distinct / hash_user_ids' Enum-code gather = replace_strict;
- timestamps in the usual spelling read by Arrow's cast = read by the other readers;
- the Public Suffix List built without encoding every rule = the package's own;
- rows already in time order split by day without a sort = sorted first.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.store import geography, ingest, kinds, layout, ndjson, row_checks, timestamps, validate
from service.store.user_ids import hash_user_ids
from tests.support.secret import TEST_SECRET

NOW = dt.datetime(2026, 3, 20, tzinfo=dt.UTC)
PLACES = [
    ("US", "US-CA", "06037", "5368361"),  # Los Angeles
    ("US", "US-CA", None, None),
    ("us", "us-ny", "36061", "5128581"),  # lower case: cleaned
    ("US", "US-NY", "06037", None),  # county not in the region
    ("FR", "US-CA", None, None),  # region not in the country
    ("DE", None, "06037", None),  # a US county outside the US
    ("XX", None, None, None),  # no such country
    ("GB", "GB-ENG", None, "2643743"),  # London
    ("US", None, "6037", None),  # not 5 digits
    ("US", "US-CA", None, "2643743"),  # a city of another country
    (None, None, None, None),
]


def _frame(rows: int) -> pl.DataFrame:
    places = [PLACES[i % len(PLACES)] for i in range(rows)]
    return pl.DataFrame({
        "ts": [f"2026-03-{1 + i % 9:02d}T10:{i % 60:02d}:00Z" for i in range(rows)],
        "user_id": [f"u{i % 97}" for i in range(rows)],
        "keyword": [["Crypto", "spoilers", " ", "x" * 120][i % 4] for i in range(rows)],
        "domain": [["old.reddit.com", "x.com", "10.0.0.1", "nope.invalidtld"][i % 4] for i in range(rows)],
        "platform": [["chrome", "IOS", "netscape"][i % 3] for i in range(rows)],
        "page_context": ["feed"] * rows,
        "country": [p[0] for p in places],
        "region": [p[1] for p in places],
        "county": [p[2] for p in places],
        "city": [p[3] for p in places],
        "suppressions": [[1, 0, 7][i % 3] for i in range(rows)],
    })  # fmt: skip


def test_geography_once_per_place_equals_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame(22_000)
    fast_good, fast_bad = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    monkeypatch.setattr(geography, "_DISTINCT_FROM", 10**12)
    slow_good, slow_bad = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    assert fast_bad.height > 10_000 and fast_good.height > 1_000  # both kinds of rows are compared
    assert_frame_equal(fast_good, slow_good)
    assert_frame_equal(fast_bad, slow_bad)
    assert fast_bad.get_column("reason").str.contains("region: 'US-CA' is not in country 'FR'").any()


def test_geography_with_integer_counties_once_per_place(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame(12_000).with_columns(pl.col("county").cast(pl.Int64, strict=False))  # Parquet integers
    fast = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    monkeypatch.setattr(geography, "_DISTINCT_FROM", 10**12)
    slow = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    for ours, theirs in zip(fast, slow, strict=True):
        assert_frame_equal(ours, theirs)


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_ndjson_read_whole_equals_line_by_line(tmp_path: Path, trailing_newline: bool) -> None:
    rows = _frame(30).drop("ts").with_columns(ts=pl.lit("2026-03-02T10:00:00+01:00"))
    lines = [json.dumps(row, ensure_ascii=False) for row in rows.to_dicts()]
    lines[4] = lines[4].replace('"feed"', '"feed" ')  # spacing of the source kept in the quarantine
    data = ("\n".join(lines) + ("\n" if trailing_newline else "")).encode()
    fast = ndjson.read_ndjson_plain(data)
    assert fast is not None
    # The plain reader's result, forced: a blank line first sends the file down the other path.
    slow = ndjson.read_ndjson(b"\n" + data)
    assert_frame_equal(fast.frame, slow.frame)
    assert fast.row_numbers.to_list() == [n - 1 for n in slow.row_numbers.to_list()]
    fast_good, fast_bad = validate.validate_rows(fast.frame, "suppressions", now=NOW, secret="s",
                                                 row_numbers=fast.row_numbers, source_rows=fast.source_rows)
    slow_good, slow_bad = validate.validate_rows(slow.frame, "suppressions", now=NOW, secret="s",
                                                 row_numbers=slow.row_numbers, source_rows=slow.source_rows)
    assert_frame_equal(fast_good, slow_good)
    assert fast_bad.get_column("row").to_list() == slow_bad.get_column("row").to_list()
    assert fast_bad.get_column("row").to_list() == [lines[n - 1] for n in fast_bad.get_column("row_number").to_list()]
    assert lines[4] in fast_bad.get_column("row").to_list()  # as written: the space kept, no line end


def test_ndjson_irregular_files_take_the_line_by_line_path() -> None:
    good = b'{"ts": "2026-03-02T10:00:00Z", "keyword": "a"}'
    assert ndjson.read_ndjson_plain(good + b"\n" + good + b"\n") is not None
    assert ndjson.read_ndjson_plain(good + b"\r\n" + good) is None  # CR
    assert ndjson.read_ndjson_plain(good + b"\n  \n" + good) is None  # a blank line
    assert ndjson.read_ndjson_plain(good + b"\n" + good.replace(b'"a"', b'"\xff"')) is None  # not UTF-8
    assert ndjson.read_ndjson_plain(good + b"\n" + good.replace(b'"a"', b"true")) is None  # types differ


def test_ingest_quarantines_the_line_as_written(tmp_path: Path) -> None:
    rows = _frame(12).drop("ts").with_columns(ts=pl.lit("2026-03-02T10:00:00Z"))
    lines = [json.dumps(row) for row in rows.to_dicts()]
    path = tmp_path / "events.ndjson"
    path.write_text("\n".join(lines) + "\n")
    report = ingest.ingest_files(tmp_path / "data", [path], secret="s", now=NOW, progress=False)
    quarantined = [json.loads(line) for path in layout.quarantine_dir(tmp_path / "data").glob("*.ndjson")
                   for line in path.read_text().splitlines()]
    assert report.rejected == len(quarantined) > 0
    for entry in quarantined:
        assert entry["row"] == json.loads(lines[entry["row_number"] - 1])


def test_spread_equals_replace_strict() -> None:
    series = pl.Series("k", ["b", None, "a", "b", "c"])
    distinct = series.drop_nulls().unique()
    mapped = pl.Series([f"<{v}>" for v in distinct.to_list()])
    assert kinds.spread(series, distinct, mapped).to_list() == series.replace_strict(
        distinct, mapped, default=None, return_dtype=pl.String).to_list()
    ids = pl.Series("user_id", ["x", None, "y", "x"])
    hashed = hash_user_ids(ids, "secret")
    assert hashed[0] == hashed[3] and hashed[1] is None and hashed[0] != hashed[2] and hashed.name == "user_id"


# Timestamps in the usual spelling: Arrow's ISO 8601 cast (timestamps._parse_usual_iso).

USUAL_TIMESTAMPS = [
    "2026-03-01T10:00:00Z", "2026-03-01T10:00:00.5Z", "2026-03-01T10:00:00.123456Z", "2026-03-01T23:59:59.999999Z",
    "2026-03-01T10:00:00+01:00", "2026-03-01T10:00:00-23:59", "2026-03-01T00:30:00+00:45", "2024-02-29T12:00:00Z",
    "1970-01-01T00:00:00Z", "2026-03-01T10:00:00.000001-00:00", None,
]  # fmt: skip


def _slow_ts(values: list[str | None]) -> pl.Series:
    """The readers `parse_ts` uses for every other spelling (polars' formats, then Python's)."""
    series = pl.Series("ts", values, dtype=pl.String)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timestamps, "_parse_usual_iso", lambda _text: None)
        return timestamps.parse_ts(series)[0]


def test_usual_timestamps_read_by_arrow_equal_the_other_readers() -> None:
    fast = timestamps.parse_ts(pl.Series("ts", USUAL_TIMESTAMPS))[0]
    assert timestamps._parse_usual_iso(pl.Series("ts", USUAL_TIMESTAMPS)) is not None  # the fast path was taken
    assert fast.dtype == _slow_ts(USUAL_TIMESTAMPS).dtype
    assert fast.to_list() == _slow_ts(USUAL_TIMESTAMPS).to_list()
    assert fast[1] == dt.datetime(2026, 3, 1, 10, 0, 0, 500_000, tzinfo=dt.UTC)
    assert fast[5] == dt.datetime(2026, 3, 2, 9, 59, tzinfo=dt.UTC)  # offsets honoured


@pytest.mark.parametrize("odd", [
    "2026-02-30T10:00:00Z",  # no such day: rejected by every reader
    "2026-03-01T10:00:60Z",  # second 60
    "2026-03-01T10:00:00",  # no offset: UTC, read by polars' third format
    "2026-03-01 10:00:00Z",  # a space for the "T"
    "2026-03-01T10:00Z",  # no seconds: Python's reader
    "2026-03-01T10:00:00.1234567Z",  # more than microseconds
    "2026-03-01",  # a bare date is no timestamp
    "2026-03-01T10:00:00+0100",
])  # fmt: skip
def test_a_column_with_one_other_spelling_is_read_as_before(odd: str) -> None:
    values = [*USUAL_TIMESTAMPS, odd]
    assert timestamps._parse_usual_iso(pl.Series("ts", values)) is None  # whole column to the other readers
    assert timestamps.parse_ts(pl.Series("ts", values))[0].to_list() == _slow_ts(values).to_list()


def test_rows_with_usual_timestamps_validate_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame(3_000)
    fast = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    monkeypatch.setattr(timestamps, "_parse_usual_iso", lambda _text: None)
    slow = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    assert_frame_equal(fast[0], slow[0])
    assert_frame_equal(fast[1], slow[1])


# The Public Suffix List built without encoding every rule (domains._psl).


def test_the_public_suffix_list_is_the_packages_own() -> None:
    from publicsuffixlist import PublicSuffixList

    from service.store import domains

    own = PublicSuffixList(accept_unknown=False)
    built = domains._psl()
    assert built._publicsuffix == own._publicsuffix and built._maxlabel == own._maxlabel
    assert built.accept_unknown is False
    hosts = ["old.reddit.com", "bbc.co.uk", "xn--fiqs8s.example.xn--fiqs8s", "例え.テスト", "a.b.kawasaki.jp",
             "city.kawasaki.jp", "foo.blogspot.com", "intranet.corp", "co.uk"]
    assert [built.privatesuffix(h) for h in hosts] == [own.privatesuffix(h) for h in hosts]


# Rows already in time order are not sorted again (writer._split_by_day).


def test_split_by_day_takes_rows_in_order_as_they_are_and_sorts_the_others() -> None:
    from service.store import writer

    ts = [dt.datetime(2026, 3, 1, 23, 0, tzinfo=dt.UTC), dt.datetime(2026, 3, 1, 23, 0, tzinfo=dt.UTC),
          dt.datetime(2026, 3, 2, 1, 0, tzinfo=dt.UTC), dt.datetime(2026, 3, 4, 1, 0, tzinfo=dt.UTC)]
    ordered = pl.DataFrame({"ts": ts, "n": [1, 2, 3, 4]})
    days = writer._split_by_day(ordered)
    assert [(day, rows["n"].to_list()) for day, rows in days] == [("2026-03-01", [1, 2]), ("2026-03-02", [3]),
                                                                   ("2026-03-04", [4])]
    shuffled = writer._split_by_day(ordered.reverse())
    assert [(day, sorted(rows["n"].to_list())) for day, rows in shuffled] == [
        ("2026-03-01", [1, 2]), ("2026-03-02", [3]), ("2026-03-04", [4])]
    assert all(rows["ts"].is_sorted() for _day, rows in shuffled)


# What an ingest process imports: not redis-py (cache/__init__.py imports its Redis side when first
# named), nor pandas (which pyarrow's `pa.array` would import): a fifth and a third of a second.


def test_an_ingest_process_imports_neither_redis_nor_pandas(tmp_path: Path) -> None:
    import subprocess
    import sys

    events = tmp_path / "in.ndjson"
    events.write_text(json.dumps({
        "ts": "2026-03-01T10:00:00Z", "user_id": "u1", "keyword": "crypto", "domain": "x.com", "platform": "chrome",
        "page_context": "feed", "country": "US", "region": "US-CA", "county": "06037", "city": "5368361",
        "suppressions": 1}) + "\n")  # fmt: skip
    script = (
        "import sys, runpy\n"
        f"sys.argv = ['service', 'data', 'ingest', {str(events)!r}, '--no-progress']\n"
        "try:\n    runpy.run_module('service', run_name='__main__')\nexcept SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print(sorted(m for m in ('redis', 'pandas') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "REDIS_URL"))}
    done = subprocess.run([sys.executable, "-c", script], env={**env, "SIGNALS_DATA_DIR": str(tmp_path / "data"),
                                                              "SIGNALS_SECRET": TEST_SECRET},
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    assert "1 rows accepted" in done.stdout or "1 row accepted" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_redis_side_of_cache_is_there_when_named() -> None:
    import cache
    from cache.redis_gate import RedisGate
    from cache.wire import Wire

    assert cache.RedisGate is RedisGate and cache.Wire is Wire
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        cache.Nope  # noqa: B018


@pytest.mark.parametrize("blank", [b"\n", b"  \n", b"\t\x0b\x0c \n"])
def test_a_file_with_a_blank_line_is_read_line_by_line(blank: bytes) -> None:
    line = json.dumps({"ts": "2026-03-01T10:00:00Z", "user_id": "u1"}).encode() + b"\n"
    assert ndjson.read_ndjson_plain(line + line) is not None
    assert ndjson.read_ndjson_plain(line + blank + line) is None  # the line numbers must skip it
    read = ndjson.read_ndjson(line + blank + line)
    assert read.row_numbers.to_list() == [1, 3]


def test_a_line_of_other_unicode_space_is_no_blank_line() -> None:
    """bytes.strip() (the line-by-line reader's test of a blank line) strips ASCII whitespace only."""
    line = json.dumps({"ts": "2026-03-01T10:00:00Z", "user_id": "u1"}).encode() + b"\n"
    assert ndjson.read_ndjson_plain(line + "\u00a0\n".encode() + line) is None  # not JSON: read line by line
    read = ndjson.read_ndjson(line + "\u00a0\n".encode() + line)
    assert read.unparsed["row_number"].to_list() == [2]


# The column checks run side by side in threads (row_checks.Rows.run).


def test_a_rows_reasons_keep_the_checks_order_whichever_finishes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    frame = pl.DataFrame({
        "ts": ["not a time"], "user_id": ["u"], "keyword": [" "], "domain": ["x.com"], "platform": ["netscape"],
        "page_context": ["feed"], "country": ["US"], "region": [None], "county": [None], "city": [None],
        "suppressions": [0],
    })  # fmt: skip
    expected = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")[1]["reason"].to_list()
    assert expected == ["ts: 'not a time' is not an ISO 8601 timestamp; keyword: missing; "
                        "platform: 'netscape' is not one of chrome, firefox, safari, edge, ios, android, other; "
                        "suppressions: 0 is less than 1"]
    real = row_checks.Rows.check_ts

    def slow_ts(rows: row_checks.Rows, now: dt.datetime) -> None:
        time.sleep(0.2)  # the first check finishes last
        real(rows, now)

    monkeypatch.setattr(row_checks.Rows, "check_ts", slow_ts)
    assert validate.validate_rows(frame, "suppressions", now=NOW, secret="s")[1]["reason"].to_list() == expected


def test_a_failing_check_fails_the_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_rows: row_checks.Rows) -> None:
        raise RuntimeError("check failed")

    monkeypatch.setattr(row_checks.Rows, "check_count", broken)
    with pytest.raises(RuntimeError, match="check failed"):
        validate.validate_rows(_frame(10), "suppressions", now=NOW, secret="s")
