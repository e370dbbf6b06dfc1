"""Paging (issue 42): every ranked answer says how many rows the full answer holds
(`Signals-Total-Rows`) and where the next page is (`Link: <...>; rel="next"`, RFC 8288). Over HTTP:

- following the links from the first page gives exactly the un-paged answer's rows, in its order,
  with the same numbers (ranks continue), on the exact stage and with the real noise;
- the body of a request without `offset` is what it was (offset=0 is the same request);
- POST /query's next page is `/query?cursor=...` with the same body; a cursor posted with another
  body, or one this API did not issue, is a 400 naming `cursor`;
- answers that are whole (geo-heat, time series) say their total and give no link.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from urllib.parse import parse_qsl, urlsplit

import falcon.testing
import pytest

from cache import LocalGate
from service.api.paging import CursorError, make_cursor, next_offset, read_cursor
from service.app import create_app
from service.clock import FixedClock
from service.demo.generate import generate_demo
from service.engine.requests import TopKeywords
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.http import assert_problem, auth, get, post_query
from tests.support.spec_table import BASE

LINK = re.compile(r'^<(?P<url>[^>]+)>; rel="next"$')


def _next_url(result: falcon.testing.Result) -> str | None:
    link = result.headers.get("link")
    if link is None:
        return None
    match = LINK.match(link)
    assert match, link
    return match["url"]


def _follow_get(client, key: str, path: str, query: dict, field: str) -> tuple[list[dict], list[int]]:
    """Every page from the first, by the Link headers: the rows, and each page's Signals-Total-Rows."""
    result = get(client, path, key, query)
    rows, totals = [], []
    while True:
        assert result.status_code == 200, result.text
        rows += result.json[field]
        totals.append(int(result.headers["signals-total-rows"]))
        url = _next_url(result)
        if url is None:
            return rows, totals
        parts = urlsplit(url)
        assert parts.path == BASE + path and not parts.netloc  # an absolute path on the same server
        result = client.simulate_get(parts.path, query_string=parts.query, headers=auth(key))


def _follow_query(client, key: str, body: dict) -> tuple[list[dict], list[int], list[str]]:
    result = post_query(client, key, body)
    rows, totals, urls = [], [], []
    while True:
        assert result.status_code == 200, result.text
        rows += result.json["results"]
        totals.append(int(result.headers["signals-total-rows"]))
        url = _next_url(result)
        if url is None:
            return rows, totals, urls
        urls.append(url)
        parts = urlsplit(url)
        assert parts.path == BASE + "/query" and [name for name, _ in parse_qsl(parts.query)] == ["cursor"]
        result = client.simulate_post(parts.path, query_string=parts.query, json=body, headers=auth(key))


