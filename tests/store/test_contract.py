"""The ingest contract (service/store/validate.py, row_checks.py, geography.py, timestamps.py, columns.py, domains.py,
user_ids.py): row validation,
normalisation and user id hashing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

import polars as pl
import pytest

from service.store import columns, domains, schema, user_ids
from service.store.validate import validate_rows
from tests.support.event_rows import change, suppression

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
SECRET = "test-secret"


def validate(rows: list[dict[str, Any]], table: str = schema.SUPPRESSIONS, **kwargs: Any):
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return validate_rows(frame, table, now=NOW, secret=SECRET, **kwargs)


def reason_of(row: dict[str, Any], table: str = schema.SUPPRESSIONS) -> str:
    good, rejected = validate([row], table)
    assert good.height == 0, f"row was accepted: {row}"
    return rejected["reason"][0]


# ---------------------------------------------------------------------------------------------
# Good rows


def test_good_row_lands_in_the_stored_schema_normalised() -> None:
    good, rejected = validate(
        [
            suppression(
                keyword="  Elon \t MUSK ",
                domain="https://Old.Reddit.com/r/news?x=1",
                platform=" Chrome ",
                page_context="FEED",
                country="us",
                region="us-ca",
            )
        ]
    )
    assert rejected.height == 0
    assert dict(good.schema) == schema.SUPPRESSIONS_SCHEMA
    row = good.row(0, named=True)
    assert row["keyword"] == "elon musk"
    assert row["domain"] == "reddit.com"
    assert (row["platform"], row["page_context"], row["country"], row["region"]) == ("chrome", "feed", "US", "US-CA")
    assert (row["county"], row["city"], row["suppressions"]) == ("06037", "5368361", 3)
    assert row["ts"] == dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)


def test_keyword_changes_good_row() -> None:
    good, rejected = validate([change(action="Remove")], schema.KEYWORD_CHANGES)
    assert rejected.height == 0
    assert dict(good.schema) == schema.KEYWORD_CHANGES_SCHEMA
    assert good["action"].to_list() == ["remove"]


def test_geography_columns_are_optional_and_nullable() -> None:
    row = suppression(region=None, county="", city="  ")
    good, rejected = validate([row])
    assert rejected.height == 0
    assert good.select("region", "county", "city").row(0) == (None, None, None)
    frame = pl.DataFrame([{k: v for k, v in suppression().items() if k not in ("region", "county", "city")}])
    good, rejected = validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert (good.height, rejected.height) == (1, 0)
    assert good["region"].to_list() == [None]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-06-01T10:00:00Z", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),
        ("2025-06-01T10:00:00.250Z", dt.datetime(2025, 6, 1, 10, 0, 0, 250000, tzinfo=dt.UTC)),
        ("2025-06-01T12:00:00+02:00", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),
        ("2025-06-01T05:00:00-0500", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),
        ("2025-06-01 10:00:00", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),  # no offset: UTC
        ("2025-06-01T10:00", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),
        ("2025-06-01T10:00Z", dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)),
    ],
)
def test_timestamp_spellings(raw: str, expected: dt.datetime) -> None:
    good, rejected = validate([suppression(ts=raw)])
    assert rejected.height == 0, rejected["reason"].to_list()
    assert good["ts"][0] == expected


def test_datetime_columns_naive_is_utc_and_aware_is_converted() -> None:
    naive = pl.DataFrame([suppression(ts=dt.datetime(2025, 6, 1, 10))])
    good, _ = validate_rows(naive, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert good["ts"][0] == dt.datetime(2025, 6, 1, 10, tzinfo=dt.UTC)
    aware = naive.with_columns(pl.col("ts").dt.replace_time_zone("Europe/Berlin"))
    good, _ = validate_rows(aware, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert good["ts"][0] == dt.datetime(2025, 6, 1, 8, tzinfo=dt.UTC)
    assert good.schema["ts"] == schema.TS


def test_small_clock_skew_is_tolerated() -> None:
    good, _ = validate([suppression(ts="2025-06-01T12:04:00Z")])
    assert good.height == 1


def test_id_columns_take_integers_and_integral_numbers() -> None:
    # Integer columns (a Parquet export, say): county regains its leading zero, city is its id.
    frame = pl.DataFrame([suppression(county=6037, city=5368361, suppressions=2, user_id=12345)])
    good, rejected = validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert rejected.height == 0, rejected["reason"].to_list()
    assert good.select("county", "city", "suppressions").row(0) == ("06037", "5368361", 2)
    assert good["user_id"][0] == user_ids.hash_user_ids(pl.Series(["12345"]), SECRET)[0]
    # JSON does not tell 4 from 4.0: an integral number is an integer.
    floats = pl.DataFrame([suppression(city=5368361.0, county=6037.0, suppressions=4.0)])
    good, rejected = validate_rows(floats, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert rejected.height == 0, rejected["reason"].to_list()
    assert good.select("county", "city", "suppressions").row(0) == ("06037", "5368361", 4)


def test_a_number_as_a_string_is_not_an_integer() -> None:
    # "2" is text: a source that types its values must send a number (CSV is read with text_cells).
    assert reason_of(suppression(suppressions="2")) == "suppressions: expected an integer, got a string: '2'"
    good, rejected = validate([suppression(suppressions="2")], text_cells=True)
    assert rejected.height == 0 and good["suppressions"].to_list() == [2]


def test_text_cells_take_digits_only_for_integers() -> None:
    cells = ["2", " 7 ", "-1", "0", "1.5", "2.0", "1e3", "true", "0x10", "\u0663", "+3", "99999999999999999999", ""]
    frame = pl.DataFrame({**{k: [v] * len(cells) for k, v in suppression().items() if k != "suppressions"},
                          "suppressions": cells}).with_columns(pl.all().cast(pl.String))
    good, rejected = validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET, text_cells=True)
    assert good["suppressions"].to_list() == [2, 7]
    assert dict(zip(rejected["row_number"].to_list(), rejected["reason"].to_list(), strict=True)) == {
        3: "suppressions: -1 is less than 1",
        4: "suppressions: 0 is less than 1",
        5: "suppressions: '1.5' is not an integer",
        6: "suppressions: '2.0' is not an integer",
        7: "suppressions: '1e3' is not an integer",
        8: "suppressions: 'true' is not an integer",
        9: "suppressions: '0x10' is not an integer",
        10: "suppressions: '\u0663' is not an integer",
        11: "suppressions: '+3' is not an integer",
        12: "suppressions: 99999999999999999999 is more than 2147483647",
        13: "suppressions: missing",
    }


def test_registrable_domains() -> None:
    raw = ["news.bbc.co.uk", "WWW.YouTube.com.", "m.facebook.com:443", "user.github.io", "bücher.de"]
    good, rejected = validate([suppression(domain=d) for d in raw])
    assert rejected.height == 0, rejected["reason"].to_list()
    assert good["domain"].to_list() == ["bbc.co.uk", "youtube.com", "facebook.com", "user.github.io", "bücher.de"]


def test_registrable_domain_for_query_parameters() -> None:
    assert domains.registrable_domain("https://old.reddit.com/r/x") == "reddit.com"
    assert domains.registrable_domain("localhost") is None


# ---------------------------------------------------------------------------------------------
# Rejections: one per rule, each naming the column and the problem


REJECTIONS = [
    (dict(ts=None), "ts: missing"),
    (dict(ts="yesterday"), "ts: 'yesterday' is not an ISO 8601 timestamp"),
    (dict(ts="2025-06-01"), "ts: '2025-06-01' is not an ISO 8601 timestamp"),
    (dict(ts="2025-13-01T00:00:00Z"), "is not an ISO 8601 timestamp"),
    (dict(ts="2025-06-01T12:06:00Z"), "ts: 2025-06-01T12:06:00Z is in the future (more than 5 minutes after"),
    (dict(ts=1748772000), "ts: expected an ISO 8601 timestamp, got a number"),
    (dict(user_id=None), "user_id: missing"),
    (dict(user_id="   "), "user_id: missing"),
    (dict(user_id=True), "user_id: expected text or an integer, got a boolean"),
    (dict(user_id=12.5), "user_id: expected text or an integer, got a number"),
    (dict(keyword=None), "keyword: missing"),
    (dict(keyword="x" * 101), "keyword: 101 characters after normalisation, at most 100 allowed"),
    (dict(keyword="bad\x01word"), "keyword: contains control characters"),
    (dict(keyword=["a", "b"]), "keyword: expected text, got a list"),
    (dict(keyword={"a": 1}), "keyword: expected text, got an object"),
    (dict(keyword=True), "keyword: expected text, got a boolean"),
    (dict(keyword=2024), "keyword: expected text, got a number"),
    (dict(domain=None), "domain: missing"),
    (dict(domain="not a host"), "domain: 'not a host' is not a host name"),
    (dict(domain="-bad-.com"), "domain: '-bad-.com' is not a host name"),
    (dict(domain="under_score.com"), "is not a host name"),
    (dict(domain="192.168.0.1"), "domain: '192.168.0.1' is an IP address, not a domain"),
    (dict(domain="localhost"), "domain: 'localhost' is not a registrable domain (no public suffix)"),
    (dict(domain="co.uk"), "domain: 'co.uk' is a public suffix, not a registrable domain"),
    (dict(domain="intranet.corp"), "domain: 'intranet.corp' has no known public suffix"),
    (dict(domain="a" * 64 + ".com"), "is not a host name"),
    (
        dict(platform="netscape"),
        "platform: 'netscape' is not one of chrome, firefox, safari, edge, ios, android, other",
    ),
    (dict(platform=None), "platform: missing"),
    (dict(page_context="sidebar"), "page_context: 'sidebar' is not one of feed, search, comments, article,"),
    (dict(country="ZZ"), "country: 'ZZ' is not an ISO 3166-1 alpha-2 country code"),
    (dict(country="USA", region=None, county=None, city=None), "country: 'USA' is not an ISO 3166-1 alpha-2"),
    (dict(country=None), "country: missing"),
    (dict(region="US-XX", county=None), "region: 'US-XX' is not an ISO 3166-2 code"),
    (dict(region="FR-75C", county=None, city=None), "region: 'FR-75C' is not in country 'US'"),
    (dict(county="6037"), "county: '6037' is not a 5-digit FIPS code"),
    (dict(county="99999"), "county: '99999' is not a known US county FIPS code"),
    (dict(county="48201", city=None), "county: '48201' (Harris County, TX) is not in region 'US-CA'"),
    (
        dict(country="MX", region=None, city=None),
        "county: '06037' (Los Angeles County, CA) is a US county, but country is 'MX'",
    ),
    (dict(city="LA"), "city: 'LA' is not a GeoNames id"),
    (dict(city="1"), "city: '1' is not a known GeoNames city"),
    (dict(city="2643743", region=None, county=None), "city: '2643743' (London, GB) is not in country 'US'"),
    (dict(city="4699066", county=None), "city: '4699066' (Houston, US) is not in region 'US-CA'"),
    (dict(suppressions=None), "suppressions: missing"),
    (dict(suppressions=0), "suppressions: 0 is less than 1"),
    (dict(suppressions=-2), "suppressions: -2 is less than 1"),
    (dict(suppressions=2.5), "suppressions: '2.5' is not an integer"),
    (dict(suppressions="many"), "suppressions: expected an integer, got a string: 'many'"),
    (dict(suppressions=[2]), "suppressions: expected an integer, got a list"),
    (dict(suppressions=2**31), "suppressions: 2147483648 is more than 2147483647"),
    (dict(suppressions=True), "suppressions: expected an integer, got a boolean"),
]


@pytest.mark.parametrize(("changes", "expected"), REJECTIONS, ids=[e for _c, e in REJECTIONS])
def test_rejection_reasons(changes: dict[str, Any], expected: str) -> None:
    assert expected in reason_of(suppression(**changes))


def test_action_rejection() -> None:
    reason = reason_of(change(action="mute"), schema.KEYWORD_CHANGES)
    assert reason == "action: 'mute' is not one of add, remove, edit"


def test_long_values_are_cut_in_reasons() -> None:
    reason = reason_of(suppression(platform="p" * 500))
    assert len(reason) < 150 and "…" in reason


def test_all_problems_of_a_row_are_listed() -> None:
    reason = reason_of(suppression(platform="netscape", country="ZZ", suppressions=0))
    assert reason.split("; ") == [
        "platform: 'netscape' is not one of chrome, firefox, safari, edge, ios, android, other",
        "country: 'ZZ' is not an ISO 3166-1 alpha-2 country code",
        "suppressions: 0 is less than 1",
    ]


def test_mixed_rows_keep_the_good_ones_with_row_numbers_and_content() -> None:
    rows = [suppression(), suppression(platform="netscape"), suppression(user_id="install-2"), suppression(country="")]
    good, rejected = validate(rows)
    assert good.height == 2
    assert rejected.columns == ["row_number", "reason", "row"]
    assert rejected["row_number"].to_list() == [2, 4]
    assert json.loads(rejected["row"][0])["platform"] == "netscape"
    assert rejected["reason"][1] == "country: missing"


def test_custom_row_numbers_and_source_rows() -> None:
    rows = [suppression(), suppression(platform="netscape")]
    good, rejected = validate(
        rows, row_numbers=pl.Series([7, 9]), source_rows=pl.Series(['{"original": 1}', '{"original": 2}'])
    )
    assert rejected.row(0) == (9, rejected["reason"][0], '{"original": 2}')


def test_empty_frame() -> None:
    frame = pl.DataFrame(schema={name: pl.String for name in schema.SUPPRESSIONS_SCHEMA})
    good, rejected = validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert (good.height, rejected.height) == (0, 0)
    assert dict(good.schema) == schema.SUPPRESSIONS_SCHEMA


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        validate_rows(
            pl.DataFrame([suppression()]), schema.SUPPRESSIONS, now=NOW.replace(tzinfo=None), secret="s"
        )


# ---------------------------------------------------------------------------------------------
# Columns and tables


def test_missing_required_columns_reject_the_file() -> None:
    frame = pl.DataFrame([{k: v for k, v in suppression().items() if k not in ("ts", "domain")}])
    with pytest.raises(columns.ContractError, match="missing required columns: ts, domain"):
        validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET)


def test_unknown_columns_reject_the_file_with_a_hint() -> None:
    frame = pl.DataFrame([suppression(regoin="US-CA", note="x")])
    with pytest.raises(columns.ContractError) as caught:
        validate_rows(frame, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    message = str(caught.value)
    assert "unknown columns for table suppressions: 'regoin' (did you mean 'region'?), 'note'" in message


def test_detect_table() -> None:
    assert columns.detect_table(suppression()) == schema.SUPPRESSIONS
    assert columns.detect_table(change()) == schema.KEYWORD_CHANGES
    with pytest.raises(columns.ContractError, match="both"):
        columns.detect_table(["action", "suppressions"])
    with pytest.raises(columns.ContractError, match="neither"):
        columns.detect_table(["ts", "keyword"])


# ---------------------------------------------------------------------------------------------
# User ids


def test_user_ids_are_keyed_hashes() -> None:
    raw = pl.Series(["install-1", "install-2", "install-1", None])
    hashed = user_ids.hash_user_ids(raw, SECRET)
    assert hashed.dtype == pl.UInt64
    expected = int.from_bytes(hashlib.blake2b(b"install-1", key=SECRET.encode(), digest_size=8).digest(), "big")
    assert hashed.to_list()[0] == expected
    assert hashed[0] == hashed[2] != hashed[1]
    assert hashed[3] is None
    assert user_ids.hash_user_ids(raw, "another-secret")[0] != hashed[0]
    long_secret = "k" * 100  # longer than BLAKE2b's 64-byte key: condensed, still keyed
    assert user_ids.hash_user_ids(raw, long_secret)[0] != user_ids.hash_user_ids(raw, "k" * 64)[0]
    with pytest.raises(ValueError):
        user_ids.hash_user_ids(raw, "")


def test_each_distinct_user_id_is_hashed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = hashlib.blake2b

    def counting(data: bytes = b"", **kwargs: Any):
        calls.append(data)
        return real(data, **kwargs)

    monkeypatch.setattr(user_ids.hashlib, "blake2b", counting)
    user_ids.hash_user_ids(pl.Series([f"user-{i % 3}" for i in range(1000)]), SECRET)
    assert sorted(calls) == [b"user-0", b"user-1", b"user-2"]


def test_raw_user_ids_never_reach_the_good_rows() -> None:
    good, _ = validate([suppression(user_id="install-secret-id")])
    assert good.schema["user_id"] == pl.UInt64
    assert "install-secret-id" not in str(good.rows())


def test_validation_is_vectorised(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns are checked by polars expressions; Python runs once per distinct value where it must
    (a domain's verdict, a user id's keyed hash), never once per row and never as a per-row UDF.
    Its speed is measured in bench/bench_ingest.py."""
    rows = pl.DataFrame([suppression(user_id=f"u{i % 500}", keyword=f"kw {i % 300}", domain=f"site{i % 40}.com")
                         for i in range(2000)])
    big = pl.concat([rows] * 100)  # 200,000 rows

    def per_row(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a per-row Python function in validation")

    for owner in (pl.Expr, pl.Series):
        monkeypatch.setattr(owner, "map_elements", per_row)
    monkeypatch.setattr(pl.DataFrame, "iter_rows", per_row)
    verdicts, hashed = [], []
    real_verdict, real_hash = domains.domain_verdict, user_ids.hashlib.blake2b
    monkeypatch.setattr("service.store.row_checks.domain_verdict", lambda v: verdicts.append(v) or real_verdict(v))
    monkeypatch.setattr(user_ids.hashlib, "blake2b", lambda data=b"", **k: hashed.append(data) or real_hash(data, **k))
    good, rejected = validate_rows(big, schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert (good.height, rejected.height) == (200_000, 0)
    assert len(verdicts) == 40 and len(hashed) == 500
