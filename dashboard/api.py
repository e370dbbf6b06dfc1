"""The dashboard's calls to the API: the shared client, one per viewer's key, and the failures
turned into sentences a person understands.

The key comes from the browser's session store with each callback and goes only into the
client's `Authorization` header; it is never put in a URL, a log line or an error message. The
viewer's address goes with every call in `X-Forwarded-For` (`caller`), so that the API's throttle
of failed authentications per address sees each viewer, not the dashboard's one address. The
parameters (allowed values, bounds, defaults) come from the API's served OpenAPI document, which
needs no key, so the controls are built from it (`operation`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from typing import Any

import cachetools
import flask

from connectors.client import Reply, SignalsClient, SignalsError, forwarded_chain, key_fingerprint
from connectors.operations import Operation, Operations
from dashboard.settings import DashboardSettings

_SETTINGS = DashboardSettings.from_env()
_DOCUMENT_SECONDS = 300  # the OpenAPI document is read again after this (a newer server's bounds)
_lock = threading.Lock()
# One client per key and viewer address (its remembered ETags make a page's reload a 304), for an
# hour at most.
_clients: cachetools.TTLCache[tuple[str, str | None], SignalsClient] = cachetools.TTLCache(maxsize=256, ttl=3600)
_document: tuple[float, Operations] | None = None


def api_url() -> str:
    return _SETTINGS.api_url


class _ViewerClient(SignalsClient):
    """The shared client for one viewer, reading the document this process already read
    (`operations`, kept a few minutes) instead of fetching it once per client."""

    @property
    def operations(self) -> Operations:
        return operations()


def caller() -> str | None:
    """The X-Forwarded-For naming the viewer of the request being served: its peer address, or the
    chain a proxy in SIGNALS_TRUSTED_PROXIES sent with the peer appended. None outside a request."""
    if not flask.has_request_context():
        return None
    request = flask.request
    return forwarded_chain(request.remote_addr, ",".join(request.headers.getlist("X-Forwarded-For")),
                           _SETTINGS.trusted_proxies)


def _client(key: str | None, forwarded_for: str | None) -> SignalsClient:
    # No waiting inside a page's callback: a 429 is shown with its Retry-After instead.
    name = (key_fingerprint(key), forwarded_for)
    with _lock:
        client = _clients.get(name)
        if client is None:
            client = _ViewerClient(_SETTINGS.api_url, key or "", timeout=30.0, connect_timeout=3.0, max_retries=1,
                                   max_rate_limit_wait=0.0, backoff=0.2, forwarded_for=forwarded_for)
            _clients[name] = client
        return client


def operations() -> Operations:
    """The API's operations from its served document (no key needed), kept a few minutes."""
    global _document
    with _lock:
        if _document is not None and time.monotonic() - _document[0] < _DOCUMENT_SECONDS:
            return _document[1]
    reader = SignalsClient(_SETTINGS.api_url, "", connect_timeout=3.0, max_retries=1, backoff=0.2)
    try:
        ops = reader.operations
    finally:
        reader.close()
    with _lock:
        _document = (time.monotonic(), ops)
    return ops


def operation(name: str) -> Operation:
    """A data operation, or an account-management one (the webhooks' forms are built from these)."""
    ops = operations()
    return ops[name] if name in ops else ops.management[name]


def plan_label(plan: str | None) -> str | None:
    """A plan's name as the API writes it (the document's `x-plans`), for a slug such as an
    operation's `min_tier`; the slug itself when the document does not list it or cannot be read."""
    try:
        return operations().plan_label(plan)
    except SignalsError:
        return plan


def interval_words() -> str:
    """The intervals' level as the API's document gives it ("90 %"); "" when it cannot be read."""
    try:
        return next((op.interval_words for op in operations().values()), "")
    except SignalsError:
        return ""


def min_plan_label(name: str) -> str | None:
    """The label of the lowest plan that may call operation `name`; None when the document does
    not say (or cannot be read)."""
    try:
        return plan_label(operation(name).min_tier)
    except (SignalsError, KeyError):
        return None