@pytest.mark.parametrize("path, query, field", [
    ("/top-keywords", {"window": "30d", "limit": "3"}, "keywords"),
    ("/top-keywords", {"window": "30d", "limit": "2", "compare": "previous_period", "intervals": "true"}, "keywords"),
    ("/keyword-activity", {"window": "30d", "limit": "2"}, "keywords"),
    ("/keyword-activity", {"window": "30d", "limit": "1", "type": "added"}, "keywords"),
    ("/trending", {"window": "30d", "limit": "1", "min_baseline": "0"}, "trending"),
])
def test_following_the_links_gives_the_unpaged_answer(client, keys, path, query, field):
    whole = get(client, path, keys["professional"], {**query, "limit": "500"})
    assert whole.status_code == 200
    expected = whole.json[field]
    assert int(whole.headers["signals-total-rows"]) == len(expected)  # all of it fits in 500
    assert "link" not in whole.headers
    rows, totals = _follow_get(client, keys["professional"], path, query, field)
    assert rows == expected
    assert set(totals) == {len(expected)}
    assert len(totals) == max(1, -(-len(expected) // int(query["limit"])))  # pages of `limit` rows
    assert len(expected) > int(query["limit"]), "the fixture must give more than one page here"


def test_the_first_page_says_how_many_rows_and_where_the_rest_is(client, keys):
    result = get(client, "/top-keywords", keys["observer"], "window=30d&limit=2")
    total = int(result.headers["signals-total-rows"])
    assert len(result.json["keywords"]) == 2 < total
    url = urlsplit(_next_url(result))
    assert parse_qsl(url.query) == [("window", "30d"), ("limit", "2"), ("offset", "2"),
                                    ("as_of", result.headers["x-signals-as-of"])]
    second = client.simulate_get(url.path, query_string=url.query, headers=auth(keys["observer"]))
    assert [r["rank"] for r in second.json["keywords"]] == [3, 4]


def test_without_offset_the_body_is_what_it_was(client, keys):
    plain = get(client, "/top-keywords", keys["observer"], "window=30d&limit=3")
    assert get(client, "/top-keywords", keys["observer"], "window=30d&limit=3&offset=0").content == plain.content
    assert list(plain.json) == ["window", "keywords", "disclaimer"]  # no new member in the body
    assert plain.headers["etag"] == get(client, "/top-keywords", keys["observer"], "window=30d&limit=3").headers["etag"]


def test_a_cached_page_keeps_its_total_and_link(client, keys):
    first = get(client, "/keyword-activity", keys["observer"], "window=30d&limit=1&offset=1")
    again = get(client, "/keyword-activity", keys["observer"], "window=30d&limit=1&offset=1")
    assert (first.headers["x-cache"], again.headers["x-cache"]) == ("miss", "hit")
    for header in ("signals-total-rows", "link"):
        assert again.headers[header] == first.headers[header]
    assert "offset=2" in again.headers["link"]


def test_past_the_last_row_the_page_is_empty_and_says_the_total(client, keys):
    total = int(get(client, "/top-keywords", keys["observer"], "window=30d").headers["signals-total-rows"])
    result = get(client, "/top-keywords", keys["observer"], f"window=30d&offset={total}")
    assert result.json["keywords"] == [] and int(result.headers["signals-total-rows"]) == total
    assert "link" not in result.headers


@pytest.mark.parametrize("bad", ["-1", "x", "1.5", "1000000001"])
def test_offset_is_validated(client, keys, bad):
    assert_problem(get(client, "/top-keywords", keys["observer"], f"offset={bad}"), 400, "offset")


@pytest.mark.parametrize("path, query, field", [
    ("/geo-heat", "window=30d&level=region", "regions"),
    ("/keyword-timeseries", "keyword=bitcoin&window=7d&bucket=day", "timeseries"),
])
def test_a_whole_answer_says_its_total_and_has_no_link(client, keys, path, query, field):
    result = get(client, path, keys["observer"], query)
    assert int(result.headers["signals-total-rows"]) == len(result.json[field]) > 0
    assert "link" not in result.headers
    assert_problem(get(client, path, keys["observer"], query + "&offset=1"), 400, "offset")


QUERY = {"window": "30d", "group_by": ["keyword", "platform"], "order_by": "events", "limit": 3}


def test_query_pages_by_cursor_with_the_same_body(client, keys):
    whole = post_query(client, keys["analyst"], {**QUERY, "limit": 1000})
    expected = whole.json["results"]
    assert int(whole.headers["signals-total-rows"]) == len(expected) > 3
    rows, totals, urls = _follow_query(client, keys["analyst"], QUERY)
    assert rows == expected and set(totals) == {len(expected)}
    assert len(urls) == -(-len(expected) // 3) - 1
    first = post_query(client, keys["analyst"], QUERY)
    assert len(first.json["results"]) == 3 and list(first.json) == ["window", "bucket", "group_by", "results",
                                                                     "disclaimer"]


def test_query_csv_pages_too(client, keys):
    body = {**QUERY, "format": "csv"}
    first = post_query(client, keys["analyst"], body)
    assert first.headers["content-type"].startswith("text/csv")
    url = urlsplit(_next_url(first))
    second = client.simulate_post(url.path, query_string=url.query, json=body, headers=auth(keys["analyst"]))
    header, *rows = list(csv.reader(io.StringIO(second.content.decode("utf-8-sig"))))
    assert header == ["keyword", "platform", "suppressions", "unique_users", "events"] and len(rows) == 3
    assert second.headers["signals-total-rows"] == first.headers["signals-total-rows"]


def test_a_cursor_with_another_body_or_not_issued_is_refused(client, keys):
    url = urlsplit(_next_url(post_query(client, keys["analyst"], QUERY)))
    other = client.simulate_post(url.path, query_string=url.query, json={**QUERY, "order_by": "suppressions"},
                                 headers=auth(keys["analyst"]))
    problem = assert_problem(other, 400, "cursor")
    assert "same body" in problem["errors"][0]["reason"]
    # The limit is part of the query too: a page of another size would not follow this one.
    assert_problem(client.simulate_post(url.path, query_string=url.query, json={**QUERY, "limit": 4},
                                        headers=auth(keys["analyst"])), 400, "cursor")
    for garbage in ("abc", "eyJvIjotMX0", "%%%"):
        result = client.simulate_post(url.path, query_string=f"cursor={garbage}", json=QUERY,
                                      headers=auth(keys["analyst"]))
        assert "Link" in assert_problem(result, 400, "cursor")["errors"][0]["reason"]
    # Any other query parameter is still refused (the cursor is the one that is not a body field).
    assert_problem(client.simulate_post(url.path, query_string=url.query + "&limit=5", json=QUERY,
                                        headers=auth(keys["analyst"])), 400, "limit")


def test_a_cursor_keeps_the_first_pages_as_of(client, keys):
    current = dt.datetime.fromisoformat(post_query(client, keys["analyst"], QUERY).headers["x-signals-as-of"])
    past = (current - dt.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    first = post_query(client, keys["analyst"], {**QUERY, "as_of": past})
    assert first.headers["x-signals-as-of"] == past
    url = urlsplit(_next_url(first))
    # The body without as_of: the cursor holds it.
    second = client.simulate_post(url.path, query_string=url.query, json=QUERY, headers=auth(keys["analyst"]))
    assert second.status_code == 200 and second.headers["x-signals-as-of"] == past
    # The same as_of in the body is the same request; another is refused.
    assert client.simulate_post(url.path, query_string=url.query, json={**QUERY, "as_of": past},
                                headers=auth(keys["analyst"])).content == second.content
    other = {**QUERY, "as_of": (current - dt.timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    assert_problem(client.simulate_post(url.path, query_string=url.query, json=other,
                                        headers=auth(keys["analyst"])), 400, "cursor")


# ---- the pure parts -----------------------------------------------------------------------------

def test_cursor_round_trip_and_refusals():
    request = TopKeywords(window="24h", limit=10)
    as_of = dt.datetime(2026, 11, 20, 13, tzinfo=dt.UTC)
    cursor = read_cursor(make_cursor(30, as_of, request))
    assert (cursor.offset, cursor.as_of) == (30, "2026-11-20T13:00:00Z")
    for text in ("", "not base64!", "e30", "eyJvIjp0cnVlLCJhIjoiIiwicSI6IiJ9"):  # {} and {"o":true,...}
        with pytest.raises(CursorError):
            read_cursor(text)


def test_next_offset():
    assert next_offset(TopKeywords(window="24h", limit=10), 25) == 10
    assert next_offset(TopKeywords(window="24h", limit=10, offset=20), 25) is None
    assert next_offset(TopKeywords(window="24h", limit=10, offset=10), 20) is None
    assert next_offset(TopKeywords(window="24h", limit=10), None) is None


# ---- with the real noise ------------------------------------------------------------------------

DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory, accounts):
    data_dir = tmp_path_factory.mktemp("paging-demo")
    generate_demo(data_dir, events=40_000, days=10, seed=7, end=DEMO_END, secret="test", progress=False)
    settings = Settings(data_dir=data_dir, secret="paging-test-secret", cache_responses=False)
    return falcon.testing.TestClient(create_app(settings, clock=FixedClock(DEMO_END + dt.timedelta(minutes=5)),
                                                store=EventStore(data_dir), accounts=accounts, gate=LocalGate()))


def test_with_noise_every_page_has_the_unpaged_numbers(noisy, keys):
    body = {"window": "7d", "group_by": ["region", "time"], "bucket": "day", "limit": 40}
    whole = post_query(noisy, keys["analyst"], {**body, "limit": 1000}).json["results"]
    rows, totals, _ = _follow_query(noisy, keys["analyst"], body)
    assert rows == whole and len(whole) > 40 and set(totals) == {len(whole)}
    ranked, _ = _follow_get(noisy, keys["observer"], "/top-keywords", {"window": "7d", "limit": "7"}, "keywords")
    assert ranked == get(noisy, "/top-keywords", keys["observer"], "window=7d&limit=500").json["keywords"]


def test_offset_zero_is_the_same_request_and_cache_entry(client, keys):
    first = get(client, "/trending", keys["observer"], "window=30d&min_baseline=0")
    again = get(client, "/trending", keys["observer"], "window=30d&min_baseline=0&offset=0")
    assert (first.headers["x-cache"], again.headers["x-cache"]) == ("miss", "hit")
    assert again.content == first.content and again.headers["etag"] == first.headers["etag"]


def test_the_document_describes_paging(client):
    doc = client.simulate_get("/api/v1/openapi").json
    for path, methods in doc["paths"].items():
        if not path.startswith(BASE):
            continue
        for method, operation in methods.items():
            headers = operation["responses"]["200"]["headers"]
            assert headers["Signals-Total-Rows"]["schema"] == {"type": "integer", "minimum": 0}, path
            paged = path.rsplit("/", 1)[1] in ("top-keywords", "trending", "keyword-activity", "query")
            assert ("Link" in headers) == paged, path
            names = [p["name"] for p in operation.get("parameters", [])]
            if method == "post":
                assert names == ["cursor"] and operation["parameters"][0]["in"] == "query"
            else:
                assert ("offset" in names) == paged, path
