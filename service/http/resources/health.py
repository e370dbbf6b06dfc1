"""Liveness (/healthz: the process answers) and readiness (/readyz: data loaded, accounts DB up)."""

from __future__ import annotations

import json
import logging

import falcon

from cache import Gate
from service.accounts import AccountStore
from service.engine.interface import EventSource

log = logging.getLogger("signals.health")


class HealthResource:
    auth_required = False

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.data = b'{"status":"ok"}'


class ReadinessResource:
    auth_required = False

    def __init__(self, store: EventSource, accounts: AccountStore, gate: Gate) -> None:
        self._store = store
        self._accounts = accounts
        self._gate = gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        checks: dict[str, dict] = {}
        try:
            frames = self._store.snapshot()
            # No row counts: exact numbers must not leave the service outside the privacy stage.
            checks["data"] = {"ok": True, "generation": frames.generation,
                              "loaded": frames.last_event is not None}
        except Exception as exc:  # readiness reports every failure instead of raising
            log.warning("readiness: data not loaded: %s", exc)
            checks["data"] = {"ok": False, "error": type(exc).__name__}
        checks["accounts"] = {"ok": self._accounts.ping()}
        try:
            cache_status = self._gate.status()
        except Exception as exc:  # a failing status probe is itself the report
            cache_status = {"ok": False, "degraded": True, "error": type(exc).__name__}
        # Without Redis the API still answers (per-process cache and limits): degraded, not unready.
        ready = checks["data"]["ok"] and checks["accounts"]["ok"]
        checks["cache"] = cache_status
        status = "not ready" if not ready else ("degraded" if cache_status.get("degraded") else "ready")
        resp.status = falcon.HTTP_200 if ready else falcon.HTTP_503
        resp.content_type = falcon.MEDIA_JSON
        resp.data = json.dumps({"status": status, "checks": checks}).encode()
