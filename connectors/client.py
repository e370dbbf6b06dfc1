"""`SignalsClient`: the one Python client of the Signals API, shared by every consumer.

    from connectors.client import SignalsClient

    with SignalsClient() as api:                     # SIGNALS_API_URL, SIGNALS_API_KEY
        api.account()["plan"]                        # 'analyst'
        api.top_keywords(window="7d", limit=10)      # the JSON body, a dict
        api.keyword_timeseries("climate change", window="30d", bucket="day", frame=True)  # polars
        api.create_webhook(url="https://example.com/hook", window="24h", dimension="keyword",
                           threshold_pct=50, cooldown_minutes=60)["secret"]  # shown only now

What it knows about parameters (names, allowed values, bounds, defaults, which are required) it
reads from the API's served OpenAPI document, once per client (`operations`); a bound is written
only in the service. Arguments are checked against it before any request and refused with the
API's own words. Otherwise it behaves as API clients are expected to:

- `Authorization: Bearer <key>`, a `User-Agent` naming the client and its version, timeouts;
- 429: waits `Retry-After` and tries again while the waits stay under `max_rate_limit_wait`
  seconds in all (a longer `Retry-After` is raised at once, without waiting for nothing); a
  refusal by the privacy budget (429 of type privacy-budget) is raised at once (it renews with
  the month). Every answer's `Reply.privacy_budget` is the subscription's budget after it;
- connection failures (refused, reset, closed before the answer) and 503: retried up to
  `max_retries` times with exponential backoff and jitter (or the 503's `Retry-After`);
- conditional requests: the ETag of each answer is remembered with its body and sent back as
  `If-None-Match`; a 304 returns the remembered body;
- every failure is a `SignalsError` carrying a problem in the API's shape (`problem`: type,
  title, status, detail, errors, request_id): the API's own, or one of connectors/problems.py's
  types for a failure found here (no answer: `urn:signals:problem:unreachable`).

A consumer that calls the API for other people (the dashboard, the MCP server over HTTP) names
its caller with `forwarded_for` (sent as `X-Forwarded-For`, which the API believes from the
proxies in its SIGNALS_TRUSTED_PROXIES), so that the API's per-address throttle of failed
authentications and its logs see each caller, not the consumer's one address;
`forwarded_chain` computes the value from the caller's connection.

The webhook methods (account management, `operations.management`) leave the checking of their
fields to the API, whose 400 names each one; a request that changes something (POST, PATCH,
DELETE) is retried only when it never left, so a lost answer cannot create a webhook twice.

Retries use tenacity rather than a hand loop: its retry, wait and stop policies are separate,
composable functions (the wait reads `Retry-After`; the stop knows the 429 budget), the sleep is
injectable (tests advance a clock instead of sleeping), and it is widely used and maintained.
httpx's own transport retries cover only failures to connect, not 429, 503 or a connection
dropped before the answer, so they would not replace it.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import hashlib
import inspect
import io
import ipaddress
import itertools
import json
import re
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import tenacity

from connectors import __version__, privacy_budget, problems
from connectors.operations import INVALID_TITLE, FieldError, Operation, Operations, query_text, summary
from connectors.settings import ConnectorSettings, Network

OPENAPI_PATH = "/api/v1/openapi"
USER_AGENT = f"signals-python-client/{__version__} httpx/{httpx.__version__}"
_MEMORY = 256  # answers remembered for conditional requests, per client
_MOST_ATTEMPTS = 100  # of one request, whatever the waits (a Retry-After of 0 must not spin forever)

# Failures of the connection that are safe to retry: every data operation of the API only reads.
_RETRYABLE_TRANSPORT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError,
                        httpx.WriteError, httpx.PoolTimeout)
# For a request that changes something (creating, editing or deleting a webhook, sending a test),
# only failures before the request left: after that the server may have acted, and a retry could
# do it twice (or, for a DELETE, answer 404 for a webhook it had just deleted).
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
FORWARDED_HOPS = 16  # of an incoming X-Forwarded-For chain passed on (the rightmost: the API reads from the right)
_FORWARDED_VALUE = re.compile(r"[0-9A-Za-z.:, ]{1,1000}")


class SignalsError(Exception):
    """Any failure of a call, as a problem in the API's shape (`problem`, connectors/problems.py:
    type, title, status, detail, errors, request_id, ...): refused by the API (its problem+json as
    it is), refused by the client before sending (`sent` is False: the API's invalid-request type,
    or unknown-operation), or no answer at all (type unreachable, `status` None). `status`,
    `title`, `detail`, `errors` and `request_id` are the problem's members; `retry_after` is the
    answer's Retry-After header."""

    def __init__(self, status: int | None, title: str, detail: str | None = None,
                 errors: list[dict[str, str]] | None = None, *, request_id: str | None = None,
                 retry_after: int | None = None, sent: bool = True, problem: Mapping[str, Any] | None = None,
                 type: str | None = None) -> None:
        self.status = status
        self.title = title
        self.detail = detail or title
        self.errors = list(errors or [])
        self.request_id = request_id
        self.retry_after = retry_after
        self.sent = sent
        kind = type or (problems.UNREACHABLE if status is None else problems.NOT_PROBLEM_JSON)
        self.problem = dict(problem or {})
        for name, value in problems.problem(kind, title, status, self.detail, errors=self.errors,
                                            request_id=request_id).items():
            self.problem.setdefault(name, value)
        super().__init__(f"{status} {title}: {self.detail}" if status else f"{title}: {self.detail}")

    @classmethod
    def invalid(cls, errors: list[FieldError]) -> SignalsError:
        """Arguments refused before any request, as the API would refuse them."""
        return cls(400, INVALID_TITLE, summary(errors), [e.as_dict() for e in errors], sent=False,
                   type=problems.INVALID_REQUEST)

    @classmethod
    def from_response(cls, response: httpx.Response) -> SignalsError:
        retry_after = _retry_after(response)
        try:
            problem = response.json()
            if not isinstance(problem, dict):
                raise ValueError
        except ValueError:  # not ours (a proxy's page): keep the first words of it
            return cls(response.status_code, response.reason_phrase or "Error", response.text[:200] or None,
                       retry_after=retry_after)
        return cls(response.status_code, str(problem.get("title") or response.reason_phrase), problem.get("detail"),
                   problem.get("errors"), request_id=problem.get("request_id") or response.headers.get("x-request-id"),
                   retry_after=retry_after, problem=problem)


