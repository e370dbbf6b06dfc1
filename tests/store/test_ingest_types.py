"""Issue 12, part 1: every value's type is checked against the contract before anything converts
it, for NDJSON, CSV and Parquet alike.

The table below states, for every column of both tables and every JSON type, what ingest does with
the value: the stored value, or the reason the row is rejected for. Each case runs twice through
`ingest_files`: with the value among lines of strings (the column mixes types: polars used to turn
every value of it into a string, so `true` landed as the keyword "true") and with the value in
every line (the column has one type).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from service import geo
from service.store import ingest, layout, schema
from tests.support import event_rows

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
SECRET = "types-secret"

SUPPRESSION = event_rows.suppression(suppressions=2)
CHANGE = event_rows.change(platform="ios", country="US")

# JSON values of every type (integers and integral numbers apart, since JSON does not tell 2 from 2.0).
VALUES: dict[str, Any] = {
    "integer": 7,
    "integral number": 7.0,
    "fractional number": 7.5,
    "true": True,
    "false": False,
    "list": ["x"],
    "object": {"a": 1},
    "empty list": [],
    "null": None,
}
KIND = {"integer": "a number", "integral number": "a number", "fractional number": "a number", "true": "a boolean",
        "false": "a boolean", "list": "a list", "empty list": "a list", "object": "an object"}  # fmt: skip
EXPECTED = {
    "ts": "an ISO 8601 timestamp",
    "user_id": "text or an integer",
    "county": "text or an integer",
    "city": "text or an integer",
    "suppressions": "an integer",
}
OPTIONAL = {"region", "county", "city"}


def expected_outcome(column: str, value_name: str) -> tuple[str, Any]:
    """("stored", value) or ("rejected", reason) for `value_name` in `column`."""
    if value_name == "null":
        return ("stored", None) if column in OPTIONAL else ("rejected", f"{column}: missing")
    integral = value_name in ("integer", "integral number")
    if column == "suppressions":
        if integral:
            return "stored", 7
        if value_name == "fractional number":
            return "rejected", "suppressions: '7.5' is not an integer"
    if column == "user_id" and integral:
        return "stored", "hash of '7'"
    if column == "county" and integral:
        # an integer county is zero-padded (a Parquet export loses FIPS's leading zero): 00007 is unknown
        return "rejected", "county: '00007' is not a known US county FIPS code"
    if column == "city" and integral:
        return "rejected", f"city: '7' is not a known GeoNames city (population of at least {geo.CITY_MIN_POPULATION})"
    return "rejected", f"{column}: expected {EXPECTED.get(column, 'text')}, got {KIND[value_name]}"


CASES = [
    (table, column, value_name)
    for table, base in ((schema.SUPPRESSIONS, SUPPRESSION), (schema.KEYWORD_CHANGES, CHANGE))
    for column in base
    for value_name in VALUES
    if not (table == schema.KEYWORD_CHANGES and column in ("keyword", "platform", "country", "ts", "user_id"))
]  # keyword_changes shares those columns' rules with suppressions; `action` is its own


def _base(table: str) -> dict[str, Any]:
    return dict(SUPPRESSION if table == schema.SUPPRESSIONS else CHANGE)


def _ingest(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> tuple[ingest.IngestReport, pl.DataFrame]:
    source = tmp_path / name
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = tmp_path / "data"
    report = ingest.ingest_files(data, [source], secret=SECRET, now=NOW, progress=False)
    files = sorted(
        path for table in schema.TABLES for path in layout.table_dir(data, table).glob("date=*/*.parquet")
    )
    stored = pl.concat([pl.read_parquet(path) for path in files], how="diagonal") if files else pl.DataFrame()
    return report, stored


def _reasons(report: ingest.IngestReport) -> dict[int, str]:
    (file,) = report.files
    assert file.error is None, file.error
    if file.quarantine is None:
        return {}
    lines = [json.loads(line) for line in file.quarantine.read_text().splitlines()]
    return {line["row_number"]: line["reason"] for line in lines}


def _check_stored(stored: pl.DataFrame, column: str, expected: Any, rows: int) -> None:
    assert stored.height == rows
    values = stored[column].to_list()
    if expected == "hash of '7'":
        from service.store.user_ids import hash_user_ids

        expected = hash_user_ids(pl.Series(["7"]), SECRET)[0]
    assert values[-1] == expected or expected in values


@pytest.mark.parametrize(("table", "column", "value_name"), CASES, ids=["-".join(c) for c in CASES])
def test_each_json_type_in_each_column(tmp_path: Path, table: str, column: str, value_name: str) -> None:
    value = VALUES[value_name]
    verdict, detail = expected_outcome(column, value_name)
    good = _base(table)
    odd = {**good, column: value, "user_id": "install-odd" if column != "user_id" else value}

    # Among strings (a mixed column): the row with the value alone is judged on it.
    report, stored = _ingest(tmp_path, "mixed.ndjson", [good, odd, {**good, "user_id": "install-3"}])
    reasons = _reasons(report)
    if verdict == "rejected":
        assert reasons == {2: detail}
        assert stored.height == 2
    else:
        assert reasons == {}
        _check_stored(stored, column, detail, 3)

    # In every line (a column of one type).
    (tmp_path / "data").rename(tmp_path / "data-mixed")
    report, stored = _ingest(tmp_path, "same.ndjson", [odd, odd])
    reasons = _reasons(report)
    if verdict == "rejected":
        assert reasons == {1: detail, 2: detail}
        assert stored.height == 0
    else:
        assert reasons == {}
        _check_stored(stored, column, detail, 2)


def test_the_issue_file_keeps_the_good_rows_and_stores_no_made_up_keywords(tmp_path: Path) -> None:
    """The report's file: keyword true, ["x"] and {"a": 1} among three good rows was "6 rows accepted"."""
    rows = [{**CHANGE, "user_id": f"u{i}", "keyword": k} for i, k in
            enumerate(["spoilers", True, ["x"], {"a": 1}, "gore", "crypto"])]  # fmt: skip
    report, stored = _ingest(tmp_path, "issue.ndjson", rows)
    assert (report.accepted, report.rejected) == (3, 3)
    assert sorted(stored["keyword"].to_list()) == ["crypto", "gore", "spoilers"]
    assert _reasons(report) == {
        2: "keyword: expected text, got a boolean",
        3: "keyword: expected text, got a list",
        4: "keyword: expected text, got an object",
    }


