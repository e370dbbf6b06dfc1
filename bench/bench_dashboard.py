"""Each dashboard page's time to a drawn result in headless Chromium: the first load, then the
median, min and max of several more loads, each from navigation start (the browser's own clock,
performance.now()) until the page's result is on the screen:

- /, /keywords, /domains, /geography, /trending, /activity: the page's figure is drawn (its title
  and its traces, or the message of an empty figure) and its as_of is shown (the API answer is in
  and plotly has rendered it);
- /query: the navigation AND the clicks a viewer makes (window 7d, group_by keyword, Run query)
  until the results table and the figure are drawn. The clicks are made as soon as the controls
  are there, so the time includes the driver's round trips for them; the request the Run button
  sent is checked afterwards (window 7d, group_by [keyword]);
- /account: no figure; until the account details (#account-plan) are shown.

A load that shows an error box (a 429, the API down, ...) or times out stops the bench with the
page's text and the browser console's errors.

Starts the real processes as the tests do: the demo data set (200,000 events over 90 days), the
API (gunicorn, the Procfile's web line) and the dashboard (the Procfile's dashboard line). One
Professional key (300 API requests a minute) is signed in once; a load makes 1 to 4 API requests
(/keywords 4, /domains 2 to 4, / 3, /account 2, the others 1), so the bench is paced: after a load
that leaves fewer than MARGIN requests in the key's minute (the header's "used this minute"), it
waits for the reset and says how long it waited in all. --loads 7 makes about 130 requests in about
a minute and does not wait.

After signing in, /query (an empty plotly figure, no API call) is opened twice untimed: the one or
two loads right after the sign-in have a long task of 0.8 to 1 s (Chromium compiling
plotly.min.js, 4.8 MB, without V8's code cache, as far as we can tell), which would otherwise land
in the first page's numbers.

"first" is the page's first load: the API computes its answer (and keeps it in its response
cache, shared by every key) and the dashboard's client has no ETag for it yet; for /, the sign-in
already drew it once. The later loads take the path of a returning viewer: the API's cached answer,
sent as a 304 when the dashboard worker that serves the callback made the call before (each of
its 2 workers remembers its own ETags), as a 200 from the cache otherwise; the run's 200/304 counts
are printed. The breakdown columns are medians of the later loads: Dash's scripts loaded and run
(the load event), the end of the page's longest callback request (the one that waits on the API:
drawn minus this is mostly plotly's part) and the number of callback requests.

    .venv/bin/python bench/bench_dashboard.py [--loads 7] [--events 200000]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.browser import (
    chrome,  # noqa: E402
    console_errors,  # noqa: E402
    dashboard,  # noqa: E402
)
from tests.support.processes import cli, create_key, gunicorn  # noqa: E402


def figure_drawn(graph_id: str) -> str:
    """plotly has drawn the callback's figure (its title and a trace, or the message of an empty
    one: the placeholder before the answer has neither) and the page shows the answer's as_of."""
    return (f"const g = document.querySelector('#{graph_id} .js-plotly-plot');"
            "const title = g && g.querySelector('svg.main-svg .gtitle');"
            "const asOf = document.querySelector('.page-footer .as-of');"
            "const drawn = !!(title && title.textContent.trim() && g.querySelector('.trace, .annotation-text')"
            " && asOf && asOf.textContent.trim() && asOf.textContent.trim() !== '—');")


# page -> the body of a JavaScript function that is true once the page's result is on the screen
PAGES = {path: figure_drawn(graph) + "return drawn;"
         for path, graph in {"/": "overview-top-keywords", "/keywords": "keywords-graph",
                             "/domains": "domains-graph", "/geography": "geo-graph",
                             "/trending": "trending-graph", "/activity": "activity-graph"}.items()}
PAGES["/query"] = figure_drawn("query-graph") + "return drawn && !!document.querySelector('#query-rows th');"
PAGES["/account"] = "const p = document.querySelector('#account-plan'); return !!(p && p.textContent.trim());"
MARGIN = 20  # requests left in the minute below which the bench waits for the reset (a load makes 1 to 4)
ERROR = "const e = document.querySelector('main .error'); return e ? e.textContent : null;"


class PageFailed(RuntimeError):
    pass


def until(driver, script: str, what: str, timeout: float = 60.0) -> float:
    """Polls `script` until it is true; returns performance.now() then (ms since navigation start).
    An error box on the page or the timeout raises PageFailed with what the page showed and the
    browser console's errors."""
    deadline = time.monotonic() + timeout
    while True:
        at = driver.execute_script(f"if ((() => {{ {script} }})()) return performance.now(); return null;")
        if at is not None:
            return at
        error = driver.execute_script(ERROR)
        if error or time.monotonic() > deadline:
            shown = " ".join(driver.find_element("tag name", "body").text.split())[:800]
            raise PageFailed(f"{driver.current_url}: {'error box' if error else 'timed out'} waiting for {what}; "
                             f"the page showed: {shown}; console errors: {console_errors(driver)}")
        time.sleep(0.01)


