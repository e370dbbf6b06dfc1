"""Every API request counted and timed (service/observability/metrics.py), by route and status."""

from __future__ import annotations

import time
from typing import Any

import falcon

from cache import Gate
from service.observability import metrics


class MetricsMiddleware:
    """First in the chain: it sees every answer, refusals included. The label is the route
    template (a bounded set), never the URL."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self._degraded: int | None = None  # what this process last wrote to the gauge
        # (route, status) -> its request counter and its route's histogram. Bounded: routes are
        # the app's templates (and "unmatched"), statuses the few the app answers.
        self._series: dict[tuple[str, int], tuple[Any, Any]] = {}

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        started = getattr(req.context, "started", None)
        route = req.uri_template or "unmatched"
        status = resp.status if isinstance(resp.status, int) else int(str(resp.status)[:3])
        counted = self._series.get((route, status))
        if counted is None:  # labels() validates and looks up under a lock: once per route and status
            counted = self._series[(route, status)] = (metrics.REQUESTS.labels(route, str(status)),
                                                       metrics.REQUEST_SECONDS.labels(route))
        counted[0].inc()
        if started is not None:
            counted[1].observe(time.perf_counter() - started)
        degraded = 1 if getattr(self._gate, "degraded", False) else 0
        if degraded != self._degraded:  # written when it changes: under gunicorn each write is a locked mmap write
            metrics.REDIS_DEGRADED.set(degraded)
            self._degraded = degraded