def test_strings_in_number_columns_and_numbers_in_text_columns(tmp_path: Path) -> None:
    rows = [
        {**SUPPRESSION, "suppressions": "4"},
        {**SUPPRESSION, "keyword": 2024},
        {**SUPPRESSION, "platform": 1},
        {**SUPPRESSION, "ts": 1748772000},
        {**SUPPRESSION, "county": 6037, "city": 5368361, "user_id": 12},  # ids may be integers
    ]
    report, stored = _ingest(tmp_path, "swapped.ndjson", rows)
    assert _reasons(report) == {
        1: "suppressions: expected an integer, got a string: '4'",
        2: "keyword: expected text, got a number",
        3: "platform: expected text, got a number",
        4: "ts: expected an ISO 8601 timestamp, got a number",
    }
    assert stored.select("county", "city").rows() == [("06037", "5368361")]


def test_every_problem_of_a_row_in_one_reason_also_for_types(tmp_path: Path) -> None:
    rows = [SUPPRESSION, {**SUPPRESSION, "keyword": False, "suppressions": "2", "domain": None}]
    report, _ = _ingest(tmp_path, "two.ndjson", rows)
    assert _reasons(report) == {
        2: "keyword: expected text, got a boolean; domain: missing; "
        "suppressions: expected an integer, got a string: '2'"
    }


