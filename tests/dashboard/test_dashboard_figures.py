"""The dashboard's figures are pure functions of the API's JSON, and its messages are sentences:
tested without a browser or a server."""

from __future__ import annotations

import pytest

pytest.importorskip("dash")

from connectors.client import SignalsError  # noqa: E402
from dashboard import figures, places  # noqa: E402
from dashboard.api import Usage, explain  # noqa: E402
from dashboard.app import usage_text  # noqa: E402
from tests.support.layouts import find, texts
from tests.support.processes import ROOT

DISCLAIMER = "Numbers are approximate estimates."


def test_top_keywords_largest_on_top():
    body = {"window": "24h", "keywords": [{"keyword_raw": "a", "suppressions": 9, "users_est": 3, "rank": 1},
                                         {"keyword_raw": "b", "suppressions": 4, "users_est": 2, "rank": 2}]}
    figure = figures.top_keywords_figure(body)
    assert list(figure.data[0].y) == ["b", "a"] and list(figure.data[0].x) == [4, 9]
    assert "24h" in figure.layout.title.text
    assert figures.top_keywords_figure(body) == figure  # same JSON, same figure


def test_empty_answers_say_so_instead_of_an_empty_chart():
    for figure in (figures.top_keywords_figure({"window": "1h", "keywords": []}),
                   figures.trending_figure({"trending": []}),
                   figures.activity_figure({"keywords": []}),
                   figures.geo_figure({"level": "city", "regions": []}, {}),
                   figures.timeseries_figure([])):
        assert not figure.data and figure.layout.annotations


def test_timeseries_one_line_per_subject_with_the_measure():
    bodies = [{"keyword": k, "window": "7d", "bucket": "day",
               "timeseries": [{"ts": "2026-11-01T00:00:00Z", "suppressions": n, "users_est": 1, "events": 2},
                              {"ts": "2026-11-02T00:00:00Z", "suppressions": n + 1, "users_est": 1, "events": 2}]}
              for k, n in (("x", 1), ("y", 5))]
    figure = figures.timeseries_figure(bodies, measure="suppressions")
    assert [t.name for t in figure.data] == ["x", "y"] and list(figure.data[1].y) == [5, 6]
    assert list(figures.timeseries_figure(bodies, measure="events").data[0].y) == [2, 2]


def test_countries_are_areas_and_other_levels_points_at_local_coordinates():
    body = {"window": "24h", "level": "country", "regions": [
        {"geo_key": "US", "label": "United States", "suppressions": 10, "unique_users": 2, "keyword_count": 1},
        {"geo_key": "ZZ", "label": "Unknown", "suppressions": 1, "unique_users": 1, "keyword_count": 1}]}
    figure = figures.geo_figure(body, {}, iso3=places.alpha3())
    assert figure.data[0].type == "choropleth" and list(figure.data[0].locations) == ["USA"]
    assert figure.layout.meta == {"places": 2, "drawn": 1}
    cities = {"window": "24h", "level": "city", "regions": [
        {"geo_key": "2643743", "label": "London, GB", "suppressions": 4, "unique_users": 1, "keyword_count": 1},
        {"geo_key": "5368361", "label": "Los Angeles, US", "suppressions": 16, "unique_users": 1, "keyword_count": 1}]}
    figure = figures.geo_figure(cities, places.coordinates("city"))
    assert figure.data[0].type == "scattergeo"
    assert round(figure.data[0].lat[0]) == 52 and round(figure.data[0].lon[1]) == -118
    assert figure.data[0].marker.size[1] > figure.data[0].marker.size[0]  # sized by the measure
    assert figure.layout.geo.scope is None  # not only the US: the world


def test_us_only_levels_use_the_usa_scope_and_counties_have_coordinates():
    coords = places.coordinates("county")
    assert "06037" in coords and 33 < coords["06037"][0] < 35  # Los Angeles County, from its cities
    assert "US-CA" in places.coordinates("region")
    body = {"window": "7d", "level": "county", "regions": [
        {"geo_key": "06037", "label": "Los Angeles County, CA", "suppressions": 3, "unique_users": 1,
         "keyword_count": 1}]}
    assert figures.geo_figure(body, coords).layout.geo.scope == "usa"


