"""Making a delivery attempt and deciding what follows: success (2xx), a retry later (backoff with
jitter: about 5 s, 5 min, 30 min, 2 h, 5 h after the first attempt, then failed), or the end
(410 Gone disables the webhook). Every attempt is logged (store.finish)."""

from __future__ import annotations

import datetime as dt
import logging
import random

from service.clock import Clock
from service.observability import metrics
from service.webhooks import sender
from service.webhooks.webhook_store import FAILED, PENDING, SUCCEEDED, Claimed, WebhookStore

log = logging.getLogger("signals.webhooks")

# Delay before attempt n+1 after attempt n failed (n = 1..5); the 6th failure is final.
RETRY_DELAYS = (
    dt.timedelta(seconds=5), dt.timedelta(minutes=5), dt.timedelta(minutes=30), dt.timedelta(hours=2),
    dt.timedelta(hours=5),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
JITTER = 0.2  # +-20 %: retries of many deliveries that failed together do not arrive together
LEASE = dt.timedelta(seconds=60)  # > the 10 s timeout: a live worker never loses its lease


def retry_delay(attempts_made: int, rng: random.Random | None = None) -> dt.timedelta | None:
    """When to try again after `attempts_made` failed attempts; None = give up."""
    if attempts_made >= MAX_ATTEMPTS:
        return None
    base = RETRY_DELAYS[attempts_made - 1]
    return base * (1 + (rng or random).uniform(-JITTER, JITTER))


def attempt(store: WebhookStore, claimed: Claimed, clock: Clock, *, allow_private: bool,
            timeout: float = sender.TIMEOUT_SECONDS) -> sender.Outcome:
    started_at = clock.now()
    headers = sender.signed_headers(claimed.secret, claimed.id, started_at, claimed.payload)
    outcome = sender.send(claimed.url, claimed.payload, headers, allow_private=allow_private, timeout=timeout)
    made = claimed.attempts + 1
    disable = None
    if outcome.succeeded:
        status, label, next_at = SUCCEEDED, "succeeded", None
    elif outcome.status_code == 410:
        status, label, next_at = FAILED, "disabled", None
        disable = "the receiver answered 410 Gone"
    else:
        delay = retry_delay(made)
        if delay is None:
            status, label, next_at = FAILED, "failed", None
        else:
            status, label, next_at = PENDING, "retrying", clock.now() + delay
    store.finish(claimed, started_at=started_at, duration_ms=outcome.duration_ms, status_code=outcome.status_code,
                 error=outcome.error, outcome=label, status=status, next_attempt_at=next_at, disable_reason=disable)
    log.info("webhook delivery %s attempt %d to webhook %s: %s (%s, %d ms)", claimed.id, made, claimed.webhook_id,
             label, outcome.status_code or outcome.error, outcome.duration_ms)
    metrics.WEBHOOK_DELIVERIES.labels(label).inc()
    return outcome


def give_up(store: WebhookStore, claimed: Claimed, clock: Clock, reason: str) -> None:
    """End a delivery without sending it (logged as an attempt with no status)."""
    store.finish(claimed, started_at=clock.now(), duration_ms=0, status_code=None, error=reason, outcome="failed",
                 status=FAILED, next_attempt_at=None)
