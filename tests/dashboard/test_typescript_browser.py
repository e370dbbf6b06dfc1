"""The TypeScript client's bundle (connectors/typescript/dist/signals-client.js) in a real headless
Chromium, on a page of another origin than the API: the way a customer's site uses it.

The API is the Procfile's web process (gunicorn) on demo data; the customer's site is a static
server on another port of 127.0.0.1 (another origin) serving the example page
(connectors/typescript/examples/ranking.html) beside the bundle, and `/token/<name>`, the answer
the customer's server would give the page: this test stands in for that server and mints each
token with the subscription key (POST /api/v1/tokens), so the page never sees the key.

- a token minted for the page's origin: the page fetches /top-keywords and its next page, shows
  the numbers (those the key gets for the same request) and the headers CORS exposes (ETag, Link,
  Signals-Total-Rows, RateLimit, Signals-Privacy-Budget), and its second ask is a 304;
- a token minted for another origin: 403;
- the subscription key itself, sent from the page (with its Origin): 403.

Screenshots go to tests.support.browser.shots() (typescript-ranking.png, typescript-403.png,
typescript-key-403.png)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.browser import chrome, console_errors, css, shots, wait
from tests.support.processes import ROOT, cli, create_key, gunicorn

pytestmark = pytest.mark.process

PACKAGE = ROOT / "connectors" / "typescript"
TOKENS = "/api/v1/tokens"


class _Site(http.server.SimpleHTTPRequestHandler):
    """The customer's site: static files, and /token/<name> (what its server hands the page)."""

    tokens: dict[str, dict] = {}

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        if self.path.startswith("/token/"):
            body = json.dumps(self.tokens[self.path.removeprefix("/token/")]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


@contextlib.contextmanager
def site(folder: Path, tokens: dict[str, dict]):
    """A static server of `folder` on 127.0.0.1 (a free port) from a thread; yields its origin."""
    handler = type("Site", (_Site,), {"tokens": tokens})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def page(template: str, api: str, token_url: str) -> str:
    """The example page as the customer's server renders it: the API's address and its token URL."""
    return (template.replace('content="https://signals.example.com"', f'content="{api}"')
            .replace('content="/signals-token"', f'content="{token_url}"'))


def mint(api: str, key: str, origins: list[str]) -> dict:
    """A browser token for `origins`, minted with the key, as the customer's server does."""
    answer = httpx.post(api + TOKENS, headers={"Authorization": f"Bearer {key}"}, timeout=30,
                        json={"origins": origins, "ttl_seconds": 3600, "endpoints": ["top_keywords"], "fixed": {}})
    assert answer.status_code == 201, answer.text
    token = answer.json()
    assert token["origins"] == origins and token["endpoints"] == ["top_keywords"]
    return token


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("typescript-data")
    made = cli(data_dir, "data", "demo", "--events", "200000", "--days", "30")
    assert made.returncode == 0, made.stderr
    key = create_key(data_dir, "analyst")
    folder = tmp_path_factory.mktemp("typescript-site")
    shutil.copy(PACKAGE / "dist" / "signals-client.js", folder / "signals-client.js")
    tokens: dict[str, dict] = {}
    with gunicorn(data_dir) as (api, api_log), site(folder, tokens) as origin:
        template = (PACKAGE / "examples" / "ranking.html").read_text()
        for name in ("ranking", "other-origin", "key"):
            (folder / f"{name}.html").write_text(page(template, api, f"/token/{name}"))
        tokens["ranking"] = mint(api, key, [origin])
        tokens["other-origin"] = mint(api, key, ["http://127.0.0.1:1"])  # another port: another origin
        tokens["key"] = {"token": key, "expires_at": "2999-01-01T00:00:00Z"}
        yield {"api": api, "origin": origin, "key": key, "log": api_log}
    assert key not in api_log[0], "a key reached the API's log"


@pytest.fixture
def browser():
    driver = chrome()
    yield driver
    driver.quit()


def shown(browser, origin: str, name: str) -> None:
    """The page `name` of the site at `origin`, once its script has finished (done or error)."""
    browser.get(f"{origin}/{name}.html")
    wait(browser, lambda d: d.find_element("tag name", "body").get_attribute("data-state") != "loading")


def headers_shown(browser) -> dict[str, str]:
    return {row.get_attribute("data-header"): css(row, "td")[1].text for row in css(browser, "#headers tbody tr")}


def test_a_page_of_another_origin_gets_a_ranking_and_its_next_page_with_a_token(stack, browser):
    shown(browser, stack["origin"], "ranking")
    browser.save_screenshot(str(shots() / "typescript-ranking.png"))
    body = browser.find_element("tag name", "body")
    assert body.get_attribute("data-state") == "done", css(browser, "#error")[0].text
    assert console_errors(browser) == []

    # The numbers are those the key gets for the same ranking, from the server side.
    same = httpx.get(stack["api"] + "/api/v1/signals/top-keywords", params={"window": "7d", "limit": 10},
                     headers={"Authorization": f"Bearer {stack['key']}"}, timeout=30)
    expected = [[str(r["rank"]), r["keyword_raw"], f"{r['suppressions']:,}", f"{r['users_est']:,}"]
                for r in same.json()["keywords"]]
    rows = [[td.text for td in css(row, "td")] for row in css(browser, "#ranking tbody tr")]
    assert [row[:4] for row in rows] == expected
    assert [row[4] for row in rows] == ["1"] * 5 + ["2"] * 5
    total = int(same.headers["signals-total-rows"])
    assert browser.find_element("id", "status").text.startswith(f"10 of {total:,} rows, as of ")

    # What CORS lets the page read of the first page's headers.
    headers = headers_shown(browser)
    assert headers["etag"].startswith('"') and headers["etag"].endswith('"'), headers
    assert headers["link"].startswith("</api/v1/signals/top-keywords?") and "offset=5" in headers["link"], headers
    assert 'rel="next"' in headers["link"]
    assert headers["signals-total-rows"] == str(total)
    assert headers["ratelimit"].startswith('"') and ";r=" in headers["ratelimit"], headers
    assert headers["ratelimit-policy"].startswith('"'), headers
    assert headers["signals-privacy-budget"].startswith("remaining="), headers
    assert headers["x-signals-as-of"].endswith(":00:00Z"), headers
    assert headers["x-request-id"] != "(not readable here)", headers
    assert browser.find_element("id", "revalidated").text == "Asked again: 304 Not Modified, 5 rows from memory"


def test_a_token_minted_for_another_origin_is_refused(stack, browser):
    shown(browser, stack["origin"], "other-origin")
    browser.save_screenshot(str(shots() / "typescript-403.png"))
    error = browser.find_element("id", "error")
    assert (error.get_attribute("data-status"), browser.find_element("tag name", "body").get_attribute("data-state")) \
        == ("403", "error"), error.text
    assert error.get_attribute("data-type") == "urn:signals:problem:credential-not-allowed"
    assert f"This token works only from http://127.0.0.1:1; this request comes from {stack['origin']}." in error.text
    assert css(browser, "#ranking tbody tr") == []


def test_a_subscription_key_sent_from_a_page_is_refused(stack, browser):
    shown(browser, stack["origin"], "key")
    browser.save_screenshot(str(shots() / "typescript-key-403.png"))
    error = browser.find_element("id", "error")
    assert error.get_attribute("data-status") == "403", error.text
    assert error.get_attribute("data-type") == "urn:signals:problem:credential-not-allowed"
    assert "keys are for servers; mint a token at post /api/v1/tokens" in error.text.lower()
    assert css(browser, "#ranking tbody tr") == []
