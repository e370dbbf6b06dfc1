"""Pure parts of the dashboard's URL state and comparisons: reading controls from a query string,
the change labels, the compared table, and the figures' previous-period and interval traces."""

from __future__ import annotations

import pytest

from connectors.operations import Operations, Parameter
from dashboard import api, figures, ui, view_state
from service.api.openapi import build_openapi
from tests.support.layouts import texts


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Operations:
    """The API's document as the dashboard reads it (its interval level, "90 %", says how wide)."""
    operations = Operations.from_openapi(build_openapi())
    monkeypatch.setattr(api, "operations", lambda: operations)
    return operations


LIMIT = Parameter("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 50})
BASELINE = Parameter("min_baseline", {"type": "number", "minimum": 0, "default": 10})


def test_values_from_the_url_or_the_default():
    assert view_state.pick({"window": "7d"}, "window", ["24h", "7d"], "24h") == "7d"
    assert view_state.pick({"window": "2w"}, "window", ["24h", "7d"], "24h") == "24h"
    assert view_state.pick({}, "window", ["24h", "7d"], "24h") == "24h"
    assert view_state.number({"limit": "25"}, "limit", LIMIT) == 25
    for bad in ("0", "501", "2.5", "nan", "ten", ""):
        assert view_state.number({"limit": bad}, "limit", LIMIT) == 50, bad
    assert view_state.number({"min_baseline": "2.5"}, "min_baseline", BASELINE) == 2.5
    assert view_state.flag({"compare": "previous_period"}, "compare", "previous_period") == ["previous_period"]
    assert view_state.flag({"compare": "yes"}, "compare", "previous_period") == []
    assert view_state.text({"as_of": "x" * 100}, "as_of", 40) == "x" * 40


def test_period_arguments_and_change_labels():
    assert ui.period_arguments(["previous_period"], ["true"], " 2026-03-03T12:00:00Z ") == {
        "compare": "previous_period", "intervals": True, "as_of": "2026-03-03T12:00:00Z"}
    assert ui.period_arguments([], [], "") == {}
    assert ui.change_text({"pct": 12.345, "beyond_noise": True}) == ("▲ 12.3 % · beyond noise", "beyond-noise")
    assert ui.change_text({"pct": -3.1, "beyond_noise": False}) == ("▼ 3.1 % · within noise", "within-noise")
    assert ui.change_text({"pct": None, "beyond_noise": True}) == ("new (previously 0) · beyond noise", "beyond-noise")


def test_a_records_table_stacks_change_previous_and_interval_under_each_count(served):
    rows = [{"label": "Greece", "geo_key": "GR", "suppressions": 12000, "events": 0, "previous": {"suppressions": 10000, "events": 92},
             "change": {"suppressions": {"pct": 20.0, "beyond_noise": False}, "events": {"pct": -100.0, "beyond_noise": True}},
             "intervals": {"suppressions": [11000, 13000], "events": [0, 40]}}]
    table = ui.records_table(rows, ["label", "suppressions", "events"], ["suppressions", "events"],
                             details={"label": "geo_key"})
    head = table.children[1].children.children
    assert [texts(th) for th in head] == ["place", "suppressions", "events"]  # three columns, not nine
    assert table.children[0].children.startswith(
        "Under each count: its change and the previous period's value and its 90 % interval. 'beyond noise': ")
    assert ui.VERDICTS in table.children[0].children and "Marks (hover one)" in table.children[0].children
    label, suppressions, events = table.children[2].children[0].children
    assert texts(label) == "Greece GR"
    # the change from the value before on one line, the verdict on the next (issue 42: no line wraps)
    assert texts(suppressions) == "12,000 ▲ 20.0 % from 10,000 within noise 90 %: 11,000–13,000"
    assert suppressions.title == "12,000"
    change = suppressions.children[1]
    assert change.className == "sub change within-noise" and "True" not in texts(table) + texts(head)
    # events: 0 beside a non-zero count, −100 % from it: both marked, with the shared wording
    marks = [c for line in events.children for c in (line.children if isinstance(line.children, list) else [])
             if getattr(c, "className", None) == "mark"]
    assert [m.children for m in marks] == ["suppressed?", "now 0"]
    assert marks[0].title.startswith("Events shows 0 while this row's other counts do not")
    plain = ui.records_table([{"label": "A", "suppressions": 1}], ["label", "suppressions"], ["suppressions"])
    assert [texts(th) for th in plain.children[0].children.children] == ["place", "suppressions"]  # no caption


def test_cells_never_show_python_literals_and_times_read():
    assert ui.cell_text(True) == "yes" and ui.cell_text(None) == "" and ui.cell_text(17057) == "17,057"
    assert ui.cell_text("2026-03-10T12:00:00Z") == "2026-03-10 12:00" and ui.cell_text(250.333, "growth_pct") == "+250.3 %"
    assert ui.cell_text(75.0, "threshold_pct") == "75 %"


def test_figures_draw_the_previous_period_and_intervals(served):
    point = {"ts": "2026-03-09T00:00:00Z", "suppressions": 10, "previous": {"suppressions": 4},
             "intervals": {"suppressions": [8, 12]}}
    figure = figures.timeseries_figure([{"keyword": "k", "window": "7d", "bucket": "day", "timeseries": [point]}],
                                       interval_words=api.interval_words())
    traces = {t.name: t for t in figure.data}
    assert list(traces["k, previous period"].y) == [4] and traces["k, previous period"].line.dash == "dot"
    assert list(traces["k, 90 % interval"].y) == [12, 8]
    activity = {"window": "7d", "type": "all", "keywords": [
        {"keyword": "k", "adds": 3, "removes": 1, "edits": 0, "previous": {"adds": 1, "removes": 2, "edits": 0}}]}
    bars = {t.name: t for t in figures.activity_figure(activity).data}
    assert list(bars["adds, previous period"].x) == [1] and bars["adds, previous period"].opacity < 1
    assert bars["adds"].offsetgroup == "now" and bars["adds, previous period"].offsetgroup == "previous"
    plain = figures.activity_figure({**activity, "keywords": [{"keyword": "k", "adds": 3, "removes": 1, "edits": 0}]})
    assert [t.name for t in plain.data] == ["adds", "removes", "edits"]


def test_a_failed_call_says_it_in_words_and_carries_the_apis_problem():
    from connectors.client import SignalsError

    problem = {"type": "urn:signals:problem:rate-limited", "title": "Rate limit exceeded", "status": 429,
               "detail": "30 requests per minute.", "request_id": "req-1", "disclaimer": "Estimates."}
    box = ui.failure_box(SignalsError(429, problem["title"], problem["detail"], request_id="req-1", retry_after=12,
                                      problem=problem)).to_plotly_json()["props"]
    assert box["role"] == "alert" and box["children"].startswith("Too many requests for your plan's limit. Try again in 12")
    assert {k: v for k, v in box.items() if k.startswith("data-problem-")} == {
        "data-problem-type": problem["type"], "data-problem-title": problem["title"], "data-problem-status": "429",
        "data-problem-detail": problem["detail"], "data-problem-request-id": "req-1"}
    assert box["title"] == "urn:signals:problem:rate-limited · 429 · request req-1"
    down = ui.failure_box(SignalsError(None, "Cannot reach the Signals API", "ConnectError")).to_plotly_json()["props"]
    assert down["data-problem-type"] == "urn:signals:problem:unreachable" and "data-problem-status" not in down
