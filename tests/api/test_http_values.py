"""End to end on the fixture data: HTTP in, exact aggregates out (the fixture's documented values).

The engine tests check every aggregate in depth; these check that the HTTP layer passes the
right request to the engine and renders its answer faithfully."""

from __future__ import annotations

from tests.support.http import get, post_query

TOP_24H = [("elon musk", 80), ("snakes", 72), ("weather", 47), ("tiny", 44), ("spoilers", 42),
           ("ai art", 30), ("crypto", 30), ("bitcoin", 15), ("fresh", 3)]


def test_top_keywords_24h_exact(client, keys):
    body = get(client, "/top-keywords", keys["observer"]).json
    assert [(k["keyword_raw"], k["suppressions"]) for k in body["keywords"]] == TOP_24H
    assert [k["rank"] for k in body["keywords"]] == list(range(1, len(TOP_24H) + 1))


def test_top_keywords_limit_cuts_the_ranking(client, keys):
    body = get(client, "/top-keywords", keys["observer"], {"limit": "3"}).json
    assert [k["keyword_raw"] for k in body["keywords"]] == ["elon musk", "snakes", "weather"]


def test_query_by_keyword_agrees_with_top_keywords(client, keys):
    rows = post_query(client, keys["analyst"], {"window": "24h", "group_by": ["keyword"], "limit": 1000}).json["results"]
    assert sorted((r["keyword"], r["suppressions"]) for r in rows) == sorted(TOP_24H)


def test_keyword_timeseries_sums_to_the_window_total(client, keys):
    for keyword, total in TOP_24H:
        series = get(client, "/keyword-timeseries", keys["observer"],
                     {"keyword": keyword.upper(), "window": "24h"}).json["timeseries"]
        assert sum(b["suppressions"] for b in series) == total, keyword


def test_trending_finds_the_burst(client, keys):
    body = get(client, "/trending", keys["observer"]).json
    assert body["trending"][0]["value"] == "snakes"
    assert body["trending"][0]["growth_pct"] == 1400.0
    values = [t["value"] for t in body["trending"]]
    assert "tiny" not in values and "fresh" not in values  # baseline below 10 / no baseline


def test_keyword_activity_invariants(client, keys):
    for kind in ("all", "added", "removed", "edited"):
        for record in get(client, "/keyword-activity", keys["observer"], {"window": "7d", "type": kind}).json["keywords"]:
            assert record["net_adds"] == record["adds"] - record["removes"]
            assert record["total_events"] == record["adds"] + record["removes"] + record["edits"]


def test_geo_heat_levels_use_real_labels(client, keys):
    labels = {level: {r["geo_key"]: r["label"] for r in get(client, "/geo-heat", keys["observer"],
                                                            {"window": "30d", "level": level}).json["regions"]}
              for level in ("country", "region", "county", "city")}
    assert labels["country"]["US"] == "United States" and labels["country"]["DE"] == "Germany"
    assert labels["region"]["US-CA"] == "California"
    assert "Los Angeles" in labels["county"]["06037"]
    assert "Berlin" in labels["city"]["2950159"]
    assert "GB" not in labels["region"]  # no finer geography for that event
