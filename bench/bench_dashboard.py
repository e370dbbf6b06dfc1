"""Each dashboard page's time to a drawn figure in headless Chromium: the median (and min/max)
of several full loads of the page, from navigation start until the page's figure has its SVG
drawn and its as_of is shown (the API answer is in and plotly has rendered).

Starts the real processes as the tests do: the demo data set (200,000 events over 90 days), the
API (gunicorn, the Procfile's web line) and the dashboard (the Procfile's dashboard line).
The first load of each page is a warm-up (the API computes and caches the answer; later loads
are the ETag path a returning viewer takes), reported separately.

    .venv/bin/python bench/bench_dashboard.py [--loads 7] [--events 200000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.browser import (
    chrome,  # noqa: E402
    dashboard,  # noqa: E402
)
from tests.support.processes import cli, create_key, gunicorn  # noqa: E402

# page -> the graph whose drawing ends the measurement
PAGES = {"/": "overview-top-keywords", "/keywords": "keywords-graph", "/domains": "domains-graph",
         "/geography": "geo-graph", "/trending": "trending-graph", "/activity": "activity-graph"}


def drawn(driver, graph_id: str) -> bool:
    return bool(driver.execute_script(
        "const g = document.querySelector(arguments[0] + ' .js-plotly-plot');"
        "const asOf = document.querySelector('.page-footer .as-of');"
        "return !!(g && g.data && g.data.length && g.querySelector('svg.main-svg') && asOf"
        " && asOf.textContent.trim() && asOf.textContent.trim() !== '—');", f"#{graph_id}"))


def time_load(driver, url: str, graph_id: str, timeout: float = 60.0) -> float:
    driver.get("about:blank")
    start = time.perf_counter()
    driver.get(url)
    while not drawn(driver, graph_id):
        if time.perf_counter() - start > timeout:
            raise TimeoutError(url)
        time.sleep(0.01)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        assert cli(data, "data", "demo", "--events", str(args.events), "--days", "90").returncode == 0
        key = create_key(data, "professional")
        with gunicorn(data) as (api_url, _), dashboard(api_url, data) as (dash_url, _):
            driver = chrome()
            try:
                driver.get(dash_url + "/sign-in")
                while not driver.find_elements("id", "api-key"):
                    time.sleep(0.05)
                time.sleep(1)
                driver.find_element("id", "api-key").send_keys(key)
                driver.find_element("id", "sign-in").click()
                while not driver.find_elements("id", "overview-leader"):
                    time.sleep(0.05)
                print(f"time to a drawn figure, {args.loads} loads per page after one warm-up "
                      f"({args.events:,} demo events; Chromium {driver.capabilities.get('browserVersion')})")
                print(f"{'page':<12} {'first ms':>9} {'median ms':>10} {'min':>7} {'max':>7}")
                for path, graph in PAGES.items():
                    first = time_load(driver, dash_url + path, graph)
                    times = [time_load(driver, dash_url + path, graph) for _ in range(args.loads)]
                    print(f"{path:<12} {first:>9.0f} {statistics.median(times):>10.0f} {min(times):>7.0f} "
                          f"{max(times):>7.0f}")
            finally:
                driver.quit()


if __name__ == "__main__":
    main()