def test_trending_activity_and_query_figures():
    trend = {"dimension": "keyword", "metric": "suppressions", "recent_period": "last 6 hours",
             "baseline_period": "6 to 24 hours ago",
             "trending": [{"value": "a", "recent": 10, "baseline": 2, "growth_pct": 400.0}]}
    assert list(figures.trending_figure(trend).data[0].x) == [400.0]
    activity = {"window": "24h", "type": "all", "keywords": [
        {"keyword": "k", "adds": 3, "removes": 1, "edits": 0, "total_events": 4, "unique_users": 2, "net_adds": 2}]}
    assert [t.name for t in figures.activity_figure(activity).data] == ["adds", "removes", "edits"]
    query = {"window": "7d", "group_by": ["time"], "results": [
        {"ts": "2026-11-02T00:00:00Z", "suppressions": 2, "unique_users": 1, "events": 1},
        {"ts": "2026-11-01T00:00:00Z", "suppressions": 1, "unique_users": 1, "events": 1}]}
    assert list(figures.query_figure(query).data[0].x) == ["2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"]
    assert figures.query_figure({"group_by": ["keyword", "domain"], "results": [{}]}) is None
    # a place level's records carry <level>_id and <level>_name, not <level> (a KeyError was a 500)
    places = {"window": "7d", "group_by": ["country"], "results": [
        {"country_id": "US", "country_name": "United States", "suppressions": 5, "unique_users": 2, "events": 3},
        {"country_id": "XK", "country_name": None, "suppressions": 1, "unique_users": 1, "events": 1}]}
    assert list(figures.query_figure(places).data[0].y) == ["XK", "United States"]  # horizontal, the first on top


def test_a_long_ranking_draws_the_top_with_short_labels_and_sums_up_the_rest():
    long_name = "Congo, The Democratic Republic of the"
    results = [{"country_id": f"C{i}", "country_name": long_name if i == 0 else f"Country {i}",
                "suppressions": 1000 - i, "unique_users": 50, "events": 10} for i in range(68)]
    figure = figures.query_figure({"window": "7d", "group_by": ["country"], "results": results})
    bars = figure.data[0]
    assert bars.orientation == "h" and len(bars.y) == figures.TOP
    assert bars.y[-1] == "Congo, The Democratic Repub…" and bars.customdata[-1] == long_name
    rest = sum(r["suppressions"] for r in results[figures.TOP:])
    assert f"and 48 more in the table, {rest:,} suppressions together" in figure.layout.title.text
    users = figures.query_figure({"window": "7d", "group_by": ["country"], "results": results}, measure="unique_users")
    assert "more in the table</sup>" in users.layout.title.text  # users do not add up across rows


def test_trending_and_activity_draw_the_top_and_say_where_the_rest_is():
    trend = {"dimension": "keyword", "metric": "suppressions", "recent_period": "r", "baseline_period": "b",
             "trending": [{"value": f"v{i}", "recent": 10, "baseline": 2, "growth_pct": 400.0 - i} for i in range(50)]}
    figure = figures.trending_figure(trend)
    assert len(figure.data[0].y) == figures.TOP and figure.data[0].y[-1] == "v0"
    assert "the first 20 of 50, the rest in the table</sup>" in figure.layout.title.text
    activity = {"window": "7d", "type": "all", "keywords": [
        {"keyword": f"k{i}", "adds": 3, "removes": 1, "edits": 0} for i in range(30)]}
    bars = figures.activity_figure(activity)
    assert len(bars.data[0].y) == figures.TOP and "the first 20 of 30" in bars.layout.title.text


def test_partial_first_and_last_buckets_are_marked():
    import datetime as dt

    as_of = dt.datetime(2026, 3, 10, 6, tzinfo=dt.UTC)  # 6 hours into the last day
    days = [f"2026-03-{d:02d}T00:00:00Z" for d in range(3, 11)]
    body = {"keyword": "k", "window": "7d", "bucket": "day",
            "timeseries": [{"ts": ts, "suppressions": 100, "users_est": 5, "events": 9} for ts in days]}
    line, edges = figures.timeseries_figure([body], as_of=as_of).data
    assert list(line.y) == [None] + [100] * 6 + [None]  # the whole buckets as the line
    assert edges.line.dash == "dash" and edges.name == "k, partial bucket"  # the previous period is dotted
    assert list(edges.x) == [days[1], days[0], None, days[6], days[7], None]  # each joined to its neighbour
    assert list(edges.customdata) == ["", "partial: 18 of 24 hours", "", "", "partial: 6 of 24 hours", ""]
    whole = figures.timeseries_figure([{**body, "bucket": "hour", "timeseries": body["timeseries"][-2:-1]}], as_of=as_of)
    assert len(whole.data) == 1 and list(whole.data[0].y) == [100]
    assert "only in part" in figures.timeseries_figure([body], as_of=as_of).layout.title.text
    assert "only in part" not in figures.timeseries_figure([body]).layout.title.text  # no as_of: nothing claimed


