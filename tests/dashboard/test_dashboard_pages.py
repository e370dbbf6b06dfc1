"""The dashboard's page skeleton (dashboard/chart_page.py) and its plan names, without a browser:
a page declared as a `ChartPage` has the elements (ids) its callbacks, URLs and the browser tests
rely on; and every plan name the dashboard shows is the API's (a label changed in the API shows
up in the dashboard with no change to it)."""

from __future__ import annotations

import sys
import time
import uuid

import cachetools
import pytest

pytest.importorskip("dash")

import dash  # noqa: E402

from connectors.operations import Operations  # noqa: E402
from dashboard import api, ui  # noqa: E402
from dashboard.app import app as _app  # noqa: E402, F401  (registers the pages)
from dashboard.chart_page import ChartPage, Drawn, Measure, Param, Text  # noqa: E402
from dashboard.settings import DashboardSettings  # noqa: E402
from service.api.openapi import build_openapi  # noqa: E402
from service.api.tiers import Tier  # noqa: E402
from tests.support.api_server import serve  # noqa: E402
from tests.support.layouts import ids, texts  # noqa: E402
from tests.support.secret import TEST_SECRET


@pytest.fixture
def served_document(monkeypatch):
    """The operations as the API serves them, without a server."""
    monkeypatch.setattr(api, "_document", (time.monotonic(), Operations.from_openapi(build_openapi())))


def _page(path: str):
    entry = next(e for e in dash.page_registry.values() if e["path"] == path)
    return sys.modules[entry["module"]]


def _nothing(replies, values) -> Drawn:
    return Drawn({})


def test_a_page_spec_lays_out_controls_period_graph_table_and_status(served_document):
    page = ChartPage(prefix="demo", operation="geo_heat", title="Demo",
                     controls=(Param("level"), Param("window"), Measure()), draw=_nothing)
    layout = page.layout()
    assert layout.children[0].children == "Demo"
    assert ids(layout) == ["demo-url-state", "demo-level", "demo-window", "demo-measure", "demo-compare",
                           "demo-intervals", "demo-as-of", "demo-graph", "demo-table", "demo-status"]
    assert page.url_controls() == [("level", "demo-level"), ("window", "demo-window"), ("measure", "demo-measure"),
                                   ("compare", "demo-compare"), ("intervals", "demo-intervals"),
                                   ("as_of", "demo-as-of")]
    # The document's values: a radio with its enum and default, the measures of its records.
    level = layout.children[2].children[0].children[1]
    assert [o["value"] for o in level.options] == api.operation("geo_heat").param("level").enum
    measure = layout.children[2].children[2].children[1]
    assert [o["value"] for o in measure.options] == ui.measures(api.operation("geo_heat"))
    assert measure.value == "suppressions"


def test_a_page_spec_without_table_or_switches_and_values_from_the_url(served_document):
    page = ChartPage(prefix="t", operation="trending", title="T", compare=False, intervals=False, table=False,
                     controls=(Text("keywords", argument=False, suffix="subjects"), Param("limit")), draw=_nothing)
    layout = page.layout(keywords="a, b", limit="7", as_of="2026-03-03T12:00:00Z")
    assert ids(layout) == ["t-url-state", "t-subjects", "t-limit", "t-as-of", "t-graph", "t-status"]
    assert page.url_controls()[0] == ("keywords", "t-subjects")
    assert [c.value for c in layout.children[2].children[0].children if hasattr(c, "value")] == ["a, b"]
    limit = layout.children[2].children[1].children[1]
    assert (limit.value, limit.min, limit.max) == (7, 1, 500)