def fetch(key: str | None, name: str, arguments: Mapping[str, Any] | None = None) -> Reply:
    """The whole answer (body, as_of, headers); SignalsError on any failure. Webhook operations
    (`list_webhooks`, `create_webhook`, ...) take their path parameters among the arguments. The
    call names the viewer of the current request to the API (`caller`)."""
    client = _client(key, caller())
    if name in client.operations.management:
        return client.manage(name, dict(arguments or {}))
    return client.fetch(name, dict(arguments or {}))


def account(key: str) -> Reply:
    """Sign-in's check of a key, with a client of its own that is closed afterwards: wrong keys
    (a burst of them, perhaps) never take the place of viewers' clients in `_clients`."""
    client = _ViewerClient(_SETTINGS.api_url, key, timeout=30.0, connect_timeout=3.0, max_retries=1,
                           max_rate_limit_wait=0.0, backoff=0.2, forwarded_for=caller())
    try:
        return client.fetch("account", {})
    finally:
        client.close()


@dataclasses.dataclass(frozen=True)
class Usage:
    """The rate-limit use reported by the API's headers on an answer."""

    limit: int | None
    remaining: int | None
    reset: int | None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Usage:
        lower = {k.lower(): v for k, v in headers.items()}

        def number(name: str) -> int | None:
            value = lower.get(name, "").strip()
            return int(value) if value.isdigit() else None

        return cls(number("x-ratelimit-limit"), number("x-ratelimit-remaining"), number("x-ratelimit-reset"))

    def as_dict(self) -> dict[str, int | None]:
        return dataclasses.asdict(self)


def address_blocked(error: SignalsError) -> bool:
    """A 429 for the address's failed authentications (service/http/middleware/rate_limit.py
    `refuse_blocked_address`), not for the plan's requests per minute."""
    if error.status != 429:
        return False
    said = " ".join(str(error.problem.get(field) or "") for field in ("type", "title", "detail")) + error.detail
    return "failed authentication" in said.lower()


def explain(error: SignalsError, *, needed_plan: str | None = None) -> str:
    """A sentence for the viewer; never a traceback, never the key. `needed_plan`: the label of
    the plan a 403 asks for (`plan_label`)."""
    if error.status is None and error.sent:
        return (f"The Signals API is not answering at {_SETTINGS.api_url}. It may be restarting; "
                "try again in a minute.")
    if error.status == 401:
        return "Your key was not accepted (it may have been revoked or have expired). Please sign in again."
    if error.status == 403:
        head = f"This page needs the {needed_plan} plan or higher. " if needed_plan else \
            "Your plan does not include this. "
        return head + (error.detail or "")
    if error.status == 429:
        wait = error.retry_after
        when = (f"Try again in {wait} second{'s' if wait != 1 else ''} "
                f"(after {time.strftime('%H:%M:%S', time.gmtime(time.time() + wait))} UTC).") if wait is not None \
            else "Try again in a minute."
        if address_blocked(error):
            return ("That key was not accepted, and too many keys that were not accepted came from your network "
                    "address recently, so the Signals API refuses unknown keys from it for a while. This is not your "
                    f"plan's limit (a valid key is still served). Check the key. {when}")
        return f"Too many requests for your plan's limit. {when} {error.detail or ''}".strip()
    if error.status in (404, 409):  # a webhook that is gone; the webhook limit (the API's words)
        return error.detail
    if error.status in (400, 422):
        fields = "; ".join(f"{e.get('name')}: {e.get('reason')}" for e in error.errors if isinstance(e, dict))
        return f"The API refused these settings: {fields or error.detail}"
    if error.status == 503:
        wait = f" Try again in {error.retry_after} seconds." if error.retry_after else " Try again shortly."
        return f"The Signals API is busy or unavailable ({error.title}).{wait}"
    return f"The Signals API answered {error.status}: {error.detail}"
