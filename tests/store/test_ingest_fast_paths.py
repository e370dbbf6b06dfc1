"""Issue 22, ingest throughput: the faster paths give exactly what the plain ones give.

- geography checked once per place and joined back (large files) = checked row by row;
- an NDJSON file read without a Python object per line = read line by line (the rejected rows'
  text included);
- map_distinct / hash_user_ids' Enum-code gather = replace_strict.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.store import ingest, kinds, layout, validate
from service.store.user_ids import hash_user_ids

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
    monkeypatch.setattr(validate, "_DISTINCT_FROM", 10**12)
    slow_good, slow_bad = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    assert fast_bad.height > 10_000 and fast_good.height > 1_000  # both kinds of rows are compared
    assert_frame_equal(fast_good, slow_good)
    assert_frame_equal(fast_bad, slow_bad)
    assert fast_bad.get_column("reason").str.contains("region: 'US-CA' is not in country 'FR'").any()


def test_geography_with_integer_counties_once_per_place(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame(12_000).with_columns(pl.col("county").cast(pl.Int64, strict=False))  # Parquet integers
    fast = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    monkeypatch.setattr(validate, "_DISTINCT_FROM", 10**12)
    slow = validate.validate_rows(frame, "suppressions", now=NOW, secret="s")
    for ours, theirs in zip(fast, slow, strict=True):
        assert_frame_equal(ours, theirs)


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_ndjson_read_whole_equals_line_by_line(tmp_path: Path, trailing_newline: bool) -> None:
    rows = _frame(30).drop("ts").with_columns(ts=pl.lit("2026-03-02T10:00:00+01:00"))
    lines = [json.dumps(row, ensure_ascii=False) for row in rows.to_dicts()]
    lines[4] = lines[4].replace('"feed"', '"feed" ')  # spacing of the source kept in the quarantine
    data = ("\n".join(lines) + ("\n" if trailing_newline else "")).encode()
    fast = ingest._read_ndjson_plain(data)
    assert fast is not None
    # The plain reader's result, forced: a blank line first sends the file down the other path.
    slow = ingest._read_ndjson(b"\n" + data)
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
    assert ingest._read_ndjson_plain(good + b"\n" + good + b"\n") is not None
    assert ingest._read_ndjson_plain(good + b"\r\n" + good) is None  # CR
    assert ingest._read_ndjson_plain(good + b"\n  \n" + good) is None  # a blank line
    assert ingest._read_ndjson_plain(good + b"\n" + good.replace(b'"a"', b'"\xff"')) is None  # not UTF-8
    assert ingest._read_ndjson_plain(good + b"\n" + good.replace(b'"a"', b"true")) is None  # types differ


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