def test_huge_integers_keep_their_digits(tmp_path: Path) -> None:
    # 2**64 - 1 read as a float would become ...616: an id must keep its exact digits.
    rows = [{**SUPPRESSION, "user_id": 2**64 - 1}, {**SUPPRESSION, "user_id": 2**64 - 2}]
    report, stored = _ingest(tmp_path, "big.ndjson", rows)
    from service.store.user_ids import hash_user_ids

    assert report.accepted == 2
    assert sorted(stored["user_id"].to_list()) == sorted(
        hash_user_ids(pl.Series([str(2**64 - 1), str(2**64 - 2)]), SECRET).to_list()
    )


def test_a_lone_surrogate_is_a_broken_line_not_a_broken_file(tmp_path: Path) -> None:
    source = tmp_path / "surrogate.ndjson"
    bad = json.dumps({**SUPPRESSION, "keyword": "x"}).replace('"x"', '"\\ud800"')
    source.write_text(json.dumps(SUPPRESSION) + "\n" + bad + "\n")
    report = ingest.ingest_files(tmp_path / "data", [source], secret=SECRET, now=NOW, progress=False)
    assert (report.accepted, report.rejected, report.failed) == (1, 1, ())
    assert _reasons(report) == {2: "invalid JSON: a string holds an unpaired UTF-16 surrogate"}


# ---------------------------------------------------------------------------------------------
# CSV: every cell is text


def test_csv_cells_are_text_and_integers_are_digits(tmp_path: Path) -> None:
    header = list(SUPPRESSION)
    cells = {"2": None, " 3 ": None, "1.5": "'1.5' is not an integer", "2.0": "'2.0' is not an integer",
             "true": "'true' is not an integer", "1e3": "'1e3' is not an integer",
             "": "missing", "-4": "-4 is less than 1"}  # fmt: skip
    lines = [",".join(header)]
    for count in cells:
        row = {**SUPPRESSION, "suppressions": count}
        lines.append(",".join(f'"{row[c]}"' if c == "suppressions" else str(row[c]) for c in header))
    # A text column takes any text: "true" and "[x]" are keywords like any other in a CSV file.
    lines.append(",".join(str({**SUPPRESSION, "keyword": "true"}[c]) for c in header))
    lines.append(",".join(str({**SUPPRESSION, "keyword": '"[""x""]"'}[c]) for c in header))
    source = tmp_path / "cells.csv"
    source.write_text("\n".join(lines) + "\n")
    report = ingest.ingest_files(tmp_path / "data", [source], secret=SECRET, now=NOW, progress=False)
    expected = {i: f"suppressions: {reason}" for i, reason in enumerate(cells.values(), start=1) if reason}
    assert _reasons(report) == expected
    stored = pl.read_parquet(layout.table_dir(tmp_path / "data", schema.SUPPRESSIONS) / "date=2025-06-01")
    assert sorted(stored["suppressions"].to_list()) == [2, 2, 2, 3]
    assert sorted(stored["keyword"].to_list()) == ['["x"]', "spoilers", "spoilers", "true"]


# ---------------------------------------------------------------------------------------------
# Parquet: a column of the wrong type refuses the file


WRONG_PARQUET_COLUMNS = [
    ("keyword", pl.Series([True, False]), "'keyword' is Boolean (expected text)"),
    ("keyword", pl.Series([2024, 2025]), "'keyword' is Int64 (expected text)"),
    ("keyword", pl.Series([["x"], ["y"]]), "'keyword' is List(String) (expected text)"),
    ("keyword", pl.Series([{"a": 1}, {"a": 2}]), "'keyword' is Struct({'a': Int64}) (expected text)"),
    ("platform", pl.Series([1.0, 2.0]), "'platform' is Float64 (expected text)"),
    ("suppressions", pl.Series([2.0, 3.0]), "'suppressions' is Float64 (expected an integer)"),
    ("suppressions", pl.Series(["2", "3"]), "'suppressions' is String (expected an integer)"),
    ("suppressions", pl.Series([True, True]), "'suppressions' is Boolean (expected an integer)"),
    ("ts", pl.Series([1748772000, 1748772001]), "'ts' is Int64 (expected an ISO 8601 timestamp)"),
    ("ts", pl.Series([dt.date(2025, 6, 1)] * 2), "'ts' is Date (expected an ISO 8601 timestamp)"),
    ("county", pl.Series([6037.0, 6037.0]), "'county' is Float64 (expected text or an integer)"),
    ("user_id", pl.Series([True, False]), "'user_id' is Boolean (expected text or an integer)"),
]


