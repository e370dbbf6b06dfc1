"""The dashboard in a real headless Chromium, against the real API (gunicorn) and the real
dashboard process (the Procfile's line): sign-in, every page, values equal to the API's, controls
that change figures, an offline map, no console errors, and the 401/403/429/API-down states.
Screenshots of the sign-in, 403, 429 and webhook states go to tests.support.browser.shots()
(docs/dashboard/ under scripts/screenshots.sh); the pages' own are test_dashboard_layout.py's."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from connectors.client import SignalsClient
from tests.support.browser import (
    chrome,
    click_option,
    console_errors,
    css,
    dashboard,
    figure_data,
    layout_problems,
    requested_urls,
    settle,
    shots,
    sign_in,
    wait,
)
from tests.support.processes import cli, create_key, gunicorn
from tests.support.queueing_front import queueing_front
from tests.support.webhook_receiver import Answer, receiver
from tests.support.worker import worker_process

pytestmark = pytest.mark.process

PAGES = ["/", "/keywords", "/domains", "/geography", "/trending", "/activity", "/query", "/account"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("dashboard-data")
    made = cli(data_dir, "data", "demo", "--events", "200000", "--days", "90")
    assert made.returncode == 0, made.stderr
    keys = {tier: create_key(data_dir, tier) for tier in ("professional", "observer")}
    keys["revocable"] = create_key(data_dir, "analyst")
    keys["limited"] = create_key(data_dir, "observer")
    # Webhooks to a receiver on 127.0.0.1 over http: the development setting that allows them.
    # The worker sends queued deliveries (test pings); its evaluations are a day apart, so the
    # tests' webhooks get no trending alert besides the test pings they send (its first round runs
    # at start, before any webhook exists).
    with gunicorn(data_dir, SIGNALS_AUTH_CACHE_SECONDS="0", SIGNALS_WEBHOOK_ALLOW_PRIVATE="1") as (api_url, api_log), \
            worker_process(data_dir, SIGNALS_WEBHOOK_ALLOW_PRIVATE="1", SIGNALS_WORKER_INTERVAL_SECONDS="86400"), \
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


def content(element) -> str:
    return (element.get_attribute("textContent") or "").strip()


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
    browser.get(base + "/sign-in")
    wait(browser, lambda d: css(d, "#api-key"))
    settle(browser)
    browser.save_screenshot(str(shots() / "sign-in.png"))
    # Signed out: no plan, no count and no "Sign out" shown (issue 42: the button showed here)
    assert not css(browser, "#sign-out")[0].is_displayed() and not css(browser, "#nav")[0].is_displayed()
    sign_in(browser, base, professional)
    wait(browser, lambda d: d.current_url == base + "/" and css(d, "#overview-leader"))
    assert css(browser, "#sign-out")[0].is_displayed()
    browser.get(base + "/sign-in")  # signed in, on the sign-in page: still no "Sign out" there
    wait(browser, lambda d: css(d, "#api-key"))
    settle(browser)
    assert not css(browser, "#sign-out")[0].is_displayed()
    browser.get(base + "/")
    wait(browser, lambda d: css(d, "#overview-leader") and css(d, "#sign-out")[0].is_displayed())
    assert "Professional plan" in content(css(browser, "#plan-badge")[0])
    assert "requests used this minute" in content(css(browser, "#rate-use")[0])
    urls = []
    for path in PAGES:
        open_page(browser, base, path)
        wait(browser, lambda d: not css(d, "._dash-loading-callback"))
        time.sleep(0.3)  # let plotly finish drawing before the screenshot
        text = browser.find_element("tag name", "main").text
        assert "must not be treated as exact" in text, path
        assert "Traceback" not in text
        assert console_errors(browser) == [], path
        urls += requested_urls(browser)
        assert professional not in browser.current_url
    assert urls and all(u.startswith(api_host) or u.startswith(("data:", "blob:")) for u in urls), \
        [u for u in urls if not u.startswith(api_host)]
    assert any("/assets/topojson/world_110m.json" in u for u in urls), "the map's outlines came from the app"
    assert not any(professional in u for u in urls)


def test_values_shown_equal_the_apis_answer(stack, browser, professional):
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader-count"))
    with SignalsClient(stack["api"], professional) as api:
        top = api.top_keywords(window="24h", limit=10)["keywords"][0]
        totals = api.query(window="24h")["results"][0]
        geo = api.geo_heat(window="24h", level="country")["regions"][0]
    assert content(css(browser, "#overview-leader")[0]) == top["keyword_raw"]
    assert content(css(browser, "#overview-leader-count")[0]) == f"{top['suppressions']:,}"
    assert content(css(browser, "#total-suppressions")[0]) == f"{totals['suppressions']:,}"
    open_page(browser, stack["dash"], "/geography")
    first = [content(css(browser, f"#geo-rows tbody tr:first-child {selector}")[0])
             for selector in ("[data-col='label'] .cell-main", "[data-col='geo_key']", "[data-col='suppressions'] .value")]
    assert first == [geo["label"], geo["geo_key"], f"{geo['suppressions']:,}"]


def test_the_keywords_page_reads_keyword_from_the_url(stack, browser, professional):
    """`/keywords?keyword=...` draws that keyword (issue 42: it was dropped silently) and the URL
    then says `keywords=`."""
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader"))
    with SignalsClient(stack["api"], professional) as api:
        keyword = api.top_keywords(window="7d", limit=5)["keywords"][4]["keyword_raw"]  # not a default one
    browser.get(stack["dash"] + "/keywords?keyword=" + keyword.replace(" ", "+") + "&window=7d")
    wait(browser, lambda d: figure_data(d, "keywords-graph") not in (None, "[]"))
    drawn = json.loads(figure_data(browser, "keywords-graph"))
    assert [trace["name"] for trace in drawn] == [keyword]
    assert css(browser, "#keywords-subjects")[0].get_attribute("value") == keyword
    wait(browser, lambda d: "keywords=" in d.current_url and "keyword=" not in d.current_url.replace("keywords=", ""))


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
    wait(browser, lambda d: css(d, "#query-window") and css(d, "#query-plan-note .notice"))
    assert "needs the Analyst plan or higher" in content(css(browser, "#query-plan-note")[0])
    settle(browser)
    assert not css(browser, "#query-status .error")  # nothing said before Run is pressed
    wait(browser, lambda d: d.execute_script(
        "const g = document.querySelector('#query-graph .js-plotly-plot'); return !!(g && g.data);"))
    click_option(browser, "query-window", "7d")
    css(browser, "#query-group-by input[value='keyword']")[0].click()
    css(browser, "#query-run")[0].click()
    wait(browser, lambda d: css(d, "#query-status .error"))
    message = content(css(browser, "#query-status .error")[0])
    assert "needs the Analyst plan or higher" in message and "Observer" in message
    browser.save_screenshot(str(shots() / "state-403.png"))


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
    browser.save_screenshot(str(shots() / "state-429.png"))


def test_api_down_is_a_message_not_a_traceback(stack, browser, professional):
    # An address where nothing answers: a port bound but not listening (connections are refused),
    # held for the whole test so no other process can take it meanwhile.
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        _api_down(stack, browser, professional, f"http://127.0.0.1:{dead.getsockname()[1]}")


def _api_down(stack, browser, professional, api_url):
    with dashboard(api_url, stack["data"]) as (base, _log):
        sign_in(browser, base, professional)
        wait(browser, lambda d: css(d, "#sign-in-message .error"))
        text = content(css(browser, "#sign-in-message .error")[0])
        assert "not answering" in text and "Traceback" not in text
        browser.get(base + "/geography")  # its controls need the API's document
        wait(browser, lambda d: "not answering" in d.find_element("tag name", "body").text
             or d.current_url.endswith("/sign-in"))


def fill(driver, control_id: str, value) -> None:
    """Type into an input as a person would (Selenium's clear() empties the DOM but not React's state)."""
    from selenium.webdriver.common.keys import Keys

    element = css(driver, f"#{control_id}")[0]
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(str(value))
    wait(driver, lambda d: css(d, f"#{control_id}")[0].get_attribute("value") == str(value))
    time.sleep(0.3)  # a number input commits on blur/debounce


def press(driver, button_id: str) -> str:
    """Click a button of the webhooks section; the message that replaces the one shown before."""
    before = content(css(driver, "#webhook-message")[0])
    css(driver, f"#{button_id}")[0].click()
    wait(driver, lambda d: css(d, "#webhook-message .notice, #webhook-message .error")
         and content(css(d, "#webhook-message")[0]) != before)
    return content(css(driver, "#webhook-message")[0])


def test_account_page_manages_webhooks(stack, browser, professional):
    """Create (the secret shown once), send a test (signed, received, in the delivery log), edit,
    a refused field named, delete: each checked against the API's own answer."""
    sign_in(browser, stack["dash"], professional)
    wait(browser, lambda d: css(d, "#overview-leader"))
    api = SignalsClient(stack["api"], professional)
    browser.get(stack["dash"] + "/account")
    wait(browser, lambda d: css(d, "#account-plan") and css(d, "#webhook-count"))
    settle(browser)
    assert "0 of 10 webhooks" in content(css(browser, "#webhook-count")[0])
    assert not css(browser, "#webhook-edit")[0].is_displayed()  # nothing to act on yet

    # A refused field is named in the API's words, and nothing is created.
    fill(browser, "webhook-url", "ftp://example.com/hook")
    click_option(browser, "webhook-window", "24h")
    click_option(browser, "webhook-dimension", "keyword")
    fill(browser, "webhook-threshold-pct", 50)
    fill(browser, "webhook-cooldown-minutes", 60)
    refused = press(browser, "webhook-create")
    assert "url:" in refused and "https" in refused
    assert api.webhooks()["webhooks"] == []

    with receiver(Answer(200)) as rec:
        fill(browser, "webhook-url", rec.url)
        assert "Created webhook" in press(browser, "webhook-create")
        wait(browser, lambda d: css(d, "#webhook-edit")[0].is_displayed())
        secret = content(css(browser, "#webhook-secret")[0])
        (hook,) = api.webhooks()["webhooks"]
        assert secret.startswith("whsec_") and hook["url"] == rec.url and hook["threshold_pct"] == 50
        wait(browser, lambda d: "1 of 10 webhooks" in content(css(d, "#webhook-count")[0]))
        assert content(css(browser, "#webhook-rows tbody td[data-col='id']")[0]) == hook["id"]

        # Sent by the worker (202: "queued", then the page follows the delivery log until the
        # attempt is there) or, by an API that sends it in the request, at once (200).
        first = press(browser, "webhook-test")
        assert "answered 200" in first or "queued" in first, first
        if "queued" in first:
            wait(browser, lambda d: "answered 200" in content(css(d, "#webhook-message")[0]), timeout=40)
        assert "answered 200" in content(css(browser, "#webhook-message")[0])
        (got,) = rec.wait_for(1)
        Webhook(secret).verify(got.body, got.headers)  # signed with the secret the page showed
        wait(browser, lambda d: css(d, "#webhook-log-rows td[data-col='outcome']"))
        logged = api.webhook_deliveries(hook["id"])["deliveries"][0]
        assert content(css(browser, "#webhook-log-rows td[data-col='outcome']")[0]) == logged["outcome"] == "succeeded"
        assert content(css(browser, "#webhook-log-rows td[data-col='delivery_id']")[0]) == logged["delivery_id"]
        assert layout_problems(browser) == []  # the webhook list and its delivery log fit their boxes
        browser.execute_script("document.querySelector('.webhooks').scrollIntoView()")
        browser.save_screenshot(str(shots() / "account-webhooks.png"))

    css(browser, "#webhook-edit")[0].click()
    wait(browser, lambda d: "Edit webhook" in content(css(d, "#webhook-form-title")[0]))
    assert css(browser, "#webhook-url")[0].get_attribute("value") == hook["url"]
    fill(browser, "webhook-threshold-pct", 75)
    assert "Saved" in press(browser, "webhook-save")
    assert api.webhook(hook["id"])["threshold_pct"] == 75
    wait(browser, lambda d: content(css(d, "#webhook-rows tbody td[data-col='threshold_pct']")[0]) == "75 %")

    css(browser, "#webhook-delete")[0].click()
    wait(browser, lambda d: _alert(d))
    browser.switch_to.alert.accept()
    wait(browser, lambda d: "Deleted" in content(css(d, "#webhook-message")[0]))
    assert api.webhooks()["webhooks"] == []
    wait(browser, lambda d: "0 of 10 webhooks" in content(css(d, "#webhook-count")[0]))
    assert console_errors(browser) == []
    api.close()


