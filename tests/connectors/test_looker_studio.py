"""The Looker Studio community connector (connectors/looker_studio/).

- Reports.gs is what `python -m connectors.looker_studio.generate` makes of the served OpenAPI
  document (GET /api/v1/openapi), so the connector's reports, parameters and fields are the API's;
  the generator turns a new endpoint into a report without connector code, and refuses a record
  field it cannot type rather than guessing.
- Code.gs under Node's test runner (`node --test connectors/looker_studio/test/`, the harness of
  the Sheets functions, tests/connectors/test_apps_script.py): the real API's answers to the requests
  the connector makes (the app in-process, with keys of each plan, a key past its rate limit, a
  wrong key; every page of a paged answer) are recorded to a temporary file, and the connector runs
  with fakes of DataStudioApp, UrlFetchApp, PropertiesService and CacheService serving them. Node
  runs outside the quick tier (marked slow), as the Sheets functions' tests do.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from connectors.looker_studio import generate
from tests.support.api_server import Ticker, make_app
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.processes import ROOT
from tests.support.spec_table import BASE

LOOKER = ROOT / "connectors" / "looker_studio"
API_URL = "https://signals.test"

# (case, key, configuration as Looker Studio passes it, fields asked for, the first request (method, path
# below /api/v1/signals with its query string as the connector writes it, JSON body), follow the pages)
CASES = [
    ("top_pages", "analyst", {"report": "top_keywords", "window": "7d", "limit": "3"},
     ["keyword_raw", "suppressions", "rank"], ("GET", "/top-keywords?window=7d&limit=3", None), True),
    ("top_first", "analyst", {"report": "top_keywords", "window": "7d", "limit": "3", "first_page_only": "true"},
     ["rank", "keyword_raw", "as_of"], ("GET", "/top-keywords?window=7d&limit=3", None), False),
    ("top_default_limit", "analyst", {"report": "top_keywords", "window": "7d"}, ["keyword_raw", "users_est"],
     ("GET", "/top-keywords?window=7d&limit=500", None), True),
    ("keyword_timeseries", "analyst", {"report": "keyword_timeseries", "keyword": "snakes", "window": "24h",
                                       "bucket": "hour"},
     ["ts", "suppressions", "events", "as_of"], ("GET", "/keyword-timeseries?keyword=snakes&window=24h&bucket=hour", None),
     True),
    ("geo_region", "analyst", {"report": "geo_heat", "window": "7d", "level": "region"},
     ["geo_key", "label", "suppressions", "unique_users"], ("GET", "/geo-heat?window=7d&level=region", None), True),
    ("compared", "analyst", {"report": "keyword_activity", "window": "7d", "compare": True, "intervals": "true"},
     ["keyword", "adds", "previous_adds", "change_adds_pct", "change_adds_beyond_noise", "intervals_adds_low",
      "intervals_adds_high", "disclaimer"],
     ("GET", "/keyword-activity?window=7d&limit=500&compare=previous_period&intervals=true", None), True),
    ("trending_pages", "analyst", {"report": "trending", "window": "7d", "limit": "2", "min_baseline": "5"},
     ["value", "recent", "baseline", "growth_pct", "disclaimer"],
     ("GET", "/trending?window=7d&limit=2&min_baseline=5", None), True),
    ("query_pages", "analyst", {"report": "query", "window": "7d", "group_by": "country,time", "bucket": "day",
                                "limit": "5", "filters_countries": "US"},
     ["country_id", "country_name", "ts", "suppressions", "unique_users"],
     ("POST", "/query", {"window": "7d", "filters": {"countries": ["US"]}, "group_by": ["country", "time"],
                         "bucket": "day", "limit": 5}), True),
    ("bad_parameter", "analyst", {"report": "top_keywords", "window": "7d", "limit": "0", "first_page_only": True},
     ["keyword_raw"], ("GET", "/top-keywords?window=7d&limit=0", None), False),
    ("wrong_key", "wrong", {"report": "geo_heat"}, ["geo_key"], ("GET", "/geo-heat", None), False),
    ("plan", "observer", {"report": "query", "window": "7d"}, ["suppressions"],
     ("POST", "/query", {"window": "7d", "limit": 1000}), False),
    ("rate_limited", "exhausted", {"report": "geo_heat", "window": "7d"}, ["geo_key"],
     ("GET", "/geo-heat?window=7d", None), False),
]
STATUSES = {"bad_parameter": 400, "wrong_key": 401, "plan": 403, "rate_limited": 429}


@pytest.fixture(scope="module")
def served_document(fixture_data_dir, fixture_store, accounts):
    app = make_app(fixture_data_dir, fixture_store, accounts, Ticker())
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=API_URL) as http:
        response = http.get("/api/v1/openapi")
    assert response.status_code == 200
    return response.json()


# -- the generated table ---------------------------------------------------------------------------

def test_reports_gs_is_what_the_served_document_makes(served_document):
    assert (LOOKER / "Reports.gs").read_text() == generate.render(served_document), (
        "connectors/looker_studio/Reports.gs is stale: run .venv/bin/python -m connectors.looker_studio.generate "
        "(with the API running, or --openapi FILE)")


def test_one_report_per_data_operation_with_its_parameters_and_columns(served_document):
    table = generate.parse((LOOKER / "Reports.gs").read_text())
    data = {op["operationId"]: (path, method, op) for path, methods in served_document["paths"].items()
            for method, op in methods.items() if "signals" in op.get("tags", ())}
    assert [r["id"] for r in table["reports"]] == list(data)
    for report in table["reports"]:
        path, method, op = data[report["id"]]
        assert (report["path"], report["method"]) == (path, method.upper())
        assert [f["id"] for f in report["fields"]] == op["x-signals-columns"]
        names = [p["name"] for p in op.get("parameters", ())]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        documented = list(body.get("properties", {})) if body else names
        roots = list(dict.fromkeys(p["path"][0] for p in report["parameters"]))
        assert roots == [n for n in documented if n not in generate.CONNECTOR_PARAMS], report["id"]
        assert report["paged"] == any(n in ("offset", "cursor") for n in names)
    assert {f["id"] for f in table["answer_fields"]} == {"as_of", "disclaimer"}


def test_time_and_geography_have_looker_studio_types(served_document):
    reports = {r["id"]: r for r in generate.reports(served_document)["reports"]}
    types = {f["id"]: f["type"] for f in reports["query"]["fields"]}
    assert (types["ts"], types["country_id"], types["region_id"], types["city_name"], types["county_id"]) == (
        "YEAR_MONTH_DAY_HOUR", "COUNTRY_CODE", "REGION_CODE", "CITY", "TEXT")
    assert reports["query"]["groups"]["country"] == ["country_id", "country_name"]
    assert reports["query"]["groups"]["time"] == ["ts"]
    assert reports["geo_heat"]["semantics"]["values"]["region"] == {"geo_key": "REGION_CODE", "label": "REGION"}
    assert {f["id"]: f.get("aggregation") for f in reports["top_keywords"]["fields"]}["users_est"] == "MAX"


def with_new_endpoint(document: dict) -> dict:
    """The document with an endpoint the connector has never seen: /domain-activity, shaped like
    /keyword-activity but keyed by domain."""
    document = copy.deepcopy(document)
    op = copy.deepcopy(document["paths"]["/api/v1/signals/keyword-activity"]["get"])
    op["operationId"], op["summary"] = "domain_activity", "Domain activity"
    records = op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["keywords"]["items"]
    records["properties"] = {"domain": records["properties"].pop("keyword"), **records["properties"]}
    op["x-signals-columns"] = ["domain" if c == "keyword" else c for c in op["x-signals-columns"]]
    document["paths"]["/api/v1/signals/domain-activity"] = {"get": op}
    return document


def test_a_new_endpoint_becomes_a_report_without_connector_code(served_document):
    reports = {r["id"]: r for r in generate.reports(with_new_endpoint(served_document))["reports"]}
    new = reports["domain_activity"]
    assert new["label"] == "Domain activity (GET /domain-activity)"
    assert new["fields"][0] == {**new["fields"][0], "id": "domain", "type": "TEXT", "concept": "DIMENSION"}
    assert [p["id"] for p in new["parameters"]] == [p["id"] for p in reports["keyword_activity"]["parameters"]]
    code = (LOOKER / "Code.gs").read_text()
    assert "keyword_activity" not in code and "top_keywords" not in code, "Code.gs names no report"


def test_a_field_the_table_cannot_type_stops_the_generator(served_document):
    document = copy.deepcopy(served_document)
    items = document["paths"]["/api/v1/signals/geo-heat"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"]["properties"]["regions"]["items"]
    items["properties"]["shares"] = {"type": "object", "properties": {"suppressions": {"type": "number"}}}
    with pytest.raises(generate.GeneratorError, match=r"geo_heat: record field 'shares' is nested; .*NESTED"):
        generate.reports(document)


def test_check_says_whether_the_file_is_current(served_document, tmp_path, capsys):
    saved = tmp_path / "openapi.json"
    saved.write_text(json.dumps(served_document))
    output = tmp_path / "Reports.gs"
    assert generate.main(["--openapi", str(saved), "--output", str(output), "--check"]) == 1
    assert generate.main(["--openapi", str(saved), "--output", str(output)]) == 0
    assert output.read_text() == (LOOKER / "Reports.gs").read_text()
    assert generate.main(["--openapi", str(saved), "--output", str(output), "--check"]) == 0
    saved.write_text(json.dumps(with_new_endpoint(served_document)))
    assert generate.main(["--openapi", str(saved), "--output", str(output), "--check"]) == 1
    assert "is not what the document makes" in capsys.readouterr().err


def test_the_manifest_holds_the_data_studio_block():
    manifest = json.loads((LOOKER / "appsscript.json").read_text())
    studio = manifest["dataStudio"]
    for name in ("name", "company", "companyUrl", "logoUrl", "addonUrl", "supportUrl", "description"):
        assert studio[name], name
    assert len(studio["name"]) <= 28 and len(studio["shortDescription"]) <= 114
    assert studio["authType"] == ["KEY"]
    assert manifest["oauthScopes"] == ["https://www.googleapis.com/auth/script.external_request"]
    assert manifest["runtimeVersion"] == "V8"
    pushed = (LOOKER / ".claspignore").read_text().split()
    assert pushed == ["**/**", "!Code.gs", "!Reports.gs", "!appsscript.json"], "clasp pushes the script files only"


# -- Code.gs under Node ----------------------------------------------------------------------------

def record(app, keys: dict[str, str]) -> dict:
    recordings: list[dict] = []
    cases = []
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=API_URL) as http:
        def call(method: str, url: str, role: str, payload) -> httpx.Response:
            headers = {"Authorization": f"Bearer {keys[role]}", "Accept": "application/json"}
            if method == "GET":
                response = http.get(url, headers=headers)
            else:
                response = http.post(url, content=json.dumps(payload), headers={**headers,
                                                                                "Content-Type": "application/json"})
            recordings.append({"method": method, "url": url, "authorization": headers["Authorization"],
                               "payload": payload, "status": response.status_code, "headers": dict(response.headers),
                               "body": response.text})
            return response

        for _ in range(30):  # the Observer plan's minute, used up
            assert http.get(BASE + "/top-keywords", headers={"Authorization": f"Bearer {keys['exhausted']}"}
                            ).status_code == 200
        for case, role, config, fields, (method, path, payload), follow in CASES:
            requests = []
            url = API_URL + BASE + path
            while url:
                response = call(method, url, role, payload)
                requests.append({"method": method, "recording": len(recordings) - 1, "payload": payload})
                assert response.status_code == STATUSES.get(case, 200), (case, response.text)
                link = re.search(r'<([^>]*)>\s*;\s*rel="?next"?', response.headers.get("link", ""))
                url = API_URL + link[1] if follow and link else None
            cases.append({"case": case, "key": role, "config": config, "fields": fields, "requests": requests})
        for role in ("analyst", "wrong"):
            response = call("GET", API_URL + "/api/v1/account", role, None)
            assert response.status_code == (200 if role == "analyst" else 401)
    return {"api_url": API_URL, "keys": keys, "now": FIXTURE_NOW.isoformat().replace("+00:00", "Z"),
            "recordings": recordings, "cases": cases}


@pytest.fixture
def recorded(fixture_data_dir, fixture_store, accounts, keys, tmp_path) -> Path:
    from service.api.tiers import Tier

    app = make_app(fixture_data_dir, fixture_store, accounts, Ticker())
    roles = {"analyst": keys["analyst"], "observer": keys["observer"], "wrong": "sig_live_" + "W" * 40,
             "exhausted": accounts.create_key(Tier.OBSERVER, subscription=f"exhausted-{tmp_path.name}")[0]}
    fixtures = record(app, roles)
    pages = {c["case"]: len(c["requests"]) for c in fixtures["cases"]}
    assert pages["top_pages"] == 3 and pages["trending_pages"] >= 2 and pages["query_pages"] >= 2, pages
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(fixtures, indent=1))
    return path


@pytest.mark.slow
def test_connector_under_node(recorded):
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is needed for the Looker Studio connector's tests (node --test); install nodejs")
    env = {**os.environ, "SIGNALS_LOOKER_FIXTURES": str(recorded)}
    done = subprocess.run([node, "--test", str(LOOKER / "test")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^# pass [1-9]\d*$", done.stdout, re.M) and re.search(r"^# fail 0$", done.stdout, re.M)
    assert "# skipped 0" in done.stdout or "# skip 0" in done.stdout