def test_the_pages_built_on_the_skeleton_keep_their_ids(served_document):
    """The ids the URLs, the callbacks and the browser tests use (tests/dashboard/test_dashboard_browser.py,
    tests/dashboard/test_dashboard_state.py) did not change with the skeleton."""
    expected = {
        "/trending": ["trending-url-state", "trending-window", "trending-dimension", "trending-metric",
                      "trending-min-baseline", "trending-limit", "trending-as-of", "trending-graph", "trending-table",
                      "trending-status"],
        "/activity": ["activity-url-state", "activity-window", "activity-type", "activity-limit", "activity-compare",
                      "activity-intervals", "activity-as-of", "activity-graph", "activity-table", "activity-status"],
        "/geography": ["geo-url-state", "geo-level", "geo-window", "geo-measure", "geo-compare", "geo-intervals",
                       "geo-as-of", "geo-graph", "geo-table", "geo-status"],
        "/keywords": ["keywords-url-state", "keywords-subjects", "keywords-window", "keywords-bucket",
                      "keywords-measure", "keywords-compare", "keywords-intervals", "keywords-as-of", "keywords-graph",
                      "keywords-status"],
        "/domains": ["domains-url-state", "domains-subjects", "domains-window", "domains-bucket", "domains-measure",
                     "domains-compare", "domains-intervals", "domains-as-of", "domains-graph", "domains-status"],
    }
    for path, wanted in expected.items():
        page = _page(path)
        assert ids(page.layout()) == wanted, path
        assert [element_id for _name, element_id in page.PAGE.url_controls()] == \
            [i for i in wanted if i.rsplit("-", 1)[-1] not in ("state", "graph", "table", "status")], path
    assert _page("/keywords").PAGE.url_controls()[0] == ("keywords", "keywords-subjects")


def test_a_page_asks_the_api_with_its_controls_and_period(served_document, monkeypatch):
    """One call with the controls that are arguments and the period's; the reply drawn into the
    graph, the table and the footer; a failure is the status and leaves the graph as it was."""
    from connectors.client import Reply, SignalsError

    asked = []

    def fetch(key, name, arguments=None):
        asked.append((key, name, arguments))
        if arguments.get("level") == "city":
            raise SignalsError(400, "Invalid", errors=[{"name": "level", "reason": "no"}])
        return Reply({"regions": [], "disclaimer": "Estimates."}, 200, None, None)

    monkeypatch.setattr(api, "fetch", fetch)
    page = ChartPage(prefix="d", operation="geo_heat", title="D", controls=(Param("level"), Param("window"), Measure()),
                     draw=lambda replies, values: Drawn({"drawn": values["measure"]}, "rows"))
    values = {"level": "region", "window": "7d", "measure": "users_est", "compare": ["previous_period"],
              "intervals": [], "as_of": " 2026-03-03T12:00:00Z "}
    status, _meta, figure, table = page.load(values, {"key": "k"})
    assert asked == [("k", "geo_heat", {"level": "region", "window": "7d", "compare": "previous_period",
                                        "as_of": "2026-03-03T12:00:00Z"})]
    assert (figure, table) == ({"drawn": "users_est"}, "rows")
    assert "Estimates." in texts(status[-1])
    status, _meta, figure, table = page.load({**values, "level": "city"}, {"key": "k"})
    assert "level: no" in texts(status) and figure is dash.no_update and table is None
    with pytest.raises(dash.exceptions.PreventUpdate):
        page.load(values, {})


# -- plan names come from the API --------------------------------------------------------------

RELABELLED = {"observer": "Starter", "analyst": "Team", "professional": "Enterprise"}


@pytest.fixture
def relabelled_api(monkeypatch, fixture_data_dir, fixture_store, accounts):
    """The real API, over HTTP from a thread, whose plans are named differently; the dashboard's
    calls go to it (its document read afresh, no client kept from another test)."""
    from cache import LocalGate
    from service.app import create_app
    from service.clock import FixedClock
    from service.engine.polars import PolarsEngine as Engine
    from service.privacy import Privacy
    from service.settings import Settings
    from tests.support.fixture_data import FIXTURE_NOW

    monkeypatch.setattr(Tier, "label", property(lambda tier: RELABELLED[tier.slug]))
    served = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW), store=fixture_store,
                        accounts=accounts, gate=LocalGate(), engine=Engine(Privacy.exact()))
    run = uuid.uuid4().hex[:8]
    keys = {tier.slug: accounts.create_key(tier, subscription=f"labels-{tier.slug}-{run}")[0] for tier in Tier}
    with serve(served) as url:
        monkeypatch.setattr(api, "_SETTINGS", DashboardSettings(api_url=url))
        monkeypatch.setattr(api, "_document", None)
        monkeypatch.setattr(api, "_clients", cachetools.TTLCache(maxsize=16, ttl=3600))
        yield keys


