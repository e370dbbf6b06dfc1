"""The OpenAPI 3.1 document: valid, public, and complete against the spec table."""

from __future__ import annotations

from openapi_spec_validator import validate

from tests.support.spec_table import ADDED, BASE, GET_ENDPOINTS, MIN_TIER, QUERY_WINDOWS


def openapi(client):
    result = client.simulate_get("/api/v1/openapi")
    assert result.status_code == 200
    return result.json


def test_document_is_valid_openapi_3_1_and_needs_no_key(client):
    doc = openapi(client)
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_every_endpoint_parameter_bound_and_default_is_documented(client):
    doc = openapi(client)
    for path, params in GET_ENDPOINTS.items():
        operation = doc["paths"][BASE + path]["get"]
        documented = {p["name"]: p for p in operation["parameters"]}
        assert set(documented) == set(params) | ADDED[path]  # the spec's, and issue 25's optional ones
        for name in ADDED[path]:
            assert documented[name]["required"] is False and "default" not in documented[name]["schema"]
        for name, (allowed, default) in params.items():
            schema = documented[name]["schema"]
            if isinstance(allowed, list):
                assert schema["enum"] == allowed
            elif isinstance(allowed, tuple):
                assert (schema["minimum"], schema["maximum"]) == allowed
            if default is not None:
                assert schema["default"] == default
            else:
                assert documented[name]["required"] is True


def test_query_body_is_documented(client):
    doc = openapi(client)
    operation = doc["paths"][BASE + "/query"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["window"]
    props = schema["properties"]
    assert ADDED["/query"] <= set(props)
    assert props["window"]["enum"] == QUERY_WINDOWS
    assert props["group_by"]["maxItems"] == 5
    assert props["limit"]["minimum"] == 1 and props["limit"]["maximum"] == 1000 and props["limit"]["default"] == 100
    for key, array in props["filters"]["properties"].items():
        assert array["maxItems"] == 50, key
    assert "text/csv" in operation["responses"]["200"]["content"]


def test_security_tiers_and_error_responses(client):
    doc = openapi(client)
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        **doc["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert doc["components"]["securitySchemes"]["browserToken"] == {  # issue 51: a key's browser token
        **doc["components"]["securitySchemes"]["browserToken"], "type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    for path, tier in MIN_TIER.items():
        method = "post" if path == "/query" else "get"
        operation = doc["paths"][BASE + path][method]
        assert operation["security"] == [{"bearerAuth": []}, {"browserToken": []}]  # a key, or a browser token
        assert operation["x-min-tier"] == tier
        assert tier.capitalize() in operation["description"]
        for status in ("200", "304", "400", "401", "403", "429", "500", "503"):
            assert status in operation["responses"], (path, status)
        ok_headers = operation["responses"]["200"]["headers"]
        for header in ("RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining",
                       "X-RateLimit-Reset", "ETag", "Cache-Control"):
            assert header in ok_headers, (path, header)
    too_many = doc["components"]["responses"]["Problem429"]
    assert "Retry-After" in too_many["headers"]


def test_response_schemas_describe_records(client):
    doc = openapi(client)
    ok = doc["paths"][BASE + "/top-keywords"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    record = ok["properties"]["keywords"]["items"]
    assert record["required"] == ["keyword_raw", "suppressions", "users_est", "rank"]  # the spec's fields
    # and the optional ones of compare and intervals (issue 25), nothing else
    assert set(record["properties"]) == {*record["required"], "previous", "change", "intervals"}
    assert record["additionalProperties"] is False
    assert "disclaimer" in ok["required"]
