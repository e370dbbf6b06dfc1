"""A body's lines checked by the ingest contract (service/collector/events.py)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.collector.events import check_body
from service.store import schema
from service.store.validate import validate_rows
from tests.support.collector_events import NOW, SECRET, keyword_change, ndjson, suppression, ts


def check(body: bytes, late_hours: int = 48):
    return check_body(body, now=NOW, secret=SECRET, late_hours=late_hours)


def reasons(checked) -> dict[int, str]:
    return dict(zip(checked.rejected["line"].to_list(), checked.rejected["reason"].to_list(), strict=True))


def test_good_lines_of_both_tables_come_out_in_the_stored_schema_with_their_ids():
    checked = check(ndjson([suppression("s1"), keyword_change("k1"), suppression("s2", keyword="  Two  Words ")]))
    assert checked.accepted == 3 and checked.rejected.is_empty() and checked.duplicates == 0
    sup = checked.frames[schema.SUPPRESSIONS]
    assert dict(sup.schema) == {"event_id": pl.String(), **schema.SUPPRESSIONS_SCHEMA}
    assert sup["event_id"].to_list() == ["s1", "s2"]
    assert sup["keyword"].to_list() == ["crypto", "two words"]  # the contract's normalisation
    assert sup["domain"].to_list() == ["reddit.com", "reddit.com"]
    assert checked.frames[schema.KEYWORD_CHANGES]["event_id"].to_list() == ["k1"]


def test_mixed_good_and_bad_lines_each_bad_one_with_its_line_and_reason():
    body = ndjson([
        suppression("s1"),
        suppression("s2", platform="netscape"),
        "{not json",
        keyword_change("k1", domain="x.com"),
        suppression("s3", type="click"),
        suppression(None),
        suppression("x" * 65),
        suppression("s4", colour="red"),
        suppression(7),
        keyword_change("k2"),
    ])
    checked = check(body)
    assert checked.accepted == 2
    got = reasons(checked)
    assert set(got) == {2, 3, 4, 5, 6, 7, 8, 9}
    assert got[2].startswith("platform: 'netscape' is not one of chrome")
    assert got[3].startswith("invalid JSON")
    assert got[4] == "'domain' is not a field of a keyword_change event"
    assert got[5] == "type: 'click' is not one of suppression, keyword_change"
    assert got[6] == "event_id: missing"
    assert got[7] == "event_id: 65 characters, at most 64 allowed"
    assert got[8] == "unknown field 'colour'"
    assert got[9] == "event_id: expected text, got a number"


def test_a_bad_value_is_rejected_with_the_same_reason_as_file_ingest():
    bad = suppression("s1", suppressions=2.5, country="XX")
    checked = check(ndjson([bad]))
    row = {k: v for k, v in bad.items() if k not in ("event_id", "type")}
    _good, rejected = validate_rows(pl.DataFrame([row]), schema.SUPPRESSIONS, now=NOW, secret=SECRET)
    assert reasons(checked)[1] == rejected["reason"][0]


def test_an_event_id_and_a_value_problem_are_reported_together():
    checked = check(ndjson([suppression(None, platform="netscape")]))
    assert reasons(checked)[1].startswith("event_id: missing; platform: 'netscape'")


def test_a_missing_required_field_rejects_the_line_not_the_body():
    event = keyword_change("k1")
    del event["action"]
    checked = check(ndjson([event, keyword_change("k2")]))
    assert reasons(checked) == {1: "action: missing"} and checked.accepted == 1


def test_late_events_within_the_window_are_accepted_older_ones_rejected_with_the_reason():
    checked = check(ndjson([suppression("in", ts=ts(47)), suppression("out", ts=ts(49)),
                            keyword_change("kout", ts=ts(49))]), late_hours=48)
    assert checked.frames[schema.SUPPRESSIONS]["event_id"].to_list() == ["in"]
    got = reasons(checked)
    assert set(got) == {2, 3}
    assert "older than the lateness window (48 hours" in got[2] and "SIGNALS_LATE_HOURS" in got[2]
    assert check(ndjson([suppression("out", ts=ts(49))]), late_hours=72).accepted == 1


def test_the_same_id_twice_in_one_body_is_one_event_and_one_duplicate():
    checked = check(ndjson([suppression("a"), keyword_change("a"), suppression("b"), suppression("a")]))
    assert checked.accepted == 2 and checked.duplicates == 2
    assert checked.frames[schema.SUPPRESSIONS]["event_id"].to_list() == ["a", "b"]
    assert checked.frames[schema.KEYWORD_CHANGES].is_empty()


def test_a_rejected_line_does_not_make_a_later_good_line_with_its_id_a_duplicate():
    checked = check(ndjson([suppression("a", platform="netscape"), suppression("a")]))
    assert checked.accepted == 1 and checked.duplicates == 0


def test_values_of_mixed_json_types_keep_their_type():
    checked = check(ndjson([suppression("s1"), suppression("s2", keyword=True)]))
    assert reasons(checked) == {2: "keyword: expected text, got a boolean"}


def test_a_future_event_is_refused_as_in_file_ingest():
    future = (NOW + dt.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    checked = check(ndjson([suppression("f", ts=future)]))
    assert "is in the future" in reasons(checked)[1]
