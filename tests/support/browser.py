"""Headless Chromium for the dashboard's tests and benchmark: Debian's chromium and
chromium-driver (scripts/install_chromium.sh installs them), driven by plain Selenium, with the
browser console and the network (performance log) recorded."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path

from tests.support.processes import procfile_command, service_env, serving
from tests.support.redis_server import free_port

CHROMIUM = os.environ.get("SIGNALS_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SIGNALS_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 30


@functools.cache
def shots() -> Path:
    """Where the browser tests save their screenshots: SIGNALS_SCREENSHOTS_DIR when set
    (scripts/screenshots.sh sets docs/dashboard/, those of docs/dashboard.md), else a temporary directory, so
    running the tests leaves the working tree as it was."""
    chosen = os.environ.get("SIGNALS_SCREENSHOTS_DIR")
    folder = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="signals-screenshots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chrome(download_dir: Path | None = None):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    assert not missing, f"{missing} missing: run scripts/install_chromium.sh (scripts/test.sh does)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     "--disable-gpu", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-default-apps"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    if download_dir is not None:  # downloads land there without asking
        options.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                                  "download.prompt_for_download": False})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for since the last call (the performance log is drained)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def unanswered(driver) -> list[str]:
    """The requests still waiting for an answer, and those that failed, from the performance log
    (drained): what a page stuck on "Loading..." is waiting for."""
    sent: dict[str, str] = {}
    failed = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            sent[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFinished":
            sent.pop(params["requestId"], None)
        elif method == "Network.loadingFailed":
            failed.append(f"{sent.pop(params['requestId'], '?')} ({params.get('errorText')})")
    return [f"{url} (no answer yet)" for url in sent.values()] + failed


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


@contextlib.contextmanager
def dashboard(api_url: str, data_dir: Path, **extra: str):
    """The Procfile's dashboard command, really started (`extra`: more environment); yields its
    base URL and a list that receives its output once it has stopped."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = service_env(data_dir, SIGNALS_API_URL=api_url, SIGNALS_DASHBOARD_PORT=str(port), **extra)
    with serving(procfile_command("dashboard"), env, base + "/sign-in", "the dashboard") as log:
        yield base, log


# -- driving a page (the dashboard's browser tests) ----------------------------------------------

def wait(driver, condition, timeout=WAIT):
    """WebDriverWait's until, failing with what the page showed (its URL and text) at the end."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        shown = " ".join(driver.find_element("tag name", "body").text.split())
        shown = shown if len(shown) < 2500 else shown[:500] + " … " + shown[-2000:]
        raise TimeoutException(f"waited {timeout} s on {driver.current_url}; the page showed: {shown}; "
                               f"requests unanswered or failed: {unanswered(driver)}; "
                               f"console: {console_errors(driver)}") from None


def css(driver, selector):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def click_option(driver, control_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By

    label = f"//*[@id='{control_id}']//label[normalize-space()='{value}']"
    driver.find_element(By.XPATH, label).click()
    wait(driver, lambda d: d.find_element(By.XPATH, label).get_attribute("aria-selected") == "true")
    time.sleep(0.5)  # Dash commits the new value to its store


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


# -- what a person notices on a page (the dashboard's layout tests) ------------------------------

# Every table's width against its box's, the page's against the window's.
_WIDTHS = """
const out = [];
for (const table of document.querySelectorAll('main table')) {
  const box = table.parentElement;
  out.push({id: table.id || box.id || box.className, table: table.getBoundingClientRect().width,
            box: box.clientWidth, scroll: box.scrollWidth});
}
return {tables: out, page: document.documentElement.scrollWidth, window: window.innerWidth};
"""
# The header's visible parts (brand, links, plan, use, sign-out) as their rows: the distinct tops of
# their boxes, rounded (one row: one top, give or take the vertical centring).
_HEADER_ROWS = """
const parts = Array.from(document.querySelectorAll('header.top .brand, header.top .nav-link, header.top .who > *'))
  .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0);