@dataclasses.dataclass(frozen=True)
class Reply:
    """One answer: the JSON body (a dict; CSV text for /query with format=csv), its ETag and
    as_of, and whether the server said 304 (the body is then the remembered one, or None when the
    client had none)."""

    body: Any
    status: int
    etag: str | None
    as_of: dt.datetime | None
    not_modified: bool = False
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    pages: int = 1  # the pages fetched for it (`fetch_all`)

    @property
    def total_rows(self) -> int | None:
        """How many rows the full answer holds (the Signals-Total-Rows header); None when not said."""
        value = self.headers.get("signals-total-rows", "")
        return int(value) if value.isdigit() else None

    @property
    def next_page(self) -> str | None:
        """The URL (path and query) of the next page (Link rel="next"), or None on the last page."""
        return next_link(self.headers.get("link"))

    @property
    def privacy_budget(self) -> privacy_budget.PrivacyBudget | None:
        """The subscription's privacy budget after this answer (Signals-Privacy-Budget), or None."""
        return privacy_budget.read(self.headers)

    def rows(self, operation: Operation) -> int:
        """The rows this answer holds (records, or CSV lines after the header)."""
        if isinstance(self.body, str):
            return max(0, len(self.body.strip("\ufeff").splitlines()) - 1)
        return len(self.body.get(operation.records_field, [])) if isinstance(self.body, dict) else 0


_LINK_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*?\brel="?next"?', re.IGNORECASE)


