"""The dashboard's view in its URL, compare, intervals and as_of, in a real headless Chromium
against the real API and dashboard processes on the run command's demo data (1M events, seed 7:
tests/conftest.py `default_demo_dir`), which is also what docs/dashboard.md's screenshots of these states
(and of /trending) show."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from connectors import numbers
from connectors.buckets import partial_note
from connectors.client import SignalsClient
from dashboard import figures
from tests.support.browser import (
    chrome,
    click_option,
    console_errors,
    css,
    dashboard,
    figure_data,
    settle,
    shots,
    sign_in,
    wait,
)
from tests.support.default_demo import DEFAULT_DEMO_END
from tests.support.processes import create_key, gunicorn

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def demo(default_demo_dir):
    key = create_key(default_demo_dir, "professional")
    with gunicorn(default_demo_dir) as (api_url, _api_log), dashboard(api_url, default_demo_dir) as (dash_url, log):
        yield {"api": api_url, "dash": dash_url, "key": key, "data": default_demo_dir}
    assert key not in log[0], "a key reached the dashboard's log"


@pytest.fixture
def browser(demo):
    driver = chrome()
    sign_in(driver, demo["dash"], demo["key"])
    wait(driver, lambda d: css(d, "#overview-leader"))
    yield driver
    driver.quit()


def query_of(driver) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(driver.current_url).query).items()}


def checked(driver, control_id: str) -> list[str]:
    return [e.get_attribute("value") for e in css(driver, f"#{control_id} input:checked")]


def rows(driver, table_id: str) -> list[dict[str, str]]:
    """Each row's fields by data-col: a count's exact value (its cell's title), a previous value and
    an interval exactly (their titles), a change as shown (its text)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map(tr => Object.fromEntries("
        "Array.from(tr.querySelectorAll('[data-col]')).map(el => [el.dataset.col, "
        "el.querySelector('.cell-main') && !el.title ? el.querySelector('.cell-main').textContent : (el.title || el.textContent)"
        "])));", f"#{table_id}")


def shown(driver, table_id: str):
    return lambda d: rows(d, table_id) and not css(d, "._dash-loading-callback")


def change_label(change: dict) -> str:
    """A change's line as the table shows it: its figure (the verdict is on the line under it)."""
    figure, _verdict, _kind = numbers.change_words(change)
    return figure if change.get("pct") is not None else "new"


def test_a_url_restores_the_view_with_previous_values_equal_to_the_apis(demo, browser):
    browser.get(demo["dash"] + "/geography?level=region&window=7d&compare=previous_period&intervals=true")
    wait(browser, lambda d: shown(d, "geo-rows")(d) and "previous_suppressions" in rows(d, "geo-rows")[0])
    settle(browser)
    assert checked(browser, "geo-level") == ["region"] and checked(browser, "geo-window") == ["7d"]
    assert checked(browser, "geo-compare") == ["previous_period"] and checked(browser, "geo-intervals") == ["true"]
    with SignalsClient(demo["api"], demo["key"]) as api:
        regions = api.geo_heat(level="region", window="7d", compare="previous_period", intervals=True)["regions"]
    table = rows(browser, "geo-rows")
    assert len(table) == len(regions) > 5
    for row, region in zip(table, regions, strict=True):
        assert row["geo_key"] == region["geo_key"]
        assert row["suppressions"] == f"{region['suppressions']:,}"
        assert row["previous_suppressions"] == f"previous period: {region['previous']['suppressions']:,}"
        assert row["change_suppressions"].startswith(change_label(region["change"]["suppressions"]))
        low, high = region["intervals"]["suppressions"]
        assert row["intervals_suppressions"] == f"90 % interval: {low:,}–{high:,}"
    marked = css(browser, "#geo-rows .change.beyond-noise")  # the change's line (its verdict is under it)
    within = css(browser, "#geo-rows .change.within-noise")
    changes = [c["beyond_noise"] for r in regions for c in r["change"].values()]  # every measure's
    assert (len(marked), len(within)) == (sum(changes), len(changes) - sum(changes))
    assert within
    assert query_of(browser) == {"level": "region", "window": "7d", "measure": "suppressions", "compare": "previous_period",
                                 "intervals": "true"}
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(shots() / "geography-compare.png"))
    assert console_errors(browser) == []


def test_changing_a_control_updates_the_url_and_a_reload_keeps_it(demo, browser):
    browser.get(demo["dash"] + "/activity")
    wait(browser, shown(browser, "activity-rows"))
    settle(browser)
    assert query_of(browser) == {"window": "24h", "type": "all", "limit": "50"}  # the defaults, written back
    click_option(browser, "activity-window", "7d")
    wait(browser, lambda d: query_of(d).get("window") == "7d")
    css(browser, "#activity-compare input")[0].click()
    wait(browser, lambda d: query_of(d).get("compare") == "previous_period")
    wait(browser, lambda d: shown(d, "activity-rows")(d) and "previous_adds" in rows(d, "activity-rows")[0])
    url = browser.current_url
    assert demo["key"] not in url and "key" not in query_of(browser)
    browser.refresh()
    wait(browser, lambda d: shown(d, "activity-rows")(d) and "previous_adds" in rows(d, "activity-rows")[0])
    settle(browser)
    assert browser.current_url == url
    assert checked(browser, "activity-window") == ["7d"] and checked(browser, "activity-compare") == ["previous_period"]
    with SignalsClient(demo["api"], demo["key"]) as api:
        keywords = api.keyword_activity(window="7d", type="all", limit=50, compare="previous_period")["keywords"]
    table = rows(browser, "activity-rows")
    assert [(r["keyword"], r["adds"], r["previous_adds"]) for r in table] == \
        [(k["keyword"], f"{k['adds']:,}", f"previous period: {k['previous']['adds']:,}") for k in keywords]
    ghosts = {t["name"]: t for t in json.loads(figure_data(browser, "activity-graph"))}
    drawn = keywords[:figures.TOP]  # the first 20 as bars, the rest in the table
    assert ghosts["adds, previous period"]["x"] == [k["previous"]["adds"] for k in drawn][::-1]
    assert ghosts["adds, previous period"]["opacity"] < 1 and ghosts["adds"]["x"] == [k["adds"] for k in drawn][::-1]
    browser.save_screenshot(str(shots() / "activity-compare.png"))
    # a value the control does not take falls back to its default, and the URL says so
    browser.get(demo["dash"] + "/activity?window=2w&limit=9999&compare=yes&key=" + "x" * 10)
    wait(browser, shown(browser, "activity-rows"))
    settle(browser)
    assert query_of(browser) == {"window": "24h", "type": "all", "limit": "50"}


def whole(points: list[dict], as_of) -> list:
    """A day series' line: the buckets the 7d window covers whole; the partial first and last are
    drawn apart (dashed), as None here."""
    return [None if partial_note(p["ts"], "day", "7d", as_of) else p["suppressions"] for p in points]


def test_timeseries_compare_and_intervals_and_an_earlier_as_of(demo, browser):
    browser.get(demo["dash"] + "/keywords?keywords=climate change&window=7d&bucket=day&compare=previous_period"
                "&intervals=true")
    wait(browser, lambda d: figure_data(d, "keywords-graph") not in (None, "[]")
         and "previous period" in figure_data(d, "keywords-graph"))
    settle(browser)
    traces = {t["name"]: t for t in json.loads(figure_data(browser, "keywords-graph"))}
    with SignalsClient(demo["api"], demo["key"]) as api:
        body = api.keyword_timeseries("climate change", window="7d", bucket="day", compare="previous_period",
                                      intervals=True)
    points = body["timeseries"]
    assert traces["climate change"]["y"] == whole(points, DEFAULT_DEMO_END)
    assert [y for y in traces["climate change, partial bucket"]["y"] if y is not None] == \
        [points[1]["suppressions"], points[0]["suppressions"], points[-2]["suppressions"], points[-1]["suppressions"]]
    assert traces["climate change, previous period"]["y"] == [p["previous"]["suppressions"] for p in points]
    band = traces["climate change, 90 % interval"]["y"]
    assert band == [p["intervals"]["suppressions"][1] for p in points] + \
        [p["intervals"]["suppressions"][0] for p in points][::-1]
    browser.save_screenshot(str(shots() / "keywords-compare.png"))
    # an earlier hour: the picker goes in the URL, and the figure shows that hour's answer
    field = css(browser, "#keywords-as-of")[0]
    field.send_keys("2026-03-03T12:00:00Z\n")
    wait(browser, lambda d: query_of(d).get("as_of") == "2026-03-03T12:00:00Z")
    with SignalsClient(demo["api"], demo["key"]) as api:
        earlier = api.keyword_timeseries("climate change", window="7d", bucket="day", compare="previous_period",
                                         intervals=True, as_of="2026-03-03T12:00:00Z")["timeseries"]
    wait(browser, lambda d: {t["name"]: t for t in json.loads(figure_data(d, "keywords-graph"))}
         ["climate change"]["y"] == whole(earlier, dt.datetime(2026, 3, 3, 12, tzinfo=dt.UTC)))
    assert "Data as of 2026-03-03 12:00 UTC" in browser.find_element("tag name", "main").text
    # an hour the API refuses: its words, naming as_of
    field = css(browser, "#keywords-as-of")[0]
    field.clear()
    field.send_keys("2020-01-01T00:00:00Z\n")
    wait(browser, lambda d: css(d, "#keywords-status .error") and "as_of" in css(d, "#keywords-status .error")[0].text)


def test_trending_on_the_demo_data_is_not_empty(demo, browser):
    browser.get(demo["dash"] + "/trending")
    wait(browser, shown(browser, "trending-rows"))
    settle(browser)
    with SignalsClient(demo["api"], demo["key"]) as api:
        trending = api.trending()["trending"]
    assert trending and [r["value"] for r in rows(browser, "trending-rows")] == [t["value"] for t in trending]


def test_the_query_builder_keeps_its_fields_in_the_url(demo, browser):
    browser.get(demo["dash"] + "/query?window=7d&group_by=country&compare=previous_period&limit=5"
                "&platforms=android,nope&keywords=climate change")
    wait(browser, lambda d: css(d, "#query-window"))
    settle(browser)
    assert checked(browser, "query-window") == ["7d"] and checked(browser, "query-group-by") == ["country"]
    assert checked(browser, "query-compare") == ["previous_period"] and checked(browser, "query-intervals") == []
    assert checked(browser, "query-filter-platforms") == ["android"]  # a value the API does not take is dropped
    assert css(browser, "#query-limit")[0].get_attribute("value") == "5"
    assert css(browser, "#query-filter-keywords")[0].get_attribute("value") == "climate change"
    css(browser, "#query-intervals input")[0].click()
    wait(browser, lambda d: query_of(d).get("intervals") == "true")
    assert query_of(browser)["platforms"] == "android" and query_of(browser)["group_by"] == "country"


def test_run_on_a_restored_query_shows_the_apis_answer(demo, browser):
    """Run pressed on a view loaded from its URL, no control touched first: the API's answer for
    the same body. (Grouped by a place level, whose records carry country_id and country_name, the
    chart looked for `country`: a 500, and the page showed nothing.)"""
    browser.get(demo["dash"] + "/query?window=7d&group_by=country&compare=previous_period&limit=5")
    wait(browser, lambda d: css(d, "#query-run"))
    settle(browser)
    css(browser, "#query-run")[0].click()
    wait(browser, lambda d: css(d, "#query-count") and shown(d, "query-rows")(d))
    with SignalsClient(demo["api"], demo["key"]) as api:
        reply = api.fetch("query", {"window": "7d", "group_by": ["country"], "compare": "previous_period", "limit": 5})
    results, total = reply.body["results"], reply.total_rows
    assert total > 5  # the answer holds more than the 5 asked for: the page says how many
    assert css(browser, "#query-count")[0].text == \
        f"{len(results)} of {total} rows: the answer holds {total - 5} more; raise limit to see them"
    table = rows(browser, "query-rows")
    assert len(table) == len(results) == 5
    assert [(r["country_id"], r["country_name"], r["suppressions"], r["previous_suppressions"]) for r in table] == \
        [(r["country_id"], r["country_name"], f"{r['suppressions']:,}", f"previous period: {r['previous']['suppressions']:,}")
         for r in results]
    bars = json.loads(figure_data(browser, "query-graph"))[0]  # horizontal, the first row on top
    assert bars["customdata"] == [r["country_name"] for r in results][::-1]
    assert bars["x"] == [r["suppressions"] for r in results][::-1]
    assert query_of(browser)["group_by"] == "country" and query_of(browser)["limit"] == "5"
    assert console_errors(browser) == []
