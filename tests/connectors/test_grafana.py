"""Grafana over the Signals API (connectors/grafana/): the Infinity data source's provisioning and the
dashboard over it. No Grafana server runs here, so the files are checked against the API itself:

- the data source: Infinity, the API's address from the environment, the key in secureJsonData
  (sent as a bearer token, to the allowed host only), a health check on GET /api/v1/account;
- every query of the dashboard (each panel's, and the keyword variable's): Infinity's backend
  parser, a GET path of the served OpenAPI document open to every plan, documented parameters
  whose values (each value of each variable they name, every combination) the API accepts, as
  the client checks them (connectors/operations.py, the API's own wording); the records field and
  columns of the record schema, with matching types; the names panels refer to (a bar chart's x
  field, the map's lookup, an override) among their columns;
- and the same queries asked of the real API (the app in-process, an Observer key): each answers
  200 with those records and columns, for every value of every variable.

The dashboard is not the operations one (docs/grafana-signals.json, Prometheus metrics), and may sit
beside it in one Grafana.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from connectors.operations import Operation, Operations
from tests.support.api_server import Ticker, make_app
from tests.support.processes import ROOT

GRAFANA = ROOT / "connectors" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "signals-data.json"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "signals.yaml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "signals.yaml"
INFINITY = "yesoreyeram-infinity-datasource"
API_URL = "https://signals.test"
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")
COLUMN_TYPES = {"integer": "number", "number": "number", "boolean": "boolean", "string": "string"}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture(scope="module")
def app(fixture_data_dir, fixture_store, accounts):
    ticker = Ticker()
    return make_app(fixture_data_dir, fixture_store, accounts, ticker), ticker


@pytest.fixture(scope="module")
def document(app) -> dict[str, Any]:
    with httpx.Client(transport=httpx.WSGITransport(app=app[0]), base_url=API_URL) as http:
        return http.get("/api/v1/openapi").json()


@pytest.fixture(scope="module")
def operations(document) -> Operations:
    return Operations.from_openapi(document)


def datasource() -> dict[str, Any]:
    (entry,) = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    return entry


def variables(dashboard) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def targets(dashboard) -> Iterator[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(where, Infinity query, its panel) for every query of the dashboard."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            yield f"panel {panel['title']!r}", target, panel
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable {variable['name']}", variable["query"]["infinityQuery"], None


def operation_of(operations: Operations, target: dict[str, Any]) -> Operation:
    found = [op for op in operations.values() if op.path == target["url"] and op.method == target["url_options"]["method"]]
    assert found, f"{target['url_options']['method']} {target['url']} is not an operation of the document"
    return found[0]


def custom_values(variable: dict[str, Any]) -> list[str]:
    values = [v.strip() for v in variable["query"].split(",")]
    assert [o["value"] for o in variable["options"]] == values, f"{variable['name']}: options are its query's values"
    assert variable["current"]["value"] in values
    return values


def names_in(text: str) -> set[str]:
    return {a or b for a, b in VARIABLE.findall(text)}


# -- the provisioning ----------------------------------------------------------------------------

def test_the_data_source_is_infinity_with_the_key_as_a_bearer_token(document):
    entry = datasource()
    assert entry["type"] == INFINITY
    assert entry["url"] == "${SIGNALS_API_URL}"
    assert entry["jsonData"]["auth_method"] == "bearerToken"
    assert entry["jsonData"]["allowedHosts"] == ["${SIGNALS_API_URL}"], "the key goes to the API's address only"
    assert entry["secureJsonData"] == {"bearerToken": "${SIGNALS_API_KEY}"}, "the key from the environment, encrypted"
    check = entry["jsonData"]["customHealthCheckUrl"]
    assert entry["jsonData"]["customHealthCheckEnabled"] is True and check == "${SIGNALS_API_URL}/api/v1/account"
    account = document["paths"]["/api/v1/account"]["get"]
    assert "bearerAuth" in json.dumps(account["security"])
    keys = [path for path in GRAFANA.rglob("*") if path.is_file() and "sig_live_" in path.read_text()]
    assert keys == [], "no key is written in the files"


def test_the_dashboards_provider_loads_this_folder_where_the_docs_mount_it():
    (provider,) = yaml.safe_load(PROVIDERS.read_text())["providers"]
    assert provider["type"] == "file"
    mount = provider["options"]["path"]
    assert f"{GRAFANA.relative_to(ROOT) / 'dashboards'}:{mount}" in (ROOT / "docs" / "dashboard-builders.md").read_text()


def test_every_query_uses_the_provisioned_source_and_the_backend_parser(dashboard):
    uid = datasource()["uid"]
    found = list(targets(dashboard))
    assert len(found) >= 6
    for where, target, panel in found:
        assert target["datasource"] == {"type": INFINITY, "uid": uid}, where
        if panel is not None:
            assert panel["datasource"] == target["datasource"], where
        assert (target["type"], target["source"], target["parser"]) == ("json", "url", "backend"), where


def test_the_dashboard_is_not_the_operations_one(dashboard):
    operations_dashboard = json.loads((ROOT / "docs" / "grafana-signals.json").read_text())
    assert dashboard["uid"] != operations_dashboard["uid"] and dashboard["title"] != operations_dashboard["title"]
    assert "docs/grafana-signals.json" in dashboard["description"]


# -- the queries against the document ------------------------------------------------------------

def test_every_query_is_a_get_endpoint_every_plan_may_call(dashboard, operations):
    lowest = next(iter(operations.plans))
    paths = set()
    for where, target, _ in targets(dashboard):
        op = operation_of(operations, target)
        assert op.is_data and op.method == "GET" and op.min_tier == lowest, where
        paths.add(op.slug)
    assert {"top-keywords", "keyword-timeseries", "geo-heat", "trending"} <= paths


def test_every_variable_named_is_defined(dashboard):
    defined = set(variables(dashboard))
    text = json.dumps({k: v for k, v in dashboard.items() if k != "templating"})
    assert names_in(text) <= defined
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "custom":
            custom_values(variable)
    (timeseries,) = [p for p in dashboard["panels"] if p["type"] == "timeseries"]
    for value in custom_values(variables(dashboard)[timeseries["timeFrom"].lstrip("$")]):
        assert re.fullmatch(r"\d+[hdw]", value), f"{value} is a Grafana relative time"


def expansions(target: dict[str, Any], dashboard, samples: dict[str, list[str]]) -> list[dict[str, str]]:
    """The query parameters for every combination of the values of the variables they name."""
    defined = variables(dashboard)
    pairs = [(p["key"], p["value"]) for p in target["url_options"]["params"]]
    named = sorted({n for _, value in pairs for n in names_in(value)})
    choices = [custom_values(defined[n]) if defined[n]["type"] == "custom" else samples[n] for n in named]
    out = []
    for values in itertools.product(*choices):
        chosen = dict(zip(named, values, strict=True))
        out.append({key: VARIABLE.sub(lambda m, c=chosen: c[m[1] or m[2]], value) for key, value in pairs})
    return out


def test_every_parameter_is_documented_and_every_value_accepted(dashboard, operations):
    samples = {"keyword": ["snakes", "climate change"]}  # a query variable's values: any keyword
    for where, target, _ in targets(dashboard):
        op = operation_of(operations, target)
        keys = [p["key"] for p in target["url_options"]["params"]]
        assert len(set(keys)) == len(keys), f"{where}: a parameter given twice"
        assert set(keys) <= {p.name for p in op.params} - {"offset"}, f"{where}: {keys}"
        for query in expansions(target, dashboard, samples):
            _, errors = op.check(query)
            assert errors == [], f"{where}: {query}: {[f'{e.name}: {e.reason}' for e in errors]}"


def test_every_column_is_a_field_of_the_records_with_its_type(dashboard, operations):
    for where, target, panel in targets(dashboard):
        op = operation_of(operations, target)
        assert target["root_selector"] == op.records_field, where
        properties = op.record_schema["properties"]
        texts = []
        for column in target["columns"]:
            schema = properties.get(column["selector"])
            assert schema is not None, f"{where}: {column['selector']} is not a field of {op.slug}'s records"
            kind = "timestamp" if schema.get("format") == "date-time" else COLUMN_TYPES[schema["type"]]
            assert column["type"] == kind, f"{where}: {column['selector']} is {kind}"
            texts.append(column["text"])
        if panel is None:
            continue
        options = panel.get("options", {})
        named = [options.get("xField")] + [layer["location"].get("lookup") for layer in options.get("layers", ())]
        named += [o["matcher"]["options"] for o in panel.get("fieldConfig", {}).get("overrides", ())]
        named += [s["displayName"] for s in options.get("sortBy", ())]
        for name in filter(None, named):
            assert name in texts, f"{where}: {name!r} is not one of its columns {texts}"


# -- the queries against the API -----------------------------------------------------------------

def one_at_a_time(target: dict[str, Any], dashboard, samples: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every value of every variable the query names, the others at their current values."""
    defined = variables(dashboard)
    pairs = [(p["key"], p["value"]) for p in target["url_options"]["params"]]
    named = sorted({n for _, value in pairs for n in names_in(value)})

    def values(name: str) -> list[str]:
        return custom_values(defined[name]) if defined[name]["type"] == "custom" else samples[name]

    current = {n: (defined[n]["current"]["value"] or values(n)[0]) for n in named}
    chosen_sets = [current] + [{**current, n: v} for n in named for v in values(n)]
    out = []
    for chosen in chosen_sets:
        query = {key: VARIABLE.sub(lambda m, c=chosen: c[m[1] or m[2]], value) for key, value in pairs}
        if query not in out:
            out.append(query)
    return out


