"""The privacy budget as the consumers show it: the client's `Reply.privacy_budget` and its refusal
(raised at once, never waited for), the MCP tools' lines, the Sheets run log's column (connectors/privacy_budget.py;
the dashboard's account page: tests/dashboard/test_dashboard_pages.py)."""

from __future__ import annotations

import httpx
import pytest

from cache import LocalGate
from connectors import privacy_budget
from connectors.client import SignalsClient, SignalsError
from connectors.mcp.tools import error_result, ok_result
from connectors.report import Cell
from connectors.sheets.runner import Outcome, run_log_row
from connectors.sheets.spec import ReportSpec
from connectors.sheets.writer import RUN_LOG_HEADER
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from tests.support.api_server import BASE_URL, Recorder, Ticker
from tests.support.fixture_data import FIXTURE_NOW

HEADER = 'remaining=99.250, limit=100.000, spent=0.750, charged=0.750, renews="2026-12-01T00:00:00Z"'


def test_the_header_is_read_into_numbers():
    budget = privacy_budget.read({"Signals-Privacy-Budget": HEADER})
    assert budget == privacy_budget.PrivacyBudget(99.25, 100.0, 0.75, 0.75, "2026-12-01T00:00:00Z")
    assert budget.text() == "privacy budget: 0.8 of 100 epsilon spent this month (this answer 0.8), renews 2026-12-01"
    assert privacy_budget.read({}) is None
    assert privacy_budget.read({"signals-privacy-budget": "remaining=lots"}) is None
    assert privacy_budget.is_refusal({"type": "urn:signals:problem:privacy-budget"})
    assert not privacy_budget.is_refusal({"type": "urn:signals:problem:rate-limited"})


def _client(fixture_data_dir, fixture_store, accounts, budget: float):
    app = create_app(Settings(data_dir=fixture_data_dir, secret="consumers", privacy_budget=budget),
                     clock=FixedClock(FIXTURE_NOW), store=fixture_store, accounts=accounts, gate=LocalGate(clock=Ticker()))
    recorder = Recorder(httpx.WSGITransport(app=app))
    key = accounts.create_key(Tier.PROFESSIONAL)[0]
    return SignalsClient(BASE_URL, key, transport=recorder, sleep=lambda _s: None), recorder


def test_the_client_shows_the_budget_of_every_answer(fixture_data_dir, fixture_store, accounts):
    client, _ = _client(fixture_data_dir, fixture_store, accounts, 1e6)
    with client:
        reply = client.fetch("top_keywords", {"window": "7d"})
        assert reply.privacy_budget is not None and reply.privacy_budget.charged > 0
        assert reply.privacy_budget.limit == 1e6
        again = client.fetch("top_keywords", {"window": "7d", "limit": 5})
        assert again.privacy_budget.charged == 0 and again.privacy_budget.spent == reply.privacy_budget.spent


def test_a_refusal_by_the_budget_is_raised_at_once_not_waited_for(fixture_data_dir, fixture_store, accounts):
    client, recorder = _client(fixture_data_dir, fixture_store, accounts, 0.001)
    with client, pytest.raises(SignalsError) as refused:
        client.fetch("top_keywords", {"window": "7d"})
    error = refused.value
    assert error.status == 429 and privacy_budget.is_refusal(error.problem)
    assert error.problem["privacy_budget"]["limit"] == 0.001 and error.retry_after > 60
    assert recorder.statuses.count(429) == 1  # one request: the month does not renew in a retry


def test_mcp_tools_say_what_the_answer_spent_and_why_a_refusal_is_not_a_rate_limit():
    budget = privacy_budget.read({"signals-privacy-budget": HEADER})
    result = ok_result({"keywords": []}, {"budget": budget.as_dict()})
    assert result.content[-1].text.startswith("Privacy budget: 0.8 of 100 epsilon spent")
    # the API's body, unchanged, and beside it the budget's numbers (connectors/mcp/privacy_notes.py)
    assert result.structured_content == {"keywords": [], "privacy": {"budget": budget.as_dict()}}
    problem = {"type": "urn:signals:problem:privacy-budget", "title": "Privacy budget spent", "status": 429,
               "detail": "This answer would cost ...", "privacy_budget": {"limit": 100.0}}
    refused = error_result(problem, retry_after=86_400)
    assert refused.is_error and "privacy budget for the month is spent: it renews in 86400 s" in refused.content[0].text
    assert "Rate limited" not in refused.content[0].text
    limited = error_result({"type": "urn:signals:problem:rate-limited", "title": "Rate limit exceeded",
                            "status": 429, "detail": "..."}, retry_after=7)
    assert "Rate limited: retry in 7 s." in limited.content[0].text


def test_the_sheets_run_log_has_a_budget_column():
    spec = ReportSpec(endpoint="top-keywords", params={"window": "7d"}, spreadsheet="1AbC", worksheet="Top")
    row = run_log_row(Cell("now"),
                      Outcome(spec, "written", "10 rows", 10, budget="privacy budget: 1.0 of 100 epsilon ..."))
    assert RUN_LOG_HEADER[-1] == "privacy budget" and len(row) == len(RUN_LOG_HEADER)
    assert row[-1].value == "privacy budget: 1.0 of 100 epsilon ..."