def test_plan_names_shown_are_the_apis(relabelled_api):
    observer = {"key": relabelled_api["observer"]}
    assert api.plan_label("analyst") == "Team" and api.min_plan_label("query") == "Team"
    # Sign-in keeps the API's name of the viewer's plan (the header shows it).
    session, *_ = _page("/sign-in").sign_in(1, 0, relabelled_api["observer"])
    assert session["plan_label"] == "Starter"
    # /query says what the viewer's plan allows before Run (from the account), and which plan it
    # needs after a refused Run.
    query = _page("/query")
    assert "plan or higher" not in texts(query.layout())
    note, meta = query.plan_note(None, observer)
    assert "Your plan (Starter)" in texts(note) and "needs the Team plan or higher" in texts(note)
    assert meta["limit"] == Tier.OBSERVER.requests_per_minute  # the header's count of requests used
    allowed = texts(query.plan_note(None, {"key": relabelled_api["professional"]})[0])
    assert allowed == f"Your plan ({RELABELLED['professional']}) includes the query builder, up to " \
        f"{Tier.PROFESSIONAL.requests_per_minute:,} requests a minute."
    _reply, problem, _meta = ui.call(observer, "query", {"window": "7d"})
    assert texts(problem).startswith("This page needs the Team plan or higher.")
    assert "Analyst" not in texts(problem)
    # /account: the plan and its rate limit as the API states them.
    _status, _meta, details = _page("/account").load(None, observer)
    facts = {dd.id: dd.children for dd in details.children[0].children if getattr(dd, "id", None)}
    assert facts["account-plan"] == "Starter"
    assert facts["account-requests-per-minute"] == str(Tier.OBSERVER.requests_per_minute)


def test_a_document_without_plans_names_the_plan_by_its_slug(monkeypatch):
    """An API from before `x-plans`: the dashboard still says which plan, in the API's slug."""
    document = build_openapi()
    del document["x-plans"]
    monkeypatch.setattr(api, "_document", (time.monotonic(), Operations.from_openapi(document)))
    assert api.min_plan_label("query") == "analyst"
    assert Operations.from_openapi(build_openapi()).plan_label("analyst") == "Analyst"


def test_the_keywords_page_takes_keyword_from_the_url(served_document):
    """`/keywords?keyword=climate change` (the singular a person writes, issue 42) fills the box as
    `?keywords=` does; the URL is written back as `keywords=`. The domains page alike."""
    from dashboard.pages import domains, keywords

    def box(page, **query):
        layout = page.PAGE.layout(**query)
        return next(c.value for c in layout.children[2].children[0].children if hasattr(c, "value"))

    assert box(keywords, keyword="climate change") == "climate change"
    assert box(keywords, keywords="a, b", keyword="ignored") == "a, b"  # the page's own name first
    assert box(keywords) == ""
    assert box(domains, domain="reddit.com") == "reddit.com"
    assert keywords.PAGE.url_controls()[0] == ("keywords", "keywords-subjects")


def test_a_ranking_page_says_how_many_rows_of_how_many(served_document):
    """Above the footer: "50 of 103 rows" when the answer holds more than the page shows."""
    from connectors.client import Reply

    page = ChartPage(prefix="r", operation="keyword_activity", title="R", controls=(Param("limit"),), draw=_nothing)
    body = {"keywords": [{"keyword": "a"}, {"keyword": "b"}], "disclaimer": "d"}
    part = page._rows_note(Reply(body, 200, None, None, headers={"signals-total-rows": "103"}))
    assert texts(part[0]) == "2 of 103 rows: the answer holds 101 more; raise limit to see them"
    assert part[0].id == "r-rows"
    assert page._rows_note(Reply(body, 200, None, None, headers={"signals-total-rows": "2"})) == []
    assert page._rows_note(Reply(body, 200, None, None)) == []


def test_the_dashboards_account_page_shows_the_budget():
    from connectors import privacy_budget
    from dashboard.pages.account import _details

    header = 'remaining=99.250, limit=100.000, spent=0.750, charged=0.750, renews="2026-12-01T00:00:00Z"'
    budget = privacy_budget.read({"signals-privacy-budget": header})
    text = str(_details({"subscription": "s", "plan_label": "Professional"}, api.Usage(300, 299, 60), budget))
    assert "Privacy budget spent" in text and "0.8 of 100 epsilon this month (99.2 left)" in text
    assert "2026-12-01T00:00:00Z" in text
    assert "Privacy budget" not in str(_details({}, api.Usage(300, 299, 60)))
