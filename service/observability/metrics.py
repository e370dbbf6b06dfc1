"""The service's Prometheus metrics (prometheus_client), one definition each, for every process.

Under gunicorn several processes count at once: gunicorn.conf.py points prometheus_client's
multiprocess mode at a directory (`SIGNALS_METRICS_DIR`, set as PROMETHEUS_MULTIPROC_DIR before
anything imports prometheus_client), every worker and the precompute and alert processes of the
machine write their values there, and the web process's master serves the sum of them on
`SIGNALS_METRICS_PORT` (a port of its own, not the API's: metrics are for the operator, never for
API keys' holders). docs/operations.md lists them and how to scrape them. Without that
environment (tests in one process, a command run by hand) the values live in this process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import Counter, Gauge, Histogram

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)

REQUESTS = Counter("signals_requests", "API requests answered, by endpoint (route) and HTTP status",
                   ["endpoint", "status"])
REQUEST_SECONDS = Histogram("signals_request_seconds", "Seconds to answer an API request, by endpoint (route)",
                            ["endpoint"], buckets=_SECONDS)
CACHE_ANSWERS = Counter("signals_cache_answers",
                        "Data answers by how they were served: hit (cached), miss (computed, or waited for "
                        "another's computation), stale (the previous hour's answer while the current computes)",
                        ["endpoint", "outcome"])
COMPUTATIONS = Counter("signals_computations",
                       "Answers computed by the engine, by endpoint and origin (request, precompute)",
                       ["endpoint", "origin"])
COMPUTE_SECONDS = Histogram("signals_compute_seconds", "Seconds the engine took to compute an answer, by endpoint",
                            ["endpoint"], buckets=_SECONDS)
STOPPED = Counter("signals_computations_stopped",
                  "Computations stopped at their work limit (SIGNALS_COMPUTE_DEADLINE_SECONDS of the machine's "
                  "CPU time), by endpoint", ["endpoint"])
PRIVACY_REFUSALS = Counter("signals_privacy_budget_refusals",
                           "Answers refused because they would pass the subscription's privacy budget "
                           "(429 privacy-budget), by endpoint", ["endpoint"])
RUNNING = Gauge("signals_computations_running", "Computations holding a compute slot now",
                multiprocess_mode="livesum")
QUEUED = Gauge("signals_computations_queued", "Computations waiting for a compute slot now",
               multiprocess_mode="livesum")
SHED = Counter("signals_requests_shed",
               "Requests answered 503 with Retry-After at once, because their answer would not be ready "
               "within their wait (its computation goes on, for the retry)", ["endpoint"])
PRECOMPUTED = Counter("signals_precomputed", "Answers the precompute process made ready, by outcome "
                      "(computed, cached: already there, failed)", ["outcome"])
PRECOMPUTE_LAG = Gauge("signals_precompute_lag_seconds",
                       "Seconds from the hour turn (or a landing) to the end of the last precompute round",
                       multiprocess_mode="max")
REDIS_DEGRADED = Gauge("signals_redis_degraded", "1 while a web worker serves without Redis (per-process cache "
                       "and limits), else 0", multiprocess_mode="max")
WEBHOOK_DELIVERIES = Counter("signals_webhook_deliveries", "Webhook delivery attempts, by outcome", ["outcome"])
LANDINGS = Counter("signals_landings", "Data landings (ingest, demo), by outcome", ["outcome"])

# The event collector and its lander (service/collector/).
COLLECTED = Counter("signals_collector_events",
                    "Events posted to the collector, by outcome: accepted (durably appended), rejected (with a "
                    "reason), duplicate (an id the collector had already accepted)", ["outcome"])
COLLECTOR_REQUESTS = Counter("signals_collector_requests", "Requests the collector answered, by HTTP status",
                             ["status"])
COLLECTOR_SECONDS = Histogram("signals_collector_seconds", "Seconds from a post's arrival to its answer "
                              "(202 only after the append is on disk)", buckets=_SECONDS)
LANDER_EVENTS = Counter("signals_lander_events", "Events the lander handled, by outcome: landed, duplicate "
                        "(already landed, or repeated in the log: dropped)", ["outcome"])
BACKLOG = Gauge("signals_events_backlog", "Events appended to the collector's log and not yet landed "
                "(at the lander's last round)", multiprocess_mode="max")
LAG = Gauge("signals_lander_lag_seconds", "Seconds from the newest landed event's ts to the clock, at the "
            "lander's last round", multiprocess_mode="max")
LANDING_SECONDS = Histogram("signals_lander_landing_seconds", "Seconds a landing round of the lander took",
                            buckets=_SECONDS)


@contextlib.contextmanager
def gauge_up(gauge: Gauge) -> Iterator[None]:
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def multiprocess_directory() -> Path | None:
    """Where this process's values go when several processes count (None: in this process)."""
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(value) if value else None