@pytest.mark.parametrize("mode", ["queued", "never"])
def test_the_test_button_follows_a_queued_delivery(stack, browser, professional, mode):
    """The API answers Send test with 202 (the worker sends it; here a front in front of the API
    answers so): the page says "queued", reads the delivery log a few times and says how the
    delivery went once its attempt is there; when none comes within about 30 s, that the worker
    may not be running."""
    api = SignalsClient(stack["api"], professional)
    hook = None
    with receiver(Answer(200)) as rec, queueing_front(stack["api"], mode) as (front, answered), \
            dashboard(front, stack["data"]) as (base, _log):
        hook = api.create_webhook(url=rec.url, window="24h", dimension="keyword", threshold_pct=50,
                                  cooldown_minutes=60)
        sign_in(browser, base, professional)
        wait(browser, lambda d: css(d, "#overview-leader"))
        browser.get(base + "/account")
        wait(browser, lambda d: css(d, "#account-plan") and css(d, "#webhook-test") and
             css(d, "#webhook-test")[0].is_displayed())
        settle(browser)
        first = press(browser, "webhook-test")
        assert "queued" in first and [a[:3] for a in answered] == ["202"], (first, answered)
        if mode == "queued":
            wait(browser, lambda d: "answered 200" in content(css(d, "#webhook-message")[0]), timeout=20)
            (got,) = rec.wait_for(1)
            logged = api.webhook_deliveries(hook["id"])["deliveries"][0]
            assert logged["delivery_id"] in first and logged["outcome"] == "succeeded"
            wait(browser, lambda d: [content(td) for td in css(d, "#webhook-log-rows td[data-col='delivery_id']")]
                 == [logged["delivery_id"]])
        else:
            wait(browser, lambda d: "still queued" in content(css(d, "#webhook-message")[0]), timeout=60)
            message = content(css(browser, "#webhook-message")[0])
            assert "python -m service worker" in message and "delivery log" in message
            assert rec.received == []
        assert console_errors(browser) == []
    api.delete_webhook(hook["id"])
    api.close()


