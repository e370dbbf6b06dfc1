"""Issue 21 on the consumers' side, over the real processes (the Procfile's web, mcp and dashboard
lines, with SIGNALS_TRUSTED_PROXIES as scripts/run.sh sets it):

- malformed `Authorization` headers at the MCP server get a clear 4xx in JSON, never a 5xx, and
  no key reaches its log;
- the dashboard refuses to be framed and answers malformed callback requests with 400 JSON;
- both consumers tell the API who their caller is (X-Forwarded-For), so one caller's bad keys
  throttle that caller only; the dashboard tells that throttle apart from a plan's limit;
- after a burst of bad keys through /mcp and bad sign-ins on the dashboard, all from the same
  address as a valid user, a valid Professional key still works on the MCP server, on the
  dashboard and on the API (the API's side of this is the API's: a valid key is never refused
  because of other keys' failures from its address).
"""

from __future__ import annotations

import asyncio
import secrets
import string

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.browser import dashboard
from tests.support.fixture_data import write_fixture_store
from tests.support.mcp_stack import api_process, mcp_process
from tests.support.processes import create_key

pytestmark = pytest.mark.process

TRUSTED = "127.0.0.1/32,::1/128"  # scripts/run.sh's default: every process on this machine
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
AUTH_FAILURE_LIMIT = 20  # the API's failed authentications per address before it blocks the address


def random_key() -> str:
    return "sig_live_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("hostile") / "data"
    write_fixture_store(data_dir)
    sent: list[str] = []  # every key sent, looked for in the logs at the end
    with api_process(data_dir, SIGNALS_TRUSTED_PROXIES=TRUSTED) as (api, api_log), \
            mcp_process(api, SIGNALS_TRUSTED_PROXIES=TRUSTED) as (mcp, mcp_log), \
            dashboard(api, data_dir, SIGNALS_TRUSTED_PROXIES=TRUSTED) as (dash, dash_log):
        yield {"api": api, "mcp": mcp, "dash": dash, "data": data_dir, "sent": sent}
    for name, log in (("API", api_log[0]), ("MCP server", mcp_log[0]), ("dashboard", dash_log[0])):
        leaked = [key[:20] + "…" for key in sent if key in log]
        assert not leaked, f"keys reached the {name}'s log: {leaked}"
    assert "Traceback" not in mcp_log[0], mcp_log[0]
    assert "Traceback" not in dash_log[0], dash_log[0]


def mcp_post(stack, headers: list[tuple[bytes, bytes]]) -> httpx.Response:
    return httpx.post(stack["mcp"], json=INITIALIZE, headers=[*MCP_HEADERS.items(), *headers], timeout=30)


def assert_problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    problem = response.json()
    assert problem["status"] == status and problem["title"] and problem["detail"]
    assert "Traceback" not in response.text
    return problem


# -- MCP: malformed Authorization headers ------------------------------------------------------

def test_mcp_non_ascii_key_is_401_json(stack):
    for raw in (b"Bearer sig_live_\xc3\xa9t\xc3\xa9", b"Bearer sig_live_\xff\xfe\x80", "Bearer clé".encode("latin-1")):
        response = mcp_post(stack, [(b"Authorization", raw)])
        problem = assert_problem(response, 401)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
        assert "character" in problem["detail"]


def test_mcp_oversized_key_is_401_json_without_the_key(stack):
    for size in (300, 10 * 1024):
        key = random_key() + "A" * (size - 49)
        stack["sent"].append(key)
        response = mcp_post(stack, [(b"Authorization", f"Bearer {key}".encode())])
        problem = assert_problem(response, 401)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert f"{len(key):,} bytes" in problem["detail"] and key[:30] not in response.text


def test_mcp_two_authorization_headers_are_400_json(stack):
    valid = create_key(stack["data"], "professional")
    stack["sent"].append(valid)
    for second in (random_key(), valid):
        response = mcp_post(stack, [(b"Authorization", f"Bearer {valid}".encode()),
                                    (b"Authorization", f"Bearer {second}".encode())])
        problem = assert_problem(response, 400)
        assert "Authorization" in problem["detail"] and valid not in response.text
    assert mcp_post(stack, [(b"Authorization", f"Bearer {valid}".encode())]).status_code == 200


# -- Dashboard: framing, malformed callback requests --------------------------------------------

def test_dashboard_refuses_framing_on_every_answer(stack):
    with httpx.Client(base_url=stack["dash"], timeout=30) as http:
        answers = [http.get("/sign-in"), http.get("/"), http.get("/_dash-layout"), http.get("/_dash-dependencies"),
                   http.get("/assets/no-such-file.js"), http.post("/_dash-update-component", content=b"{")]
    for response in answers:
        assert response.headers["x-frame-options"] == "DENY", response.url
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"], response.url


def _sign_in_callback(http: httpx.Client) -> dict:
    dependencies = http.get("/_dash-dependencies").json()
    return next(d for d in dependencies if any(i["id"] == "sign-in" for i in d["inputs"]))


def _sign_in_body(callback: dict, key: str) -> dict:
    outputs = [dict(zip(("id", "property"), part.rsplit(".", 1), strict=True))
               for part in callback["output"].strip(".").split("...")]
    return {"output": callback["output"], "outputs": outputs,
            "inputs": [{"id": "sign-in", "property": "n_clicks", "value": 1},
                       {"id": "api-key", "property": "n_submit", "value": 0}],
            "state": [{"id": "api-key", "property": "value", "value": key}], "changedPropIds": ["sign-in.n_clicks"]}