def test_the_toolbar_stands_off_the_titles():
    figure = figures.top_keywords_figure({"window": "24h", "keywords": [{"keyword_raw": "a", "suppressions": 1}]})
    assert figure.layout.modebar.orientation == "v" and figure.layout.margin.r >= 40
    assert figure.layout.xaxis.tickformat == ",~r"  # 2,000 on the axis, not 2000


def test_messages_a_person_understands():
    assert "sign in again" in explain(SignalsError(401, "Missing or invalid API key"))
    # needed_plan is the plan's label as the API names it (dashboard.api.plan_label)
    forbidden = explain(SignalsError(403, "higher plan", "POST /query requires the Analyst plan or higher."),
                        needed_plan="Analyst")
    assert forbidden.startswith("This page needs the Analyst plan or higher.")
    assert explain(SignalsError(403, "higher plan", "x")).startswith("Your plan does not include this.")
    assert "Try again in 17 seconds" in explain(SignalsError(429, "Too many", "30 a minute", retry_after=17))
    down = explain(SignalsError(None, "Cannot reach the Signals API", "GET x: ConnectError"))
    assert "not answering" in down and "ConnectError" not in down
    refused = explain(SignalsError(400, "Invalid", errors=[{"name": "limit", "reason": "must be at most 500"}]))
    assert "limit: must be at most 500" in refused
    limit = "A subscription may have at most 10 webhooks; delete one before creating another."
    assert explain(SignalsError(409, "Conflict", limit)) == limit
    assert explain(SignalsError(404, "Not Found", "No webhook 'wh_x' in this key's subscription.")).startswith("No webhook")