def next_link(value: str | None) -> str | None:
    """The target of `rel="next"` in a Link header value (RFC 8288), or None."""
    match = _LINK_NEXT.search(value or "")
    return match.group(1) if match else None


def rows_text(shown: int, total: int | None) -> str:
    """'100 of 390 rows' when the answer holds more than are shown, else '390 rows' (every consumer's words)."""
    if total is not None and total > shown:
        return f"{shown:,} of {total:,} rows"
    return f"{shown:,} row" + ("" if shown == 1 else "s")


class SignalsClient:
    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_retries: int = 3,
        max_rate_limit_wait: float = 60.0,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        settings: ConnectorSettings | None = None,
        forwarded_for: str | None = None,
    ) -> None:
        """`forwarded_for`: the X-Forwarded-For sent with every request, naming the person this
        client calls for (see `forwarded_chain`); None sends none."""
        if forwarded_for is not None and not _FORWARDED_VALUE.fullmatch(forwarded_for):
            raise ValueError("forwarded_for must be a comma-separated list of IP addresses (see forwarded_chain)")
        settings = settings or ConnectorSettings.from_env()
        self.forwarded_for = forwarded_for
        self.base_url = (base_url or settings.api_url).rstrip("/")
        self._api_key = api_key if api_key is not None else settings.api_key
        self.max_retries = max_retries
        self.max_rate_limit_wait = max_rate_limit_wait
        self._backoff = tenacity.wait_exponential_jitter(multiplier=backoff, max=8.0, jitter=backoff)
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.base_url, transport=transport,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json",
                     **({"X-Forwarded-For": forwarded_for} if forwarded_for else {})},
        )
        self._operations: Operations | None = None
        self._lock = threading.Lock()
        self._remembered: collections.OrderedDict[str, tuple[str, Any]] = collections.OrderedDict()

    # -- the endpoints ----------------------------------------------------------------------
    # One method per data operation of the served document, named by its operationId and made from
    # the document on first use (`__getattr__`, `endpoint_method`): api.top_keywords(window="7d"),
    # api.keyword_timeseries("climate change", frame=True). Its parameters are the documented ones,
    # in order (the leading required ones may also be given by position), then `frame` and
    # `all_pages`; None leaves a parameter to the API's default. An endpoint the API adds is a
    # method here without a change; tests/connectors/test_client.py checks that the methods and
    # their parameters are exactly the document's.

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """A data operation's method, by operationId (the document is read the first time)."""
        if name.startswith("_") or hasattr(type(self), name):  # not an operation (or its getter failed)
            raise AttributeError(name)
        operation = self.operations.get(name)
        if operation is None or not operation.is_data:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        made = self.__dict__.setdefault("_methods", {})
        if name not in made:
            made[name] = endpoint_method(operation)
        return types.MethodType(made[name], self)

    def __dir__(self) -> list[str]:
        loaded = self.__dict__.get("_operations")
        return [*super().__dir__(), *(name for name, op in (loaded or {}).items() if op.is_data)]

    def account(self) -> dict[str, Any]:
        """Who the key belongs to: subscription, plan, requests per minute, the endpoints the
        plan may call, the key's prefix."""
        return self.call("account", {})

    # -- browser tokens (for the server behind a web page: docs/api.md "Calling the API from a web page")

    def mint_token(self, origins: Sequence[str], ttl_seconds: int | None = None, endpoints: Sequence[str] | None = None,
                   fixed: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A short-lived token for a web page at `origins` (`token`, `expires_at`, `origins`,
        `endpoints`, `fixed`): the page sends it instead of the key, which never leaves this server."""
        return self.manage("mint_token", {"origins": list(origins), "ttl_seconds": ttl_seconds,
                                          "endpoints": None if endpoints is None else list(endpoints),
                                          "fixed": None if fixed is None else dict(fixed)}).body

    # -- webhooks (account management: any plan, the key's own subscription) -------------------
    # Fields are checked by the API, whose 400 names each bad field (SignalsError.errors); the
    # fields' schemas are in `operations.management[...]`. tests/connectors/test_client_webhooks.py checks
    # that these names are exactly the document's management operations.

    def webhooks(self) -> dict[str, Any]:
        """The subscription's webhooks (`webhooks`) and how many it may have (`limit`)."""
        return self.manage("list_webhooks").body

    def create_webhook(self, *, url: str, window: str, dimension: str, threshold_pct: float, cooldown_minutes: int,
                       metric: str | None = None, min_baseline: float | None = None, enabled: bool | None = None,
                       description: str | None = None) -> dict[str, Any]:
        """The new webhook with its signing `secret` (shown only in this answer)."""
        return self.manage("create_webhook", {
            "url": url, "window": window, "dimension": dimension, "threshold_pct": threshold_pct,
            "cooldown_minutes": cooldown_minutes, "metric": metric, "min_baseline": min_baseline, "enabled": enabled,
            "description": description}).body

    def webhook(self, webhook_id: str) -> dict[str, Any]:
        return self.manage("get_webhook", {"webhook_id": webhook_id}).body

    def update_webhook(self, webhook_id: str, **fields: Any) -> dict[str, Any]:
        """Changes the fields given (None leaves a field as it is)."""
        return self.manage("update_webhook", {"webhook_id": webhook_id, **fields}).body

    def delete_webhook(self, webhook_id: str) -> None:
        self.manage("delete_webhook", {"webhook_id": webhook_id})

    def test_webhook(self, webhook_id: str) -> dict[str, Any]:
        """Queues a signed test delivery, which the worker process sends: its `delivery_id` (the
        attempt appears in `webhook_deliveries` with that id) and `attempt` None."""
        return self.manage("test_webhook", {"webhook_id": webhook_id}).body

    def webhook_deliveries(self, webhook_id: str, *, limit: int | None = None, before: int | None = None) -> dict[str, Any]:
        """Delivery attempts, newest first; the next page with `before=<next_before>`."""
        return self.manage("list_webhook_deliveries", {"webhook_id": webhook_id, "limit": limit, "before": before}).body

    def rotate_webhook_secret(self, webhook_id: str) -> dict[str, Any]:
        """The webhook with a new `secret` (shown only now); the old one stops signing at once."""
        return self.manage("rotate_webhook_secret", {"webhook_id": webhook_id}).body

    # -- the machinery ------------------------------------------------------------------------

    @property
    def operations(self) -> Operations:
        """The API's operations, read from its OpenAPI document on first use."""
        with self._lock:
            if self._operations is None:
                response = self._send("GET", OPENAPI_PATH, authorised=False)
                if response.status_code != 200:
                    raise SignalsError.from_response(response)
                self._operations = Operations.from_openapi(response.json())
            return self._operations

    def operation(self, name: str) -> Operation:
        """An operation by operationId (`top_keywords`), path slug (`top-keywords`) or tool name."""
        found = self.operations.find(name)
        if found is None:
            hint = self.operations.suggest(name)
            raise SignalsError(None, "Unknown endpoint", f"There is no endpoint {name!r}."
                               + (f" Did you mean {hint!r}?" if hint else "")
                               + " Endpoints: " + ", ".join(op.slug for op in self.operations.values()) + ".",
                               sent=False, type=problems.UNKNOWN_OPERATION)
        return found

    def prepare(self, name: str, arguments: Mapping[str, Any]) -> tuple[Operation, dict[str, Any]]:
        """The operation and its query parameters or body; SignalsError (400, the API's words)
        for arguments the API would refuse. Sends nothing but, the first time, the document."""
        operation = self.operation(name)
        request, errors = operation.check(arguments)
        if errors:
            raise SignalsError.invalid(errors)
        return operation, request

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, *, frame: bool = False,
             all_pages: bool = False) -> Any:
        """The operation's answer: the JSON body as a dict, or its records as a polars DataFrame;
        with `all_pages`, every page of it (`fetch_all`)."""
        reply = self.fetch_all(name, arguments or {}) if all_pages else self.fetch(name, arguments or {})
        return to_frame(self.operation(name), reply.body) if frame else reply.body

    def fetch_all(self, name: str, arguments: Mapping[str, Any] | None = None, *, max_pages: int = 1000) -> Reply:
        """The whole answer, every page of it: the first page, then each next one by its Link header
        (the same body posted again for /query), the records (or CSV lines) joined in order. Its
        headers are the first page's without the link; `pages` says how many were fetched. More than
        `max_pages` pages is a SignalsError (nothing is returned half)."""
        operation, request = self.prepare(name, arguments or {})
        first = self.fetch(name, arguments or {})
        if first.not_modified and first.body is None:
            return first
        body, pages, url = _copy(first.body), 1, first.next_page
        while url is not None:
            if pages >= max_pages:
                raise SignalsError(None, "Too many pages", f"{name}: the answer has more than {max_pages} pages "
                                   f"({first.total_rows} rows); ask with a larger limit or a narrower request.",
                                   sent=False, type=problems.TOO_MANY_PAGES)
            path = url if url.startswith("/") else httpx.URL(self.base_url).join(url).raw_path.decode()
            response = (self._send("POST", path, json_body=request) if operation.in_body
                        else self._send("GET", path))
            if response.status_code != 200:
                raise SignalsError.from_response(response)
            if isinstance(body, str):
                body += response.text.lstrip("\ufeff").split("\n", 1)[1] if "\n" in response.text else ""
            else:
                body[operation.records_field] += response.json().get(operation.records_field, [])
            pages += 1
            url = next_link(response.headers.get("link"))
        headers = {k: v for k, v in first.headers.items() if k != "link"}
        return Reply(body, 200, first.etag if pages == 1 else None, first.as_of, first.not_modified, headers, pages)

    def fetch(self, name: str, arguments: Mapping[str, Any] | None = None, *, etag: str | None = None) -> Reply:
        """The whole answer. `etag` asks for 304 when the answer still has that ETag (the body is
        then None unless this client remembers it); without it, the remembered ETag is sent."""
        operation, request = self.prepare(name, arguments or {})
        memory_key = json.dumps([operation.method, operation.path, request], sort_keys=True)
        with self._lock:
            remembered = self._remembered.get(memory_key)
        headers = {}
        if etag is not None:
            headers["If-None-Match"] = etag
        elif remembered is not None:
            headers["If-None-Match"] = remembered[0]
        if operation.in_body:
            response = self._send(operation.method, operation.path, json_body=request, headers=headers)
        else:
            response = self._send(operation.method, operation.path, params=request, headers=headers)
        if response.status_code == 304:
            sent = headers["If-None-Match"]
            body = remembered[1] if remembered is not None and remembered[0] == sent else None
            return Reply(_copy(body), 304, response.headers.get("etag", sent), _as_of(response), True,
                         dict(response.headers))
        if response.status_code != 200:
            raise SignalsError.from_response(response)
        is_json = response.headers.get("content-type", "").startswith("application/json")
        body = response.json() if is_json else response.text
        new_etag = response.headers.get("etag")
        if new_etag:
            with self._lock:
                self._remembered[memory_key] = (new_etag, _copy(body))
                self._remembered.move_to_end(memory_key)
                while len(self._remembered) > _MEMORY:
                    self._remembered.popitem(last=False)
        return Reply(body, 200, new_etag, _as_of(response), False, dict(response.headers))

    def manage(self, name: str, arguments: Mapping[str, Any] | None = None) -> Reply:
        """An account-management operation (`operations.management`): its path parameters taken
        from `arguments` by name, the rest sent as its body or query; None values left out. The
        answer's body is the JSON (None for 204). Never served from the client's memory."""
        operation = self.operations.management.get(name)
        if operation is None:
            raise SignalsError(None, "Unknown operation", f"There is no account operation {name!r}. Operations: "
                               + ", ".join(self.operations.management) + ".", sent=False,
                               type=problems.UNKNOWN_OPERATION)
        given = {k: v for k, v in (arguments or {}).items() if v is not None}
        try:
            path = operation.url_path(given)
        except KeyError as exc:
            raise SignalsError.invalid([FieldError(str(exc.args[0]), "is required")]) from None
        rest = {k: v for k, v in given.items() if k not in operation.path_params}
        reads = operation.method in _READS
        if operation.in_body:
            response = self._send(operation.method, path, json_body=rest, safe=reads)
        else:
            response = self._send(operation.method, path, params={k: query_text(v) for k, v in rest.items()}, safe=reads)
        if response.status_code not in (200, 201, 202, 204):
            raise SignalsError.from_response(response)
        body = response.json() if response.status_code != 204 and response.content else None
        return Reply(body, response.status_code, None, None, False, dict(response.headers))

    def _send(self, method: str, path: str, *, params: Mapping[str, str] | None = None, json_body: Any = None,
              headers: Mapping[str, str] | None = None, authorised: bool = True, safe: bool = True) -> httpx.Response:
        """One request, retried as the module docstring says. Returns any final response (also an
        error's); raises SignalsError when there is none, or when retrying 429/503 gave up. A
        request that is not `safe` to repeat is retried only when it never left (`_NOT_SENT`)."""
        all_headers = dict(headers or {})
        if authorised and self._api_key:
            all_headers["Authorization"] = f"Bearer {self._api_key}"
        content = json.dumps(json_body).encode() if json_body is not None else None
        if content is not None:
            all_headers["Content-Type"] = "application/json"

        def attempt() -> httpx.Response:
            response = self._http.request(method, path, params=params, content=content, headers=all_headers)
            if response.status_code in (429, 503) and not _budget_spent(response):
                raise _Transient(response)
            return response

        retryable = _retryable if safe else _retryable_unsent
        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(retryable), wait=self._wait,
                                     stop=self._stop, sleep=self._sleep, reraise=True)
        try:
            return retrying(attempt)
        except _Transient as exc:
            raise SignalsError.from_response(exc.response) from None
        except httpx.TransportError as exc:
            raise SignalsError(None, "Cannot reach the Signals API",
                               f"{method} {self.base_url}{path}: {type(exc).__name__}: {exc}") from exc

    def _wait(self, state: tenacity.RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Transient) and failure.retry_after is not None:
            return float(failure.retry_after)
        return self._backoff(state)

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Transient) and failure.retry_after is not None:
            # Retry-After is a promise: wait for it while the waits stay within the budget.
            if state.idle_for + state.upcoming_sleep > self.max_rate_limit_wait:
                return True
            if failure.response.status_code == 429:
                return state.attempt_number >= _MOST_ATTEMPTS
        return state.attempt_number > self.max_retries

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SignalsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def endpoint_method(operation: Operation) -> Callable[..., Any]:
    """The client's method of a data operation (`SignalsClient.<operationId>`): its documented
    parameters as arguments, None for the API's default (the leading required ones also by
    position), then `frame` (the records as a polars DataFrame, `to_frame`) and `all_pages` (every
    page of the answer, `fetch_all`). Arguments it does not take are a TypeError, as for any method."""
    positional = sum(1 for _ in itertools.takewhile(lambda p: p.required, operation.params))
    kinds = [inspect.Parameter.POSITIONAL_OR_KEYWORD] * positional + \
        [inspect.Parameter.KEYWORD_ONLY] * (len(operation.params) - positional)
    signature = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY),
        *(inspect.Parameter(p.name, kind, default=None) for p, kind in zip(operation.params, kinds, strict=True)),
        inspect.Parameter("frame", inspect.Parameter.KEYWORD_ONLY, default=False),
        inspect.Parameter("all_pages", inspect.Parameter.KEYWORD_ONLY, default=False),
    ])

    def method(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        client, frame, all_pages = arguments.pop("self"), arguments.pop("frame"), arguments.pop("all_pages")
        return client.call(operation.name, arguments, frame=frame, all_pages=all_pages)

    method.__name__ = method.__qualname__ = operation.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__doc__ = (f"{operation.summary or operation.name} ({operation.method} {operation.path}): the answer's "
                      "JSON body as a dict" + (" (CSV text for format=csv)" if operation.chooses_format else "")
                      + ", or with frame=True its records as a polars DataFrame; with all_pages=True, every page "
                      "of it.")
    return method


class _Transient(Exception):
    """A 429 or 503 answer, raised inside the retry loop so that tenacity retries it."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response
        self.retry_after = _retry_after(response)


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, (_Transient, *_RETRYABLE_TRANSPORT))


def _retryable_unsent(exc: BaseException) -> bool:
    """429 and 503 are refusals before acting; otherwise only a request that never left."""
    return isinstance(exc, (_Transient, *_NOT_SENT))


def _budget_spent(response: httpx.Response) -> bool:
    """A refusal by the privacy budget: waiting minutes does not help (it renews with the month)."""
    if response.status_code != 429 or "problem+json" not in response.headers.get("content-type", ""):
        return False
    try:
        problem = response.json()
    except ValueError:
        return False
    return isinstance(problem, dict) and privacy_budget.is_refusal(problem)


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after", "").strip()
    return int(value) if value.isdigit() else None


def _as_of(response: httpx.Response) -> dt.datetime | None:
    value = response.headers.get("x-signals-as-of")
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _copy(body: Any) -> Any:
    return json.loads(json.dumps(body)) if isinstance(body, (dict, list)) else body


def forwarded_chain(peer: str | None, incoming: str | None, trusted: Sequence[Network]) -> str | None:
    """The X-Forwarded-For a consumer sends the API for one caller: the caller's TCP peer address;
    or, when that peer is one of the `trusted` proxies (SIGNALS_TRUSTED_PROXIES), the chain the
    proxy sent (`incoming`) with the peer appended, as a proxy passes it on. From anyone else an
    incoming X-Forwarded-For is ignored (a client can write any it likes). A hop that is not an IP
    address becomes "unknown"; at most FORWARDED_HOPS hops are kept, the rightmost. None when the
    peer is not an IP address (a Unix socket)."""
    address = _address(peer or "")
    if address is None:
        return None
    if not any(address in network for network in trusted):
        return str(address)
    hops = [hop for hop in (incoming or "").split(",") if hop.strip()]
    kept = [str(a) if (a := _address(hop)) is not None else "unknown" for hop in hops[-(FORWARDED_HOPS - 1):]]
    return ", ".join([*kept, str(address)])


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address from a hop as proxies write them: '203.0.113.7', '203.0.113.7:4711',
    '2001:db8::1', '[2001:db8::1]:4711'; None for anything else."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def key_fingerprint(key: str | None) -> str:
    """A short, non-reversible name for a key (for cache keys and logs: never the key itself)."""
    return hashlib.sha256((key or "").encode()).hexdigest()[:12]


def to_frame(operation: Operation, body: Any) -> Any:
    """The records of an answer as a polars DataFrame: integers Int64, numbers Float64,
    timestamps Datetime (UTC), text String, objects (compare's `previous`, ...) structs. CSV text
    (from /query) is read as CSV."""
    import polars as pl

    if isinstance(body, str):
        return pl.read_csv(io.StringIO(body.lstrip("\ufeff")))
    records = body.get(operation.records_field, []) if operation.records_field else []
    props = operation.record_schema.get("properties", {})
    columns = list(records[0]) if records else list(operation.record_schema.get("required") or props)
    types = {"integer": pl.Int64, "number": pl.Float64, "object": None}  # objects: structs, their types inferred
    schema = {c: types.get(props.get(c, {}).get("type"), pl.String) for c in columns}
    frame = pl.DataFrame([pl.Series(c, [r.get(c) for r in records], dtype=schema[c]) for c in columns])
    stamps = [c for c in columns if props.get(c, {}).get("format") == "date-time"]
    return frame.with_columns(pl.col(c).str.to_datetime(time_zone="UTC") for c in stamps) if stamps else frame
