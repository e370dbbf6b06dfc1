"""The dashboard in a real headless Chromium, against the real API (gunicorn) and the real
dashboard process (the Procfile's line): sign-in, every page, values equal to the API's, controls
that change figures, an offline map, no console errors, and the 401/403/429/API-down states.
Screenshots of every page go to docs/dashboard/ (shown in the README)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from connectors.client import SignalsClient
from tests.support.browser import chrome, console_errors, dashboard, requested_urls
from tests.support.processes import ROOT, cli, create_key, gunicorn
from tests.support.redis_server import free_port

pytestmark = pytest.mark.process

SHOTS = ROOT / "docs" / "dashboard"
PAGES = ["/", "/keywords", "/domains", "/geography", "/trending", "/activity", "/query", "/account"]
WAIT = 30


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("dashboard-data")
    made = cli(data_dir, "data", "demo", "--events", "200000", "--days", "90")
    assert made.returncode == 0, made.stderr
    keys = {tier: create_key(data_dir, tier) for tier in ("professional", "observer")}
    keys["revocable"] = create_key(data_dir, "analyst")
    keys["limited"] = create_key(data_dir, "observer")
    with gunicorn(data_dir, SIGNALS_AUTH_CACHE_SECONDS="0") as (api_url, api_log), \
            dashboard(api_url, data_dir) as (dash_url, dash_log):
        yield {"api": api_url, "dash": dash_url, "keys": keys, "data": data_dir, "dash_log": dash_log}
    for key in keys.values():
        assert key not in dash_log[0], "a key reached the dashboard's log"


@pytest.fixture
def professional(stack) -> str:
    """A Professional key of its own for each test: the pages make many API calls, and tests
    sharing one key ran into its 300-a-minute limit (a 429 notice instead of the figure)."""
    key = create_key(stack["data"], "professional")
    stack["keys"][f"professional-{len(stack['keys'])}"] = key  # checked against the log at the end
    return key


@pytest.fixture
def browser():
    driver = chrome()
    yield driver
    driver.quit()


def wait(driver, condition, timeout=WAIT):
    """WebDriverWait's until, failing with what the page showed (its URL and text) at the end."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        shown = " ".join(driver.find_element("tag name", "body").text.split())[:1500]
        raise TimeoutException(f"waited {timeout} s on {driver.current_url}; the page showed: {shown}") from None


def css(driver, selector):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def click_option(driver, control_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    label = f"//*[@id='{control_id}']//label[normalize-space()='{value}']"
    driver.find_element(By.XPATH, label).click()
    wait(driver, lambda d: d.find_element(By.XPATH, label).get_attribute("aria-selected") == "true")
    time.sleep(0.5)  # Dash commits the new value to its store


def content(element) -> str:
    return (element.get_attribute("textContent") or "").strip()


def settle(driver) -> None:
    """Dash has rendered the page and answered its first callbacks."""
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete"
         and not css(d, "._dash-loading") and not css(d, "._dash-loading-callback"))
    time.sleep(1.5)  # Pages may render the layout once more after the first callbacks


def sign_in(driver, base: str, key: str) -> None:
    driver.get(base + "/sign-in")
    wait(driver, lambda d: css(d, "#api-key"))
    settle(driver)
    css(driver, "#api-key")[0].send_keys(key)
    wait(driver, lambda d: css(d, "#api-key")[0].get_attribute("value") == key)
    css(driver, "#sign-in")[0].click()


