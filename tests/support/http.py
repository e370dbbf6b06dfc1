"""Small helpers for calling the app in tests."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing

from tests.support.spec_table import BASE


def auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def get(client: falcon.testing.TestClient, path: str, key: str | None, query: str | dict | None = None,
        headers: dict | None = None) -> falcon.testing.Result:
    kwargs: dict[str, Any] = {"headers": {**auth(key), **(headers or {})}}
    if isinstance(query, str):
        kwargs["query_string"] = query
    elif query is not None:
        kwargs["params"] = query
    return client.simulate_get(BASE + path, **kwargs)


def post_query(client: falcon.testing.TestClient, key: str | None, body: Any, headers: dict | None = None,
               raw: bytes | None = None) -> falcon.testing.Result:
    data = raw if raw is not None else json.dumps(body).encode()
    return client.simulate_post(
        BASE + "/query", body=data,
        headers={"Content-Type": "application/json", **auth(key), **(headers or {})},
    )


def assert_problem(result: falcon.testing.Result, status: int, *names: str) -> dict:
    """The response is problem+json with the common fields; `names` are the bad parameters, all of
    them, in the order the problem lists them."""
    assert result.status_code == status, (result.status_code, result.text)
    assert result.headers["content-type"].startswith("application/problem+json")
    body = result.json
    assert body["status"] == status
    assert body["type"].startswith("urn:signals:problem:")
    for field in ("title", "detail", "request_id", "disclaimer"):
        assert isinstance(body[field], str) and body[field], field
    if names:
        reported = [error["name"] for error in body.get("errors", [])]
        assert reported == list(names), (names, body)
        for error in body["errors"]:
            assert error["reason"], error
    return body
