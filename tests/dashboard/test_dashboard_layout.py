"""What a person notices on each page, in a real headless Chromium at 1280 and 1440 px wide, against
the real API and dashboard processes on the run command's demo data (1M events, seed 7:
tests/conftest.py `default_demo_dir`): no table wider than its box (and no sideways scroll of the
page), a window chosen, no Python literals (True, False, None), numbers with thousands separators,
placeholders that fit their fields, the header's count of requests used, the plotly toolbar off the
titles. At 1440 px each page's screenshot is saved (tests.support.browser.shots(): docs/dashboard.md's
docs/dashboard/ under scripts/screenshots.sh, a temporary directory otherwise)."""

from __future__ import annotations

import pytest

from tests.support.browser import chrome, css, dashboard, layout_problems, settle, shots, sign_in, wait
from tests.support.processes import create_key, gunicorn

pytestmark = pytest.mark.process

WIDTHS = (1280, 1440)
HEIGHT = 960
# (path, the element that holds the page's answer, the screenshot's name)
PAGES = [
    ("/", "#overview-top-keywords .js-plotly-plot", "overview"),
    ("/keywords?window=7d&bucket=day", "#keywords-totals tbody tr", "keywords"),
    ("/domains", "#domains-totals tbody tr", "domains"),
    ("/geography?window=7d&compare=previous_period&intervals=true", "#geo-rows tbody tr", "geography"),
    ("/trending", "#trending-rows tbody tr", "trending"),
    ("/activity?window=7d&compare=previous_period", "#activity-rows tbody tr", "activity"),
    ("/account", "#account-endpoints tbody tr", "account"),
]
QUERY = "/query?group_by=country&compare=previous_period&intervals=true&limit=100"

@pytest.fixture(scope="module")
def demo(default_demo_dir):
    with gunicorn(default_demo_dir) as (api_url, _api_log), dashboard(api_url, default_demo_dir) as (dash_url, log):
        yield {"api": api_url, "dash": dash_url, "data": default_demo_dir}
    assert "sig_live_" not in log[0], "a key reached the dashboard's log"


@pytest.fixture(params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def browser(request, demo):
    driver = chrome()
    driver.set_window_size(request.param, HEIGHT)
    inner = driver.execute_script("return window.innerWidth")
    driver.set_window_size(2 * request.param - inner, HEIGHT)  # the page, not the window, is that wide
    # the pages make many calls: a Professional key per browser keeps each under its limit
    sign_in(driver, demo["dash"], create_key(demo["data"], "professional"))
    wait(driver, lambda d: css(d, "#overview-leader"))
    driver.width = request.param
    yield driver
    driver.quit()


def box_height(driver, element_id: str) -> float:
    return driver.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().height;",
                                 element_id)


def answered(selector: str):
    def ready(driver) -> bool:
        shown = css(driver, ".page-footer .as-of")
        return bool(css(driver, selector)) and bool(shown) and shown[0].text not in ("", "—") \
            and not css(driver, "._dash-loading-callback")
    return ready


@pytest.mark.parametrize(("path", "selector", "name"), PAGES, ids=[p[2] for p in PAGES])
def test_a_page_reads_at_this_width(demo, browser, path, selector, name):
    browser.get(demo["dash"] + path)
    wait(browser, answered(selector))
    settle(browser)
    if browser.width == 1440:
        browser.save_screenshot(str(shots() / f"{name}.png"))
    assert layout_problems(browser) == [], path


def test_the_query_builder_starts_ready_and_its_results_fit(demo, browser):
    browser.get(demo["dash"] + QUERY)
    wait(browser, lambda d: css(d, "#query-plan-note p") and "requests used" in css(d, "#rate-use")[0].text)
    settle(browser)
    assert [e.get_attribute("value") for e in css(browser, "#query-window input:checked")] == ["7d"]
    note = css(browser, "#query-plan-note")[0].text
    assert note.startswith("Your plan (Professional) includes the query builder"), note
    assert "plan or higher" not in browser.find_element("tag name", "main").text
    assert box_height(browser, "query-graph-box") == 0  # no empty frame before Run
    assert layout_problems(browser) == []
    css(browser, "#query-run")[0].click()
    wait(browser, lambda d: css(d, "#query-rows tbody tr") and not css(d, "._dash-loading-callback"))
    settle(browser)
    assert box_height(browser, "query-graph-box") >= 300  # the chart, drawn at its height
    assert layout_problems(browser) == []
    assert css(browser, "#query-rows .mark"), "noise marks where the numbers disagree"
    if browser.width == 1440:  # the results, under the buttons
        browser.execute_script("document.querySelector('#query-run').scrollIntoView()")
        browser.save_screenshot(str(shots() / "query.png"))
