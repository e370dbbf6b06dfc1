"""One delivery attempt: sign (Standard Webhooks, the `standardwebhooks` package), check the URL
again, and POST to an address that was checked (the URL's host rewritten to it; Host header and TLS
SNI/certificate check keep the name), never following a redirect, within 10 seconds."""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import ssl
import time

import httpx
from standardwebhooks.webhooks import Webhook

from service.webhooks import ssrf

TIMEOUT_SECONDS = 10.0
USER_AGENT = "Signals-Webhooks/1.0"


@dataclasses.dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str | None
    duration_ms: int

    @property
    def succeeded(self) -> bool:
        return self.error is None and self.status_code is not None and 200 <= self.status_code < 300


def signed_headers(secret: str, msg_id: str, at: dt.datetime, body: str) -> dict[str, str]:
    timestamp = at.astimezone(dt.UTC)
    signature = Webhook(secret).sign(msg_id, timestamp, body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def _authority(address: ssrf.Address, port: int) -> str:
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    return f"{host}:{port}"


def send(url: str, body: str, headers: dict[str, str], *, allow_private: bool,
         timeout: float = TIMEOUT_SECONDS, verify: ssl.SSLContext | bool = True) -> Outcome:
    """POST `body`; `verify` is the TLS verification (the system's CAs; tests pass their own)."""
    started = time.monotonic()

    def elapsed() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        target = ssrf.check(url, allow_private=allow_private)
    except ssrf.UrlRefused as exc:
        return Outcome(None, f"refused: the URL {exc}", elapsed())
    address = target.addresses[0]
    default_port = 443 if target.scheme == "https" else 80
    host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
    request_url = f"{target.scheme}://{_authority(address, target.port)}{target.path}"
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False,
                          verify=verify) as client:
            request = client.build_request("POST", request_url, content=body.encode(),
                                           headers={**headers, "host": host_header}, extensions=extensions)
            deadline = started + timeout
            response = client.send(request, stream=True)
            try:
                # Read at most a little of the answer, within the same overall deadline.
                for _ in response.iter_bytes(4096):
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the response took longer than the timeout")
                    break
            finally:
                response.close()
    except httpx.TimeoutException:
        return Outcome(None, f"timeout: no complete answer within {timeout:g} s", elapsed())
    except httpx.HTTPError as exc:
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:500], elapsed())
    if time.monotonic() - started > timeout:
        return Outcome(response.status_code, f"timeout: the answer took longer than {timeout:g} s", elapsed())
    error = None
    if 300 <= response.status_code < 400:
        error = f"redirect ({response.status_code}) not followed"
    elif not 200 <= response.status_code < 300:
        error = f"HTTP {response.status_code}"
    return Outcome(response.status_code, error, elapsed())
