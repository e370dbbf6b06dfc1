"""Every API request counted and timed (service/observability/metrics.py), by route and status."""

from __future__ import annotations

import time

import falcon

from cache import Gate
from service.observability import metrics


class MetricsMiddleware:
    """First in the chain: it sees every answer, refusals included. The label is the route
    template (a bounded set), never the URL."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        started = getattr(req.context, "started", None)
        route = req.uri_template or "unmatched"
        status = resp.status if isinstance(resp.status, int) else int(str(resp.status)[:3])
        metrics.REQUESTS.labels(route, str(status)).inc()
        if started is not None:
            metrics.REQUEST_SECONDS.labels(route).observe(time.perf_counter() - started)
        metrics.REDIS_DEGRADED.set(1 if getattr(self._gate, "degraded", False) else 0)
