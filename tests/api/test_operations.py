"""The operation table (service/api/operations.py): every operation is routed to its responder and
documented, nothing else is, and the bounds it shares are written once."""

from __future__ import annotations

import re

import pytest

from connectors.operations import query_text
from service.api.endpoints import BY_NAME as ENDPOINTS
from service.api.operations import OPERATIONS, Operation
from service.api.params import parse_body, parse_query
from service.webhooks import evaluate, fields


def test_the_table_holds_each_operation_once() -> None:
    names = [operation.name for operation in OPERATIONS]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    assert {o.tag for o in OPERATIONS} == {"signals", "account", "tokens", "webhooks"}
    assert [o.name for o in OPERATIONS if o.tag == "signals"] == list(ENDPOINTS)
    assert len({(o.method, o.path) for o in OPERATIONS}) == len(OPERATIONS)


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda o: o.name)
def test_the_operations_example_is_a_request_it_takes(operation: Operation) -> None:
    """What the consumers' tests send (the client's, the MCP tools', the columns'): every path
    parameter named, the rest valid as the API checks it (the webhook URL's address aside: that
    check resolves the host)."""
    path_params = re.findall(r"{(\w+)}", operation.path)
    assert set(path_params) <= set(operation.example), (operation.name, path_params)
    rest = {k: v for k, v in operation.example.items() if k not in path_params}
    if operation.in_body:
        values = parse_body(operation.params, rest)
        if operation.endpoint is not None and operation.endpoint.check is not None:
            assert operation.endpoint.check(values) == [], operation.name
    else:
        parse_query(operation.params, {k: [query_text(x) for x in v] if isinstance(v, list) else query_text(v)
                                       for k, v in rest.items()})


def test_every_operation_is_routed_to_its_responder_and_no_other_is(app) -> None:
    for path in {o.path for o in OPERATIONS}:
        resource, methods, _params, _template = app._router.find(path.replace("{webhook_id}", "wh_1"))
        served = {method: responder for method, responder in methods.items()
                  if getattr(responder, "__self__", None) is resource}  # not Falcon's 405 and OPTIONS
        assert served == {o.method: getattr(resource, o.responder) for o in OPERATIONS if o.path == path}, path


def test_the_document_lists_exactly_the_table(client) -> None:
    doc = client.simulate_get("/api/v1/openapi").json
    documented = [(path, method.upper(), op["operationId"], op["tags"])
                  for path, methods in doc["paths"].items() for method, op in methods.items()]
    assert documented == [(o.path, o.method, o.name, [o.tag]) for o in OPERATIONS]


def test_a_webhook_body_is_its_fields_and_its_bounds_are_the_trending_endpoints(client) -> None:
    doc = client.simulate_get("/api/v1/openapi").json
    webhooks = doc["paths"]["/api/v1/account/webhooks"]["post"]["requestBody"]["content"]["application/json"]
    trending = {p["name"]: p["schema"] for p in doc["paths"]["/api/v1/signals/trending"]["get"]["parameters"]}
    body = webhooks["schema"]
    assert body["properties"] == {field.name: field.json_schema() for field in fields.FIELDS}
    assert body["required"] == ["url", "window", "dimension", "threshold_pct", "cooldown_minutes"]
    for name in ("window", "dimension", "metric"):
        assert body["properties"][name]["enum"] == trending[name]["enum"]
    assert body["properties"]["min_baseline"]["default"] == trending["min_baseline"]["default"]
    assert body["properties"]["min_baseline"]["minimum"] == trending["min_baseline"]["minimum"]
    assert evaluate.trending_request("24h", "keyword", "suppressions", 10).limit == trending["limit"]["maximum"]
