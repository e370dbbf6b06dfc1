"""Input edge cases (issue 11), each over real HTTP against the real gunicorn of the Procfile, with
unit tests beside them where the rule lives below HTTP:

1. a chunked body (no Content-Length) is read, with the same 64 KiB limit;
2. a JSON body that repeats a key, at any depth, is 400 naming the key;
3. a URL past 4096 bytes is 414, and gunicorn's own refusals are problem+json too;
4. the web process listens on 127.0.0.1 unless SIGNALS_HOST says otherwise;
5. body fields follow their JSON Schema: null is refused, 147.0 is an integer.
"""

from __future__ import annotations

import http.client
import io
import json
import runpy
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.api.endpoints import BY_NAME
from service.api.openapi import build_openapi
from service.http.middleware.url_length import MAX_URL_BYTES
from service.http.resources.json_body import MAX_BODY_BYTES, repeated_keys
from service.settings import Settings, SettingsError
from tests.support.fixture_data import write_fixture_store
from tests.support.http import assert_problem, post_query
from tests.support.processes import ROOT, create_key, gunicorn
from tests.support.spec_table import BASE

QUERY = BASE + "/query"
QUERY_BODY = {"window": "90d", "group_by": ["country"], "limit": 5}


class Server:
    def __init__(self, base: str, key: str, log: list[str]) -> None:
        self.base, self.key, self.log = base, key, log
        self.port = int(base.rsplit(":", 1)[1])
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=self.headers, timeout=10)

    def raw(self, request: bytes) -> bytes:
        """Send bytes as they are and read the whole answer (the server closes the connection)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as conn:
            conn.sendall(request)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("edge-cases") / "data"
    write_fixture_store(data_dir)
    key = create_key(data_dir, "professional")
    with gunicorn(data_dir, WEB_CONCURRENCY="1") as (base, log):
        yield Server(base, key, log)
    # No edge case reached the last-resort handler, and none made the key appear in the log.
    assert "Traceback" not in log[0] and key not in log[0], log[0][-5000:]


def assert_http_problem(response: httpx.Response, status: int, *names: str) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body = response.json()
    assert body["status"] == status and body["type"].startswith("urn:signals:problem:")
    for field in ("title", "detail", "request_id", "disclaimer"):
        assert isinstance(body[field], str) and body[field], field
    assert {e["name"] for e in body.get("errors", [])} >= set(names), body
    return body


def pieces(data: bytes, size: int = 1000) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


# -- 1. chunked bodies -------------------------------------------------------------------------

@pytest.mark.process
def test_chunked_body_from_httpx_gets_the_same_answer_as_with_content_length(server):
    body = json.dumps(QUERY_BODY).encode()
    with server.http() as http:
        plain = http.post(QUERY, content=body)
        chunked = http.post(QUERY, content=pieces(body, 7))  # a generator: httpx sends it chunked
    assert plain.status_code == 200 and chunked.status_code == 200, chunked.text
    assert chunked.request.headers["transfer-encoding"] == "chunked" and "content-length" not in chunked.request.headers
    assert chunked.json() == plain.json() and chunked.json()["results"]


@pytest.mark.process
def test_chunked_body_from_http_client(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", QUERY, body=pieces(json.dumps(QUERY_BODY).encode()), headers=server.headers,
                     encode_chunked=True)
        response = conn.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["group_by"] == ["country"]
    finally:
        conn.close()


@pytest.mark.process
def test_chunked_body_over_64_kib_is_413(server):
    big = b'{"window": "24h", "pad": "' + b"x" * (70 * 1024) + b'"}'
    with server.http() as http:
        response = http.post(QUERY, content=pieces(big, 4096))
    body = assert_http_problem(response, 413)
    assert str(MAX_BODY_BYTES) in body["detail"]


@pytest.mark.process
def test_chunked_body_of_exactly_64_kib_is_read_whole(server):
    head = b'{"window": "24h", "format": "json"'
    body = head + b" " * (MAX_BODY_BYTES - len(head) - 1) + b"}"  # JSON allows the padding
    assert len(body) == MAX_BODY_BYTES
    with server.http() as http:
        assert http.post(QUERY, content=pieces(body, 4096)).status_code == 200


@pytest.mark.process
def test_malformed_chunked_body_is_400_problem(server):
    answer = server.raw(b"POST " + QUERY.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + server.key.encode() + b"\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"application/problem+json" in head.lower(), answer
    assert json.loads(body)["errors"][0]["name"] == "body"


def test_chunked_body_is_read_where_the_server_terminates_the_input(client, keys):
    """In-process: the same path, the stream ended by the server (gunicorn's wsgi.input_terminated)."""
    body = json.dumps(QUERY_BODY).encode()
    result = client.simulate_post(QUERY, headers={"Authorization": f"Bearer {keys['analyst']}",
                                                  "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                                  extras={"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True})
    assert result.status_code == 200, result.text
    assert result.json == post_query(client, keys["analyst"], QUERY_BODY).json


def test_chunked_body_on_a_server_that_does_not_end_the_input_is_411(client, keys):
    """Reading past the body would wait forever there, so the caller is asked for a Content-Length."""
    result = client.simulate_post(QUERY, headers={"Authorization": f"Bearer {keys['analyst']}",
                                                  "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                                  extras={"wsgi.input": io.BytesIO(b'{"window": "24h"}')})
    assert_problem(result, 411)


# -- 2. repeated keys in a JSON body -------------------------------------------------------------

@pytest.mark.process
@pytest.mark.parametrize("raw, names", [
    (b'{"window": "7d", "window": "24h"}', ["window"]),
    (b'{"window": "7d", "filters": {"keywords": ["a"], "keywords": ["b"]}}', ["filters.keywords"]),
    (b'{"window": "7d", "limit": 1, "limit": 2, "limit": 3, "order": "asc", "order": "asc"}', ["limit", "order"]),
])
def test_repeated_body_keys_are_400_naming_each(server, raw, names):
    with server.http() as http:
        body = assert_http_problem(http.post(QUERY, content=raw), 400, *names)
    assert [e["name"] for e in body["errors"]] == names
    assert all("repeated" in e["reason"] for e in body["errors"])


def test_repeated_keys_are_found_at_any_depth_in_document_order():
    from service.http.resources.json_body import _object

    body = json.loads('{"a": [{"x": 1, "x": 2}], "b": {"c": {"d": 1, "d": 1}}, "a2": 1, "a2": 2}',
                      object_pairs_hook=_object)
    assert repeated_keys(body) == ["a2", "a[0].x", "b.c.d"]
    deep: list = []
    for _ in range(100_000):  # deeper than any recursion limit: the walk is iterative
        deep = [deep]
    assert repeated_keys({"a": deep}) == []


# -- 3. URL length ------------------------------------------------------------------------------

@pytest.mark.process
def test_9_kb_url_is_414_problem_json_from_gunicorn_itself(server):
    """Past gunicorn's request-line limit (8190, its maximum) gunicorn answers before the app:
    in our format all the same."""
    with server.http() as http:
        response = http.get(BASE + "/top-keywords", params={"window": "9" * 9000})
    assert_http_problem(response, 414)
    assert response.headers["x-request-id"] == response.json()["request_id"]


@pytest.mark.process
def test_url_past_our_limit_is_414_from_the_app(server):
    with server.http() as http:
        response = http.get(BASE + "/top-keywords", params={"window": "9" * 5000})
        body = assert_http_problem(response, 414)
        assert str(MAX_URL_BYTES) in body["detail"] and response.headers["x-request-id"] == body["request_id"]
        post = http.post(QUERY + "?pad=" + "x" * 5000, json=QUERY_BODY)
        assert_http_problem(post, 414)
        # Just under the limit the request is validated as usual.
        under = http.get(BASE + "/top-keywords", params={"window": "9" * (MAX_URL_BYTES - 100)})
        assert_http_problem(under, 400, "window")


@pytest.mark.process
def test_too_many_header_fields_is_431_problem_json(server):
    with server.http() as http:
        response = http.get(BASE + "/top-keywords", headers={f"X-Extra-{i}": "1" for i in range(120)})
    assert_http_problem(response, 431)


@pytest.mark.process
def test_malformed_request_line_is_400_problem_json(server):
    head, _, body = server.raw(b"GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/problem+json" in head.lower(), head
    assert json.loads(body)["status"] == 400


def test_url_limit_in_process(client, keys):
    from tests.support.http import get

    result = get(client, "/top-keywords", keys["observer"], "window=" + "9" * MAX_URL_BYTES)
    assert_problem(result, 414)
    assert "remaining" not in " ".join(result.headers)  # refused before authentication and rate limits


def test_every_operation_documents_414():
    document = build_openapi()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert "414" in operation["responses"], (method, path)
    assert str(MAX_URL_BYTES) in document["components"]["responses"]["Problem414"]["description"]


def test_gunicorn_request_line_limit_is_above_ours():
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert config["limit_request_line"] >= MAX_URL_BYTES + len("OPTIONS  HTTP/1.1")
    assert config["limit_request_line"] != 0  # 0 would be unlimited


# -- 4. listening address ------------------------------------------------------------------------

def test_host_defaults_to_loopback_and_is_read_from_signals_host():
    assert Settings.from_env({}).host == "127.0.0.1"
    assert Settings.from_env({}).bind == "127.0.0.1:8000"
    assert Settings.from_env({"SIGNALS_HOST": "0.0.0.0", "PORT": "9000"}).bind == "0.0.0.0:9000"
    assert Settings.from_env({"SIGNALS_HOST": "::"}).bind == "[::]:8000"
    assert Settings.from_env({"SIGNALS_HOST": "localhost"}).bind == "localhost:8000"
    for bad in ("0.0.0.0:80", "http://x", "a b"):
        with pytest.raises(SettingsError, match="SIGNALS_HOST"):
            Settings.from_env({"SIGNALS_HOST": bad})


@pytest.mark.parametrize("env, bind", [({}, "127.0.0.1:8000"), ({"SIGNALS_HOST": "0.0.0.0", "PORT": "8123"}, "0.0.0.0:8123")])
def test_gunicorn_binds_what_the_settings_say(monkeypatch, env, bind):
    for name in ("SIGNALS_HOST", "PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["bind"] == bind


@pytest.mark.process
def test_the_real_gunicorn_listens_on_loopback_only(server):
    tcp = Path("/proc/net/tcp")
    if not tcp.exists():
        pytest.skip("reads the listening sockets from Linux's /proc/net/tcp")
    listening = [line.split()[1] for line in tcp.read_text().splitlines()[1:] if line.split()[3] == "0A"]
    ours = [address for address in listening if int(address.split(":")[1], 16) == server.port]
    assert ours == ["0100007F:" + f"{server.port:04X}"], ours  # 127.0.0.1, little-endian


# -- 5. body fields against their JSON Schema ----------------------------------------------------

@pytest.mark.process
def test_null_format_is_400_and_integral_limit_is_accepted(server):
    with server.http() as http:
        assert_http_problem(http.post(QUERY, json={"window": "24h", "format": None}), 400, "format")
        whole = http.post(QUERY, json={**QUERY_BODY, "limit": 1})
        as_float = http.post(QUERY, content=json.dumps(QUERY_BODY).replace('"limit": 5', '"limit": 1.0'))
        assert whole.status_code == 200 and as_float.status_code == 200, as_float.text
        assert as_float.json() == whole.json() and len(whole.json()["results"]) == 1
        for bad in (3.5, True, "3"):
            assert_http_problem(http.post(QUERY, json={**QUERY_BODY, "limit": bad}), 400, "limit")
        assert_http_problem(http.get(BASE + "/top-keywords", params={"limit": "3.0"}), 400, "limit")


@pytest.mark.parametrize("field", [p.name for p in BY_NAME["query"].params])
def test_null_is_refused_for_every_query_field(client, keys, field):
    body = {"window": "24h", field: None}
    assert_problem(post_query(client, keys["analyst"], body), 400, field)


@pytest.mark.parametrize("filters, name", [
    ({"keywords": None}, "filters.keywords"), ({"countries": ["US", None]}, "filters.countries[1]"),
])
def test_null_inside_filters_is_refused(client, keys, filters, name):
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": filters}), 400, name)


def test_group_by_null_item_is_refused(client, keys):
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "group_by": [None]}), 400, "group_by[0]")


# -- keys in the URL never reach the log (issue 21) ----------------------------------------------

@pytest.mark.process
def test_a_key_sent_in_the_query_string_is_refused_and_not_logged(server):
    """The module's server checks at its end that its key appears nowhere in its output."""
    with httpx.Client(base_url=server.base, timeout=10) as http:
        for query in (f"api_key={server.key}", f"token={server.key}&limit=3", f"limit=3&x={server.key}"):
            answer = http.get(f"{BASE}/top-keywords?{query}", headers={"Referer": f"https://e.com/?key={server.key}"})
            assert answer.status_code == 401, answer.text  # keys are read from the Authorization header only