const middles = parts.map(e => { const r = e.getBoundingClientRect(); return (r.top + r.bottom) / 2; });
return middles.length ? Math.max(...middles) - Math.min(...middles) : 0;
"""
# Every count cell's lines (its value, its change, its previous value, its interval) and how many
# lines of text each takes.
_CELL_LINES = """
return Array.from(document.querySelectorAll('main td.count')).map(td => {
  const parts = Array.from(td.children);
  const lines = parts.map(p => {
    const style = getComputedStyle(p), line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.25;
    return Math.round(p.getBoundingClientRect().height / line);
  });
  return {text: td.innerText.replace(/\\n/g, ' / '), parts: parts.length, lines: lines.reduce((a, b) => a + b, 0)};
});
"""
# Each text field's placeholder measured in the field's own font against the room inside it.
_PLACEHOLDERS = """
const canvas = document.createElement('canvas').getContext('2d');
return Array.from(document.querySelectorAll('main input[placeholder]')).filter(i => i.offsetParent).map(i => {
  const style = getComputedStyle(i);
  canvas.font = style.font;
  const room = i.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return {id: i.id, text: i.placeholder, needs: canvas.measureText(i.placeholder).width, room: room};
});
"""
# The toolbar of every figure and the figure's title, as rectangles; they must not meet.
_TOOLBARS = """
return Array.from(document.querySelectorAll('main .js-plotly-plot')).map(plot => {
  const bar = plot.querySelector('.modebar'), title = plot.querySelector('.gtitle');
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const shown = plot.closest('.folded') === null && plot.offsetParent !== null;
  return {id: plot.parentElement.id, bar: box(bar), title: box(title), height: shown ? plot.getBoundingClientRect().height : null};
});
"""
FORMATTED = re.compile(r"^−?\d{1,3}(,\d{3})*(\.\d+)?$")


def layout_problems(driver) -> list[str]:
    """What a person would notice is wrong with the page as shown, in words (empty: nothing): a
    table wider than its box or the page wider than the window, a Python literal, a number without
    thousands separators, a placeholder cut off, a toolbar over a title, a figure squashed, no
    count of requests used in the header, a window not chosen."""
    problems = []
    widths = driver.execute_script(_WIDTHS)
    if widths["page"] > widths["window"]:
        problems.append(f"the page is {widths['page']} px wide in a {widths['window']} px window")
    for table in widths["tables"]:
        if table["table"] > table["box"] + 1 or table["scroll"] > table["box"] + 1:
            problems.append(f"table {table['id']}: {table['table']:.0f} px in a {table['box']} px box")
    text = driver.find_element("tag name", "main").text
    literal = re.search(r"\b(True|False|None|nan)\b", text)
    if literal:
        problems.append(f"a Python literal on the page: {text[max(0, literal.start() - 40):literal.end() + 40]!r}")
    for cell in css(driver, "main td.count .value, main .card-value"):
        shown = cell.text.strip()
        if shown and not FORMATTED.match(shown):
            problems.append(f"a number without thousands separators: {shown!r}")
    for field in driver.execute_script(_PLACEHOLDERS):
        if field["needs"] > field["room"]:
            problems.append(f"the placeholder of {field['id']} ({field['text']!r}) is cut: "
                            f"{field['needs']:.0f} px in {field['room']:.0f}")
    for plot in driver.execute_script(_TOOLBARS):
        bar, title = plot["bar"], plot["title"]
        if bar and title and bar[0] < title[2] and title[0] < bar[2] and bar[1] < title[3] and title[1] < bar[3]:
            problems.append(f"the toolbar of {plot['id']} covers its title")
        if plot["height"] and plot["height"] < 150:  # 0: being drawn again (the page re-rendered)
            problems.append(f"the figure {plot['id']} is squashed to {plot['height']:.0f} px")
    if driver.execute_script("return window.innerWidth") >= 1440:
        spread = driver.execute_script(_HEADER_ROWS)
        if spread > 12:  # two rows are a line apart (about 40 px); one row's parts differ by a few px
            problems.append(f"the header wraps to more than one row ({spread:.0f} px between its parts)")
    for cell in driver.execute_script(_CELL_LINES):
        if cell["lines"] > cell["parts"]:  # a part (a change, a previous value) wrapped
            problems.append(f"a table cell wraps to {cell['lines']} lines: {cell['text']!r}")
    rate = css(driver, "#rate-use")
    if not rate or "requests used" not in rate[0].text:
        problems.append("the header does not say how many requests were used")
    for group in css(driver, "main [id$='-window']:not([id^='webhook'])"):  # a new webhook's window is for the viewer
        if css(group, "input[type='radio']") and not css(group, "input:checked"):
            problems.append(f"no window chosen in {group.get_attribute('id')}")
    return problems