def test_dashboard_malformed_callback_requests_are_400_json(stack):
    with httpx.Client(base_url=stack["dash"], timeout=30) as http:
        callback = _sign_in_callback(http)
        good = _sign_in_body(callback, "")
        malformed = {
            "not JSON": b'{"output": ',
            "not an object": b"[1, 2]",
            "no output": _json({k: v for k, v in good.items() if k != "output"}),
            "unknown output": _json({**good, "output": "..nothing.here.."}),
            "no outputs": _json({k: v for k, v in good.items() if k != "outputs"}),
            "no inputs": _json({k: v for k, v in good.items() if k != "inputs"}),
            "inputs not objects": _json({**good, "inputs": [1, 2]}),
            "too few inputs": _json({**good, "inputs": good["inputs"][:1]}),
            "too many states": _json({**good, "state": good["state"] * 2}),
            "changedPropIds not strings": _json({**good, "changedPropIds": [1]}),
        }
        for what, body in malformed.items():
            response = http.post("/_dash-update-component", content=body, headers={"Content-Type": "application/json"})
            assert response.status_code == 400, (what, response.status_code, response.text[:300])
            assert_problem(response, 400)
        # the well-formed request is served as before (no key: nothing to sign in with)
        served = http.post("/_dash-update-component", json=good)
        assert served.status_code == 200 and "Paste your API key first" in served.text


def _json(body) -> bytes:
    import json

    return json.dumps(body).encode()


# -- Forwarding: each caller is its own address at the API ---------------------------------------

def test_mcp_forwards_the_callers_address(stack):
    """Bad keys from one caller (behind a proxy this machine trusts) block that caller's address at
    the API, and not another caller's: the MCP server named each in X-Forwarded-For."""
    statuses = []
    for _ in range(AUTH_FAILURE_LIMIT + 5):
        key = random_key()
        stack["sent"].append(key)
        response = mcp_post(stack, [(b"Authorization", f"Bearer {key}".encode()),
                                    (b"X-Forwarded-For", b"203.0.113.7")])
        statuses.append(response.status_code)
    assert set(statuses) <= {401, 429} and 429 in statuses, statuses  # the API blocked 203.0.113.7
    other = random_key()
    stack["sent"].append(other)
    response = mcp_post(stack, [(b"Authorization", f"Bearer {other}".encode()),
                                (b"X-Forwarded-For", b"198.51.100.9")])
    problem = assert_problem(response, 401)  # another caller: refused for its key, not blocked
    assert "failed authentications" not in problem["detail"]


def test_dashboard_forwards_the_viewers_address_and_names_the_block(stack):
    """Bad sign-ins from one viewer block that viewer's address only; the block is told apart from
    a plan's rate limit."""
    with httpx.Client(base_url=stack["dash"], timeout=30) as http:
        callback = _sign_in_callback(http)

        def sign_in(key: str, address: str) -> str:
            stack["sent"].append(key)
            response = http.post("/_dash-update-component", json=_sign_in_body(callback, key),
                                 headers={"X-Forwarded-For": address})
            assert response.status_code == 200, response.text[:300]
            return response.json()["response"]["sign-in-message"]["children"]["props"]["children"]

        said = [sign_in(random_key(), "203.0.113.8") for _ in range(AUTH_FAILURE_LIMIT + 5)]
        blocked = [s for s in said if "network address" in s]
        assert blocked, said[-1]
        assert all("not accepted" in s for s in said if s not in blocked)
        assert "not your plan's limit" in blocked[-1] and "Try again in" in blocked[-1]
        assert "plan's limit." not in blocked[-1].replace("not your plan's limit.", "")
        other = sign_in(random_key(), "198.51.100.10")  # another viewer: its key refused, not blocked
        assert "not accepted" in other and "network address" not in other


# -- The burst: bad keys from the same address as a valid user -------------------------------------

def test_valid_key_works_everywhere_after_a_burst_of_bad_keys(stack):
    with httpx.Client(base_url=stack["dash"], timeout=30) as http:
        callback = _sign_in_callback(http)
        for _ in range(30):
            key = random_key()
            stack["sent"].append(key)
            assert mcp_post(stack, [(b"Authorization", f"Bearer {key}".encode())]).status_code in (401, 429)
        for _ in range(25):
            key = random_key()
            stack["sent"].append(key)
            assert http.post("/_dash-update-component", json=_sign_in_body(callback, key)).status_code == 200
        valid = create_key(stack["data"], "professional")
        stack["sent"].append(valid)

        # the dashboard: signed in, with the plan
        answer = http.post("/_dash-update-component", json=_sign_in_body(callback, valid))
        assert answer.status_code == 200
        session = answer.json()["response"].get("session")
        assert session, answer.json()["response"]["sign-in-message"]
        assert session["data"]["plan"] == "professional"

    # the MCP server: a session and a tool call
    async def tool_call():
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {valid}"}, timeout=30) as client,
                    Client(streamable_http_client(stack["mcp"], http_client=client)) as mcp):
            return await mcp.call_tool("signals_top_keywords", {"window": "7d", "limit": 3})

    result = asyncio.run(tool_call())
    assert not result.is_error, result.content
    # the API itself
    direct = httpx.get(stack["api"] + "/api/v1/account", headers={"Authorization": f"Bearer {valid}"}, timeout=30)
    assert direct.status_code == 200, direct.text