def test_rate_limit_use_from_the_headers():
    usage = Usage.from_headers({"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "290", "X-RateLimit-Reset": "12"})
    assert usage == Usage(300, 290, 12)
    assert usage_text(usage.as_dict()) == "10 of 300 requests used this minute · resets in 12 s"
    assert usage_text({}) == ""


@pytest.fixture
def served_document(monkeypatch):
    """The operations as the API serves them, without a server (the account page reads its form
    fields from them)."""
    import time

    from connectors.operations import Operations
    from dashboard import api
    from service.api.openapi import build_openapi

    monkeypatch.setattr(api, "_document", (time.monotonic(), Operations.from_openapi(build_openapi())))


def _page(path: str):
    """A page's module as Dash Pages imported it (importing it again under its package name would
    register the page twice)."""
    import sys

    import dash

    entry = next(e for e in dash.page_registry.values() if e["path"] == path)
    return sys.modules[entry["module"]]


def test_webhook_form_defaults_and_body_follow_the_document(served_document):
    from dashboard.webhooks import form

    defaults = dict(zip([f for f, _ in form.FORM], form.defaults(), strict=True))
    assert defaults == {"url": "", "window": None, "dimension": None, "metric": "suppressions", "threshold_pct": None,
                        "cooldown_minutes": None, "min_baseline": 10, "enabled": ["enabled"], "description": ""}
    body, empty = form.body(form.defaults())
    assert [e.split(" (")[0] for e in empty] == ["window", "dimension", "threshold pct", "cooldown minutes"]
    assert "cooldown minutes (an integer from 15 to 1440)" in empty
    values = [" https://example.com/hook ", "7d", "domain", "events", 12.5, 30, 0, [], "spikes"]
    body, empty = form.body(values)
    assert empty == [] and body == {"url": "https://example.com/hook", "window": "7d", "dimension": "domain",
                                    "metric": "events", "threshold_pct": 12.5, "cooldown_minutes": 30,
                                    "min_baseline": 0, "enabled": False, "description": "spikes"}


def test_query_page_offers_as_of_compare_and_intervals_from_the_document(served_document):
    from dashboard import api, ui

    query = _page("/query")
    controls = query._period_controls(api.operation("query"), {})
    ids = [c.children[1].id for c in controls]
    assert ids == ["query-as-of", "query-compare", "query-intervals"]
    assert [c.children[1].value for c in controls] == ["", [], []]
    restored = query._period_controls(api.operation("query"), {"as_of": "2026-03-03T12:00:00Z",
                                                                "compare": "previous_period", "intervals": "true"})
    assert [c.children[1].value for c in restored] == ["2026-03-03T12:00:00Z", ["previous_period"], [True]]
    assert controls[1].children[1].options == [{"label": "previous period", "value": "previous_period"}]
    plain = query._body("7d", ["keyword"], None, "suppressions", "desc", 10, [""] * 6, [[], []], "json")
    assert query._body("7d", ["keyword"], None, "suppressions", "desc", 10, [""] * 6, [[], []], "json",
                       "", [], []) == plain  # nothing chosen: the request is as before
    assert query._body("7d", ["keyword"], None, "suppressions", "desc", 10, [""] * 6, [[], []], "json",
                       " 2026-03-03T12:00:00Z ", ["previous_period"], [True]) == {
        **plain, "as_of": "2026-03-03T12:00:00Z", "compare": "previous_period", "intervals": True}
    # the results' dimension columns: a place by its name with its id under it, time as ts
    answer = {"group_by": ["keyword", "country", "time"],
              "results": [{"keyword": "a", "country_id": "GR", "country_name": "Greece", "ts": "2026-03-09T00:00:00Z"}]}
    assert query.result_columns(answer) == (["keyword", "country_name", "ts"], {"country_name": "country_id"})
    # a window is chosen when the page opens; placeholders are short examples
    window = query.layout()
    assert find(window, "query-window").value == "7d"
    placeholders = [find(window, f"query-filter-{n}").placeholder for n in query.TEXT_FILTERS]
    assert placeholders == ["e.g. climate change, spoilers", "e.g. reddit.com, youtube.com", "e.g. US, DE",
                            "e.g. US-CA", "e.g. 06037", "e.g. 5368361"]
    assert all(len(p) <= len(ui.AS_OF_PLACEHOLDER) for p in placeholders)


def test_a_test_deliverys_outcome_in_words():
    from dashboard.webhooks import trial_delivery

    ok = trial_delivery.outcome({"succeeded": True, "status_code": 204, "duration_ms": 12})
    assert ok.children == "Test delivery sent: your URL answered 204 in 12 ms."
    refused = trial_delivery.outcome({"succeeded": False, "status_code": 500, "error": None})
    assert "answered 500" in refused.children and "retried" in refused.children
    unreachable = trial_delivery.outcome({"succeeded": False, "status_code": None, "error": "ConnectError: refused"})
    assert "ConnectError: refused" in unreachable.children
    assert "alert worker" in trial_delivery.outcome(None).children


def test_a_logged_attempt_of_a_queued_test_in_words():
    """A queued test's outcome is read from the delivery log, whose items say `outcome`."""
    from dashboard.webhooks import trial_delivery

    def said(**logged):
        return trial_delivery.outcome(trial_delivery.as_attempt({"delivery_id": "dlv_1", "attempt": 1, **logged})).children

    assert said(outcome="succeeded", status_code=200, duration_ms=8, error=None) == \
        "Test delivery sent: your URL answered 200 in 8 ms."
    retrying = said(outcome="retrying", status_code=503, duration_ms=5, error=None)
    assert "answered 503" in retrying and "retried" in retrying
    gone = said(outcome="disabled", status_code=410, duration_ms=5, error=None)
    assert "answered 410" in gone and "disabled" in gone
    given_up = said(outcome="failed", status_code=None, duration_ms=0, error="the webhook is disabled")
    assert "the webhook is disabled" in given_up and "not be retried" in given_up


def test_the_docs_show_every_page_from_the_browser_tests():
    """docs/dashboard.md shows every page (and the 403/429 states, and compare and intervals), the
    README a few of them, and every screenshot either links exists; the browser tests write them
    (tests/dashboard/test_dashboard_browser.py, tests/dashboard/test_dashboard_state.py)."""
    import re

    root = ROOT
    on_page = re.findall(r"\(dashboard/([\w-]+\.png)\)", (root / "docs" / "dashboard.md").read_text())
    in_readme = re.findall(r"\(docs/dashboard/([\w-]+\.png)\)", (root / "README.md").read_text())
    assert all((root / "docs" / "dashboard" / name).is_file() for name in on_page + in_readme), on_page + in_readme
    pages = ["overview", "keywords", "domains", "geography", "trending", "activity", "query", "account",
             "account-webhooks", "sign-in", "state-403", "state-429", "geography-compare", "activity-compare",
             "keywords-compare"]
    assert sorted(on_page) == sorted(f"{page}.png" for page in pages)
    assert in_readme and set(in_readme) <= set(on_page)
    assert sorted(path.stem for path in (root / "docs" / "dashboard").glob("*.png")) == sorted(pages)


def test_the_tests_screenshots_go_to_a_temporary_directory_unless_asked(monkeypatch, tmp_path):
    """scripts/test.sh leaves the working tree clean: docs/dashboard/ only under scripts/screenshots.sh."""
    from tests.support.browser import shots

    monkeypatch.delenv("SIGNALS_SCREENSHOTS_DIR", raising=False)
    folder = shots.__wrapped__()
    assert folder.is_dir() and ROOT not in folder.parents
    monkeypatch.setenv("SIGNALS_SCREENSHOTS_DIR", str(tmp_path / "shots"))
    assert shots.__wrapped__() == tmp_path / "shots" and (tmp_path / "shots").is_dir()
    assert "SIGNALS_SCREENSHOTS_DIR=\"$PWD/docs/dashboard\"" in (ROOT / "scripts" / "screenshots.sh").read_text()


def test_the_header_counts_the_reset_down_from_when_it_was_said():
    """'resets in' is the answer's X-RateLimit-Reset counted from when the answer came (issue 42:
    1 -> 5 -> 6 -> 31 s between page loads), and an earlier answer arriving last does not replace
    a later one's."""
    from dashboard.app import newest_usage

    said = {"limit": 300, "remaining": 290, "reset": 12, "at": 1000.0}
    assert usage_text(said, now=1000.0) == "10 of 300 requests used this minute · resets in 12 s"
    assert usage_text(said, now=1008.0) == "10 of 300 requests used this minute · resets in 4 s"
    assert usage_text(said, now=1013.0) == "10 of 300 requests used this minute"  # past: nothing to count
    later = {"limit": 300, "remaining": 288, "reset": 5, "at": 1007.0}
    assert newest_usage(later, said) is later
    assert newest_usage(said, later) is later  # the earlier answer, arriving last, is not shown
    assert newest_usage({"status": 401}, later) is later and newest_usage(said, None) is said


def test_figures_say_how_many_of_how_many():
    """A ranking cut by its limit says "the first 10 of 390" (Signals-Total-Rows), issue 42."""
    top = {"window": "24h", "keywords": [{"keyword_raw": f"k{i}", "suppressions": 10 - i} for i in range(10)]}
    assert "the first 10 of 390 keywords" in figures.top_keywords_figure(top, total=390).layout.title.text
    assert "<sup>" not in figures.top_keywords_figure(top, total=10).layout.title.text
    rows = [{"country_id": f"C{i}", "country_name": f"Country {i}", "suppressions": 100 - i} for i in range(100)]
    title = figures.query_figure({"window": "7d", "group_by": ["country"], "results": rows}, total=390).layout.title.text
    assert "the first 20 of 390 rows; and 80 more in the table" in title and "290 more with a larger limit" in title
    activity = {"window": "7d", "type": "all",
                "keywords": [{"keyword": f"k{i}", "adds": 1, "removes": 0, "edits": 0} for i in range(50)]}
    assert "the first 20 of 103, 50 in the table" in figures.activity_figure(activity, total=103).layout.title.text


def test_a_count_zero_in_both_periods_reads_as_one_short_line(served_document):
    from dashboard import ui

    row = {"keyword": "k", "adds": 5, "removes": 0, "previous": {"adds": 4, "removes": 0},
           "change": {"adds": {"pct": 25.0, "beyond_noise": False}, "removes": {"pct": None, "beyond_noise": False}}}
    table = ui.records_table([row], ["keyword", "adds", "removes"], ["adds", "removes"])
    _keyword, adds, removes = table.children[2].children[0].children
    assert texts(adds) == "5 ▲ 25.0 % from 4 within noise"
    assert texts(removes) == "0 suppressed? 0 before too"  # not "0 in both within noise before 0"