@pytest.mark.parametrize(("column", "values", "message"), WRONG_PARQUET_COLUMNS,
                         ids=[m for _c, _v, m in WRONG_PARQUET_COLUMNS])  # fmt: skip
def test_a_parquet_column_of_the_wrong_type_refuses_the_file(
    tmp_path: Path, column: str, values: pl.Series, message: str
) -> None:
    frame = pl.DataFrame([SUPPRESSION, SUPPRESSION]).with_columns(values.alias(column))
    source = tmp_path / "typed.parquet"
    frame.write_parquet(source)
    good = tmp_path / "good.ndjson"
    good.write_text(json.dumps(SUPPRESSION) + "\n")
    report = ingest.ingest_files(tmp_path / "data", [source, good], secret=SECRET, now=NOW, progress=False)
    refused, landed = report.files
    assert refused.error == f"wrong column type in this Parquet file: {message}"
    assert (refused.accepted, refused.rejected, refused.quarantine) == (0, 0, None)
    assert landed.accepted == 1  # the other file of the call still lands


def test_parquet_columns_of_the_right_types(tmp_path: Path) -> None:
    frame = pl.DataFrame([SUPPRESSION, {**SUPPRESSION, "suppressions": 0}]).with_columns(
        pl.lit(dt.datetime(2025, 6, 1, 10), dtype=pl.Datetime("ns")).alias("ts"),  # naive = UTC
        pl.col("user_id").cast(pl.Categorical),
        pl.col("keyword").cast(pl.Categorical),
        pl.lit(6037, dtype=pl.Int16).alias("county"),
        pl.lit(5368361, dtype=pl.UInt32).alias("city"),
        pl.col("suppressions").cast(pl.Int8),
        pl.lit(None, dtype=pl.Null).alias("region"),
    )
    source = tmp_path / "typed.parquet"
    frame.write_parquet(source)
    report = ingest.ingest_files(tmp_path / "data", [source], secret=SECRET, now=NOW, progress=False)
    assert (report.accepted, report.rejected, report.failed) == (1, 1, ())
    assert _reasons(report) == {2: "suppressions: 0 is less than 1"}


def test_two_type_errors_are_named_together(tmp_path: Path) -> None:
    frame = pl.DataFrame([SUPPRESSION]).with_columns(pl.lit(True).alias("keyword"), pl.lit(2.0).alias("suppressions"))
    source = tmp_path / "typed.parquet"
    frame.write_parquet(source)
    report = ingest.ingest_files(tmp_path / "data", [source], secret=SECRET, now=NOW, progress=False)
    assert report.files[0].error == (
        "wrong column types in this Parquet file: 'keyword' is Boolean (expected text), "
        "'suppressions' is Float64 (expected an integer)"
    )


def test_lines_with_other_keys_or_key_order_on_the_line_by_line_path(tmp_path: Path) -> None:
    reordered = dict(reversed(list({**SUPPRESSION, "keyword": True}.items())))
    no_city = {k: v for k, v in SUPPRESSION.items() if k != "city"}
    late_region = {k: v for k, v in SUPPRESSION.items() if k != "region"} | {"region": "US-CA", "user_id": 5}
    report, stored = _ingest(tmp_path, "keys.ndjson", [no_city, reordered, SUPPRESSION, late_region])
    assert _reasons(report) == {2: "keyword: expected text, got a boolean"}
    assert stored["city"].null_count() == 1 and stored["city"].drop_nulls().to_list() == ["5368361"] * 2
    assert stored["region"].to_list() == ["US-CA"] * 3
