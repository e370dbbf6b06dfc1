"""A tool result that shows part of an answer says so (issue 42): "5 of 9 rows" and how to get the
rest, from the API's Signals-Total-Rows header; a whole answer says nothing more. Against the API
in process (the document's operations, the real headers)."""

from __future__ import annotations

import httpx
import pytest

from connectors.client import SignalsClient
from connectors.mcp import privacy_notes
from connectors.mcp.tools import ok_result, part_note
from tests.support.api_server import BASE_URL, Ticker, make_app


@pytest.fixture
def api(fixture_data_dir, fixture_store, accounts, keys):
    app = make_app(fixture_data_dir, fixture_store, accounts, Ticker())
    with SignalsClient(BASE_URL, keys["professional"], transport=httpx.WSGITransport(app=app)) as client:
        yield client


def _note(api, name, arguments):
    reply = api.fetch(name, arguments)
    return part_note(api.operation(name), reply, arguments), reply


def _result(api, name, arguments, reply, part=None):
    """The tool result of `reply` as the server makes it (the privacy notes without the budget)."""
    notes = privacy_notes.notes(api.operation(name), reply.body, arguments, None)
    return ok_result(reply.body, notes, reply.as_of, part=part)


def test_a_ranking_page_says_how_many_and_the_next_offset(api):
    note, reply = _note(api, "top_keywords", {"window": "24h", "limit": 5})
    assert note == f"This answer shows 5 of {reply.total_rows} rows; call again with offset=5 for the next ones."
    result = _result(api, "top_keywords", {"window": "24h", "limit": 5}, reply, note)
    assert [c.text for c in result.content[1:]] == [f"Numbers as of {reply.headers['x-signals-as-of']} (UTC).", note]
    later, _ = _note(api, "top_keywords", {"window": "24h", "limit": 3, "offset": 3})
    assert later.startswith("This answer shows 3 of ") and "(rows 4 to 6)" in later and "offset=6" in later


def test_a_query_says_how_many_and_to_ask_for_more(api):
    note, reply = _note(api, "query", {"window": "7d", "group_by": ["keyword", "platform"], "limit": 4})
    assert note.startswith(f"This answer shows 4 of {reply.total_rows} rows, the first by suppressions")
    assert "larger limit (at most 1000)" in note


def test_a_whole_answer_says_nothing_more(api):
    assert _note(api, "top_keywords", {"window": "24h", "limit": 500})[0] is None
    assert _note(api, "geo_heat", {"window": "24h"})[0] is None
    reply = api.fetch("geo_heat", {"window": "24h"})
    assert len(_result(api, "geo_heat", {"window": "24h"}, reply).content) == 2
