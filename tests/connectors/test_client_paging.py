"""The client fetches every page of an answer (issue 42): `all_pages=True` / `fetch_all` follow the
Link headers (GET with offset, POST /query with the cursor and the same body) and join the rows;
`Reply.total_rows` and `rows_text` say how many of how many."""

from __future__ import annotations

import httpx
import pytest

from connectors.client import SignalsClient, SignalsError, next_link, rows_text
from tests.support.api_server import BASE_URL, Recorder, Ticker, make_app


@pytest.fixture
def connect(fixture_data_dir, fixture_store, accounts):
    ticker = Ticker()
    app = make_app(fixture_data_dir, fixture_store, accounts, ticker)
    made = []

    def make(key: str) -> SignalsClient:
        recorder = Recorder(httpx.WSGITransport(app=app))
        client = SignalsClient(BASE_URL, key, transport=recorder, sleep=ticker.sleep)
        client.recorder = recorder
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_all_pages_of_a_ranking_are_the_whole_answer(connect, keys):
    api = connect(keys["observer"])
    whole = api.top_keywords(window="30d", limit=500)["keywords"]
    first = api.fetch("top_keywords", {"window": "30d", "limit": 2})
    assert first.total_rows == len(whole) > 2 and first.next_page is not None
    paged = api.fetch_all("top_keywords", {"window": "30d", "limit": 2})
    assert paged.body["keywords"] == whole and paged.pages == -(-len(whole) // 2)
    assert paged.total_rows == len(whole) and "link" not in paged.headers
    assert api.top_keywords(window="30d", limit=2, all_pages=True)["keywords"] == whole
    assert api.keyword_activity(window="30d", limit=1, all_pages=True, frame=True).height == \
        api.fetch("keyword_activity", {"window": "30d"}).total_rows


def test_all_pages_of_a_query_post_the_same_body(connect, keys):
    api = connect(keys["analyst"])
    body = {"window": "30d", "group_by": ["keyword", "platform"], "limit": 4}
    whole = api.query(**{**body, "limit": 1000})["results"]
    assert api.query(**body, all_pages=True)["results"] == whole
    posts = [r for r in api.recorder.requests if r.method == "POST"]
    assert len(posts) == 1 + -(-len(whole) // 4)
    assert all(r.content == posts[1].content for r in posts[2:])  # the same body each time
    assert [r.url.params.get("cursor") is not None for r in posts[-3:]] == [True, True, True]
    text = api.query(**body, format="csv", all_pages=True)
    lines = text.lstrip("\ufeff").splitlines()
    assert lines[0] == "keyword,platform,suppressions,unique_users,events" and len(lines) == 1 + len(whole)
    assert api.query(**body, all_pages=True, frame=True).height == len(whole)


def test_more_pages_than_allowed_is_an_error_not_a_part(connect, keys):
    api = connect(keys["observer"])
    with pytest.raises(SignalsError, match="more than 2 pages"):
        api.fetch_all("top_keywords", {"window": "30d", "limit": 1}, max_pages=2)


def test_link_and_rows_text():
    assert next_link('<https://x/a?offset=2>; rel="next"') == "https://x/a?offset=2"
    assert next_link('</a?o=1>; rel="prev", </a?o=3>; rel=next') == "/a?o=3"
    assert next_link('</a>; rel="prev"') is None and next_link(None) is None
    assert rows_text(100, 390) == "100 of 390 rows"
    assert rows_text(390, 390) == "390 rows" and rows_text(1, None) == "1 row" and rows_text(2, None) == "2 rows"