def test_query_builder_downloads_the_apis_own_csv(stack, professional, tmp_path):
    """Download CSV saves exactly the API's CSV for the same query, under the API's file name."""
    driver = chrome(download_dir=tmp_path)
    try:
        sign_in(driver, stack["dash"], professional)
        wait(driver, lambda d: css(d, "#overview-leader"))
        open_page(driver, stack["dash"], "/query")  # window 7d, group_by keyword, Run
        wait(driver, lambda d: css(d, "#query-rows tbody tr"))
        css(driver, "#query-csv")[0].click()
        wait(driver, lambda d: [f for f in tmp_path.iterdir() if f.suffix == ".csv"])
        (saved,) = [f for f in tmp_path.iterdir() if f.suffix == ".csv"]
    finally:
        driver.quit()
    body = {"window": "7d", "group_by": ["keyword"], "order_by": "suppressions", "order": "desc", "limit": 100,
            "format": "csv"}
    with httpx.Client(base_url=stack["api"], headers={"Authorization": f"Bearer {professional}"}) as http:
        expected = http.post("/api/v1/signals/query", json=body)
    assert expected.status_code == 200
    assert f'filename="{saved.name}"' in expected.headers["content-disposition"]
    assert saved.read_bytes() == expected.content


def _alert(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert  # noqa: B018 (raises when there is none)
        return True
    except NoAlertPresentException:
        return False
