"""The Apps Script custom functions (connectors/apps_script/Code.gs).

Records the real API's answers to the requests the functions make (the app in-process, with keys
of each plan, a key past its rate limit, a wrong key), writes them to a temporary directory, and
runs the functions under Node's test runner (`node --test connectors/apps_script/test/`) with small
fakes of UrlFetchApp, PropertiesService and CacheService serving those answers. That every data
endpoint has its function, with its parameters, is checked without Node in the quick tier
(tests/docs/test_operation_consumers.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from urllib.parse import quote

import httpx
import pytest

from service.api.openapi import build_openapi
from tests.support.api_server import Ticker, make_app
from tests.support.processes import ROOT
from tests.support.spec_table import BASE

APPS_SCRIPT = ROOT / "connectors" / "apps_script"
API_URL = "https://signals.test"

# (case, function, arguments as a sheet passes them, key, method, path, request parameters in order)
CASES = [
    ("top_keywords", "SIGNALS_TOP_KEYWORDS", ["7d", 3], "analyst", "GET", "/top-keywords", {"window": "7d", "limit": 3}),
    ("defaults", "SIGNALS_TOP_KEYWORDS", [], "analyst", "GET", "/top-keywords", {}),
    ("keyword_timeseries", "SIGNALS_KEYWORD_TIMESERIES", ["snakes", "24h", "hour"], "analyst", "GET",
     "/keyword-timeseries", {"keyword": "snakes", "window": "24h", "bucket": "hour"}),
    ("domain_timeseries", "SIGNALS_DOMAIN_TIMESERIES", ["reddit.com", "7d", "day"], "analyst", "GET",
     "/domain-timeseries", {"domain": "reddit.com", "window": "7d", "bucket": "day"}),
    ("geo_heat", "SIGNALS_GEO_HEAT", ["24h", "region"], "analyst", "GET", "/geo-heat",
     {"window": "24h", "level": "region"}),
    ("trending", "SIGNALS_TRENDING", ["24h", "", "", 10, 5], "analyst", "GET", "/trending",
     {"window": "24h", "limit": 10, "min_baseline": 5}),
    ("keyword_activity", "SIGNALS_KEYWORD_ACTIVITY", ["7d", "added"], "analyst", "GET", "/keyword-activity",
     {"window": "7d", "type": "added"}),
    ("query", "SIGNALS_QUERY", ["7d", "country, time", "day", "countries=US", "", "", 5], "analyst", "POST",
     "/query", {"window": "7d", "bucket": "day", "limit": 5, "group_by": ["country", "time"],
                "filters": {"countries": ["US"]}}),
    ("compared", "SIGNALS_GEO_HEAT", ["7d", "", "", "previous_period", True], "analyst", "GET", "/geo-heat",
     {"window": "7d", "compare": "previous_period", "intervals": True}),
    ("dated_query", "SIGNALS_QUERY", ["24h", "keyword", "", "", "", "", 3, "2026-03-09T12:00:00Z", "", "TRUE"],
     "analyst", "POST", "/query", {"window": "24h", "limit": 3, "as_of": "2026-03-09T12:00:00Z", "intervals": True,
                                   "group_by": ["keyword"]}),
    ("bad_parameter", "SIGNALS_TOP_KEYWORDS", ["7d", 0], "analyst", "GET", "/top-keywords",
     {"window": "7d", "limit": 0}),
    ("wrong_key", "SIGNALS_GEO_HEAT", ["24h"], "wrong", "GET", "/geo-heat", {"window": "24h"}),
    ("plan", "SIGNALS_QUERY", ["7d"], "observer", "POST", "/query", {"window": "7d"}),
    ("rate_limited", "SIGNALS_GEO_HEAT", ["7d"], "exhausted", "GET", "/geo-heat", {"window": "7d"}),
]
ACCOUNT_CALLS = ["observer", "analyst"]  # the 403 message and the "Show my plan" menu item read the plan


def encode_uri_component(text: str) -> str:
    return quote(text, safe="-_.!~*'()")


def js_string(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def record(api_app, keys: dict[str, str]) -> dict:
    recordings = []
    with httpx.Client(transport=httpx.WSGITransport(app=api_app), base_url=API_URL) as http:
        def call(method, path, params, role, case):
            url = API_URL + path
            headers = {"Authorization": f"Bearer {keys[role]}", "Accept": "application/json"}
            if method == "GET":
                query = "&".join(f"{encode_uri_component(k)}={encode_uri_component(js_string(v))}" for k, v in params.items())
                url += f"?{query}" if query else ""
                response = http.get(url, headers=headers)
            else:
                response = http.post(url, content=json.dumps(params), headers={**headers, "Content-Type": "application/json"})
            recordings.append({"case": case, "method": method, "url": url, "authorization": headers["Authorization"],
                               "payload": params if method == "POST" else None, "status": response.status_code,
                               "headers": dict(response.headers), "body": response.text})

        for _ in range(30):  # the Observer plan's minute, used up
            assert http.get(API_URL + BASE + "/top-keywords", headers={"Authorization": f"Bearer {keys['exhausted']}"}
                            ).status_code == 200
        for case, _function, _args, role, method, path, params in CASES:
            call(method, BASE + path, params, role, case)
        for role in ACCOUNT_CALLS:
            call("GET", "/api/v1/account", {}, role, f"account_{role}")
        document = http.get(API_URL + "/api/v1/openapi")
        recordings.append({"case": "openapi", "method": "GET", "url": API_URL + "/api/v1/openapi", "authorization": None,
                           "payload": None, "status": document.status_code, "headers": dict(document.headers),
                           "body": document.text})
    return {"api_url": API_URL, "keys": keys, "recordings": recordings,
            "cases": [{"case": c, "function": f, "args": a, "key": r} for c, f, a, r, *_ in CASES]}


@pytest.fixture
def recorded(fixture_data_dir, fixture_store, accounts, keys, tmp_path):
    from service.api.tiers import Tier

    app = make_app(fixture_data_dir, fixture_store, accounts, Ticker())
    roles = {"analyst": keys["analyst"], "observer": keys["observer"], "wrong": "sig_live_" + "W" * 40,
             "exhausted": accounts.create_key(Tier.OBSERVER, subscription=f"exhausted-{tmp_path.name}")[0]}
    fixtures = record(app, roles)
    statuses = {r["case"]: r["status"] for r in fixtures["recordings"]}
    assert statuses == {**{c[0]: 200 for c in CASES}, "bad_parameter": 400, "wrong_key": 401, "plan": 403,
                        "rate_limited": 429, "account_observer": 200, "account_analyst": 200, "openapi": 200}
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(fixtures, indent=1))
    return path


def test_custom_functions_under_node(recorded):
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is needed for the Apps Script tests (node --test); install nodejs")
    env = {**os.environ, "SIGNALS_APPS_SCRIPT_FIXTURES": str(recorded)}
    done = subprocess.run([node, "--test", str(APPS_SCRIPT / "test")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^# pass [1-9]\d*$", done.stdout, re.M) and re.search(r"^# fail 0$", done.stdout, re.M)
    assert "# skipped 0" in done.stdout or "# skip 0" in done.stdout


def test_headers_read_as_the_python_connectors():
    """Code.gs's signalsHeader_ and the Python connectors (Operation.heading) name columns alike,
    both from the document's x-signals-columns."""
    from connectors.operations import Operations

    document = build_openapi()
    operation = Operations.from_openapi(document)["top_keywords"]
    columns = ["keyword_raw", "previous_suppressions", "change_unique_users_pct", "change_events_beyond_noise",
               "intervals_keyword_count_low", "intervals_users_est_high", "previous_", "change_pct"]
    script = ("const vm = require('vm'); const ctx = {}; vm.createContext(ctx);"
              "vm.runInContext(require('fs').readFileSync(process.argv[1], 'utf8'), ctx);"
              "const rule = JSON.parse(process.argv[3]);"
              "console.log(JSON.stringify(JSON.parse(process.argv[2]).map((c) => ctx.signalsHeader_(c, rule))));")
    done = subprocess.run([shutil.which("node") or "node", "-e", script, str(APPS_SCRIPT / "Code.gs"),
                           json.dumps(columns), json.dumps(document["x-signals-columns"])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [operation.heading(c) for c in columns]
    assert operation.heading("previous_suppressions") == "suppressions, previous period"
    assert operation.heading("intervals_users_est_high") == "users_est, high (90 % interval)"