def figure_data(driver, graph_id: str):
    return driver.execute_script(
        "const el = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "return el && el.data ? JSON.stringify(el.data) : null;", f"#{graph_id}")


def figure_title(driver, graph_id: str):
    return driver.execute_script(
        "const el = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "return el && el.layout && el.layout.title ? el.layout.title.text : null;", f"#{graph_id}")


def page_ready(driver) -> bool:
    """The page's answer is in: its as_of shown and no loading spinner."""
    shown = css(driver, ".page-footer .as-of")
    return bool(shown) and shown[0].text not in ("", "—") and not css(driver, "._dash-loading-callback")


def open_page(driver, base: str, path: str) -> None:
    driver.get(base + path)
    if path == "/query":
        wait(driver, lambda d: css(d, "#query-window"))
        settle(driver)
        click_option(driver, "query-window", "7d")
        css(driver, "#query-group-by input[value='keyword']")[0].click()
        css(driver, "#query-run")[0].click()
    if path == "/account":
        wait(driver, lambda d: css(d, "#account-plan"))
        return
    wait(driver, page_ready)
    settle(driver)


def test_sign_in_every_page_offline_without_console_errors(stack, browser, professional):
    base, api_host = stack["dash"], "http://127.0.0.1:"
    sign_in(browser, base, professional)
    wait(browser, lambda d: d.current_url == base + "/" and css(d, "#overview-leader"))
    assert "Professional plan" in content(css(browser, "#plan-badge")[0])
    assert "requests used this minute" in content(css(browser, "#rate-use")[0])
    SHOTS.mkdir(parents=True, exist_ok=True)
    urls = []
    for path in PAGES:
        open_page(browser, base, path)
        wait(browser, lambda d: not css(d, "._dash-loading-callback"))
        time.sleep(0.3)  # let plotly finish drawing before the screenshot
        text = browser.find_element("tag name", "main").text
        assert "must not be treated as exact" in text, path
        assert "Traceback" not in text
        browser.save_screenshot(str(SHOTS / f"{(path.strip('/') or 'overview')}.png"))
        assert console_errors(browser) == [], path
        urls += requested_urls(browser)
        assert professional not in browser.current_url
    assert urls and all(u.startswith(api_host) or u.startswith(("data:", "blob:")) for u in urls), \
        [u for u in urls if not u.startswith(api_host)]
    assert any("/assets/topojson/world_110m.json" in u for u in urls), "the map's outlines came from the app"
    assert not any(professional in u for u in urls)
    browser.get(base + "/sign-in")
    browser.save_screenshot(str(SHOTS / "sign-in.png"))


def test_values_shown_equal_the_apis_answer(stack, browser, professional):
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader-count"))
    with SignalsClient(stack["api"], professional) as api:
        top = api.top_keywords(window="24h", limit=10)["keywords"][0]
        totals = api.query(window="24h")["results"][0]
        geo = api.geo_heat(window="24h", level="country")["regions"][0]
    assert content(css(browser, "#overview-leader")[0]) == top["keyword_raw"]
    assert int(content(css(browser, "#overview-leader-count")[0])) == top["suppressions"]
    assert content(css(browser, "#total-suppressions")[0]) == f"{totals['suppressions']:,}"
    open_page(browser, stack["dash"], "/geography")
    first = [td.text for td in css(browser, "#geo-rows tbody tr:first-child td")]
    assert first[:3] == [geo["label"], geo["geo_key"], str(geo["suppressions"])]


def test_a_control_changes_the_figure(stack, browser, professional):
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader"))
    open_page(browser, stack["dash"], "/keywords")
    wait(browser, lambda d: figure_data(d, "keywords-graph") not in (None, "[]"))
    before = figure_data(browser, "keywords-graph")
    click_option(browser, "keywords-bucket", "day")
    wait(browser, lambda d: figure_data(d, "keywords-graph") not in (before, None, "[]"))
    after = json.loads(figure_data(browser, "keywords-graph"))
    assert len(after[0]["x"]) < len(json.loads(before)[0]["x"])  # days instead of hours


def test_the_map_draws_at_every_level_from_local_data(stack, browser, professional):
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader"))
    requested_urls(browser)
    open_page(browser, stack["dash"], "/geography")
    wait(browser, lambda d: len(css(d, "#geo-graph .choroplethlayer path")) > 10)
    for level in ("region", "county", "city"):
        click_option(browser, "geo-level", level)
        wait(browser, lambda d, level=level: f"by {level} " in (figure_title(d, "geo-graph") or ""))
        wait(browser, lambda d: len(css(d, "#geo-graph .scattergeo path.point")) > 0
             and len(css(d, "#geo-graph .layer path, #geo-graph .geo path")) > 0)
    assert all(u.startswith("http://127.0.0.1:") or u.startswith(("data:", "blob:"))
               for u in requested_urls(browser))
    assert console_errors(browser) == []


def test_wrong_key_and_revoked_key_send_back_to_sign_in(stack, browser):
    sign_in(browser, stack["dash"], "sig_live_" + "x" * 40)
    wait(browser, lambda d: css(d, "#sign-in-message .error"))
    assert "not accepted" in content(css(browser, "#sign-in-message .error")[0])
    key = stack["keys"]["revocable"]
    sign_in(browser, stack["dash"], key)
    wait(browser, lambda d: css(d, "#overview-leader"))
    revoked = cli(stack["data"], "keys", "revoke", key)
    assert revoked.returncode == 0, revoked.stderr
    browser.get(stack["dash"] + "/trending")
    wait(browser, lambda d: d.current_url.endswith("/sign-in") and css(d, "#sign-in-notice .notice"))
    assert "sign in again" in content(css(browser, "#sign-in-notice")[0])
    assert browser.execute_script("return window.sessionStorage.getItem('session')") in (None, "null") or \
        key not in browser.execute_script("return window.sessionStorage.getItem('session')")


def test_plan_below_the_query_builder_is_told_which_plan(stack, browser):
    sign_in(browser, stack["dash"], stack["keys"]["observer"])
    wait(browser, lambda d: css(d, "#overview-leader"))
    assert "Observer plan" in content(css(browser, "#plan-badge")[0])
    browser.get(stack["dash"] + "/query")
    wait(browser, lambda d: css(d, "#query-window"))
    settle(browser)
    wait(browser, lambda d: d.execute_script(
        "const g = document.querySelector('#query-graph .js-plotly-plot'); return !!(g && g.data);"))
    click_option(browser, "query-window", "7d")
    css(browser, "#query-group-by input[value='keyword']")[0].click()
    css(browser, "#query-run")[0].click()
    wait(browser, lambda d: css(d, "#query-status .error"))
    message = content(css(browser, "#query-status .error")[0])
    assert "needs the Analyst plan or higher" in message and "Observer" in message
    browser.save_screenshot(str(SHOTS / "state-403.png"))


def test_rate_limited_says_when_to_retry(stack, browser):
    key = stack["keys"]["limited"]
    sign_in(browser, stack["dash"], key)
    wait(browser, lambda d: css(d, "#overview-leader"))
    with httpx.Client(base_url=stack["api"], headers={"Authorization": f"Bearer {key}"}) as http:
        for _ in range(40):  # Observer: 30 a minute
            if http.get("/api/v1/account").status_code == 429:
                break
    browser.get(stack["dash"] + "/trending")
    wait(browser, lambda d: css(d, "#trending-status .error"))
    assert "Try again in" in content(css(browser, "#trending-status .error")[0])
    assert console_errors(browser) == []
    browser.save_screenshot(str(SHOTS / "state-429.png"))


def test_api_down_is_a_message_not_a_traceback(stack, browser, professional):
    with dashboard(f"http://127.0.0.1:{free_port()}", stack["data"]) as (base, _log):
        sign_in(browser, base, professional)
        wait(browser, lambda d: css(d, "#sign-in-message .error"))
        text = content(css(browser, "#sign-in-message .error")[0])
        assert "not answering" in text and "Traceback" not in text
        browser.get(base + "/geography")  # its controls need the API's document
        wait(browser, lambda d: "not answering" in d.find_element("tag name", "body").text
             or d.current_url.endswith("/sign-in"))