def run_query(driver) -> None:
    """The viewer's clicks on /query: window 7d, group_by keyword, Run query."""
    seven = "//*[@id='query-window']//label[normalize-space()='7d']"
    until(driver, "return !!document.querySelector('#query-run') && !!document.evaluate(\"" + seven
          + "\", document, null, 9, null).singleNodeValue;", "the query controls")
    driver.find_element("xpath", seven).click()
    until(driver, "return document.evaluate(\"" + seven + "\", document, null, 9, null).singleNodeValue"
          ".getAttribute('aria-selected') === 'true';", "window 7d selected")
    driver.find_element("css selector", "#query-group-by input[value='keyword']").click()
    until(driver, "return document.querySelector(\"#query-group-by input[value='keyword']\").checked;",
          "group_by keyword checked")
    driver.find_element("id", "query-run").click()


def breakdown(driver, drawn_at: float) -> tuple[float, float, int]:
    """(load event, end of the longest callback request, callback requests), in ms, of the requests
    started before the page was drawn. The longest callback is the one that waits on the API."""
    load, callbacks = driver.execute_script(
        "return [performance.getEntriesByType('navigation')[0].loadEventEnd,"
        " performance.getEntriesByType('resource').filter(e => e.name.includes('/_dash-update-component'))"
        " .map(e => [e.startTime, e.responseEnd])];")
    before = [(end - start, end) for start, end in callbacks if start < drawn_at]
    return load, max(before, default=(0.0, 0.0))[1], len(before)


def time_load(driver, url: str, path: str) -> tuple[float, tuple[float, float, int]]:
    driver.get("about:blank")
    driver.get(url)
    if path == "/query":
        run_query(driver)
    drawn_at = until(driver, PAGES[path], f"{path} drawn")
    if path == "/query":
        sent = [body for body in posted(driver) if '"query-run.n_clicks"' in body.replace(" ", "")]
        if not sent or not all('"7d"' in body and re.search(r'\[\s*"keyword"\s*\]', body) for body in sent):
            raise PageFailed("/query: the Run request did not carry window 7d and group_by [keyword]")
    return drawn_at, breakdown(driver, drawn_at)


def posted(driver) -> list[str]:
    """The bodies of the callback requests since the last call (the performance log is drained)."""
    import json

    bodies = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        request = message.get("params", {}).get("request", {})
        if message.get("method") == "Network.requestWillBeSent" and "_dash-update-component" in request.get("url", ""):
            bodies.append(request.get("postData", ""))
    return bodies


def sign_in(driver, dash_url: str, key: str) -> None:
    driver.get(dash_url + "/sign-in")
    until(driver, "return !!document.querySelector('#api-key');", "the sign-in form")
    time.sleep(1)  # Dash answers the page's first callbacks
    driver.find_element("id", "api-key").send_keys(key)
    driver.find_element("id", "sign-in").click()
    until(driver, "return !!document.querySelector('#overview-leader');", "the overview after sign-in")
    for _ in range(2):  # plotly compiled (and V8's code cache filled) by a page that calls no API
        driver.get("about:blank")
        driver.get(dash_url + "/query")
        until(driver, "return !!document.querySelector('#query-graph svg.main-svg');", "/query's empty figure")


def pace(driver) -> float:
    """Waits for the key's minute to reset when fewer than MARGIN requests are left (the header's
    rate-limit use, from the last answer); returns the seconds waited."""
    shown = driver.find_element("id", "rate-use").text
    use = re.search(r"(\d+) of (\d+) requests used this minute(?: · resets in (\d+) s)?", shown)
    if not use or int(use[2]) - int(use[1]) >= MARGIN:
        return 0.0
    time.sleep(int(use[3] or 60) + 1)
    return int(use[3] or 60) + 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        assert cli(data, "data", "demo", "--events", str(args.events), "--days", "90").returncode == 0
        key = create_key(data, "professional")
        waited = 0.0
        with gunicorn(data) as (api_url, api_log), dashboard(api_url, data) as (dash_url, _):
            driver = chrome()
            try:
                sign_in(driver, dash_url, key)
                print(f"time to a drawn result, ms from navigation start: the first load, then {args.loads} more "
                      f"({args.events:,} demo events; Chromium {driver.capabilities.get('browserVersion')})")
                print(f"{'page':<10} {'first':>6} {'median':>7} {'min':>6} {'max':>6} | {'load ev':>7} "
                      f"{'data in':>7} {'cbs':>4}")
                for path in PAGES:
                    posted(driver)
                    loads = []
                    for _ in range(args.loads + 1):
                        loads.append(time_load(driver, dash_url + path, path))
                        waited += pace(driver)
                    (first, _), loads = loads[0], loads[1:]
                    times = [t for t, _ in loads]
                    load, data_in, count = (statistics.median(c) for c in zip(*(b for _, b in loads), strict=True))
                    print(f"{path:<10} {first:>6.0f} {statistics.median(times):>7.0f} {min(times):>6.0f} "
                          f"{max(times):>6.0f} | {load:>7.0f} {data_in:>7.0f} {count:>4.0f}", flush=True)
            finally:
                driver.quit()
        answers = re.findall(r'"(?:GET|POST) /api/v1/(?:signals|account)\S* HTTP/1.1" (\d{3})', api_log[0])
        print("/query: the time includes the clicks (window 7d, group_by keyword, Run query); "
              "/account: no figure, until #account-plan is shown")
        print("API answers to the dashboard during the run: "
              + ", ".join(f"{answers.count(code)} x {code}" for code in sorted(set(answers)))
              + f"; waited {waited:.0f} s for the key's rate limit")


if __name__ == "__main__":
    main()