def test_every_query_answers_with_its_records_and_columns(dashboard, operations, app, keys):
    api, ticker = app
    headers = {"Authorization": f"Bearer {keys['observer']}", "Accept": "application/json"}
    with httpx.Client(transport=httpx.WSGITransport(app=api), base_url=API_URL) as http:
        def ask(target, query) -> list[dict[str, Any]]:
            ticker.now += 3  # 20 requests a minute: under the Observer plan's 30
            response = http.get(target["url"], params=query, headers=headers)
            assert response.status_code == 200, (target["url"], query, response.text)
            return response.json()[target["root_selector"]]

        (keyword,) = [v for v in dashboard["templating"]["list"] if v["type"] == "query"]
        source = keyword["query"]["infinityQuery"]
        (column,) = source["columns"]
        samples = {keyword["name"]: [r[column["selector"]] for r in ask(source, one_at_a_time(source, dashboard, {})[0])]}
        assert samples[keyword["name"]], "the keyword variable has values"
        asked = 0
        for where, target, _ in targets(dashboard):
            for query in one_at_a_time(target, dashboard, samples):
                records = ask(target, query)
                asked += 1
                for record in records:
                    missing = {c["selector"] for c in target["columns"]} - set(record)
                    assert not missing, f"{where}: {query}: records without {missing}"
        assert asked >= 20
