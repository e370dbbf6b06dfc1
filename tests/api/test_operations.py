"""The operation table (service/operations.py): every operation is routed to its responder and
documented, nothing else is, and the bounds it shares are written once."""

from __future__ import annotations

from service.endpoints import BY_NAME as ENDPOINTS
from service.operations import OPERATIONS
from service.webhooks import evaluate, fields


def test_the_table_holds_the_sixteen_operations_once() -> None:
    names = [operation.name for operation in OPERATIONS]
    assert len(names) == len(set(names)) == 16
    assert {o.tag for o in OPERATIONS} == {"signals", "account", "webhooks"}
    assert [o.name for o in OPERATIONS if o.tag == "signals"] == list(ENDPOINTS)


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
