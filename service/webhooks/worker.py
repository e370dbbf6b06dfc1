"""The worker process (`python -m service worker`): evaluates every enabled webhook each
SIGNALS_WORKER_INTERVAL_SECONDS and as soon as new data lands (the store's generation changes),
and makes every delivery attempt that is due, from the outbox in the accounts database.

Any number of workers may run, on any number of machines sharing the accounts database: the
cooldown and each delivery's lease are claimed atomically there (webhook_store.py).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from service.clock import Clock, SystemClock
from service.engine.interface import EventSource, Snapshot
from service.engine.interface import QueryEngine as Engine
from service.privacy.budget import PrivacyBudget
from service.webhooks import delivery
from service.webhooks.evaluate import RoundReport, TrendingMemo, evaluate
from service.webhooks.webhook_store import WebhookStore

log = logging.getLogger("signals.webhooks")

DELIVERY_THREADS = 8
BATCH = 64
TICK_SECONDS = 1.0


class Worker:
    def __init__(self, store: EventSource[Snapshot], webhooks: WebhookStore, engine: Engine, *, clock: Clock | None = None,
                 interval_seconds: float = 60.0, allow_private: bool = False, threads: int = DELIVERY_THREADS,
                 timeout: float = delivery.sender.TIMEOUT_SECONDS, budget: PrivacyBudget | None = None) -> None:
        self.store = store
        self.webhooks = webhooks
        self.engine = engine
        self.clock: Clock = clock or SystemClock()
        self.interval_seconds = interval_seconds
        self.allow_private = allow_private
        self.threads = threads
        self.timeout = timeout
        self._evaluated_generation: int | None = None
        self._next_evaluation = 0.0
        self._memo = TrendingMemo()
        self.budget = budget  # alerts are charged to their subscription's privacy budget

    def evaluate(self) -> RoundReport:
        frames = self.store.snapshot()
        report = evaluate(self.webhooks, self.engine, frames, self.clock.now(), memo=self._memo, budget=self.budget)
        self._evaluated_generation = frames.generation
        log.info("evaluated %d webhooks (%d computations, %d cooling down, %d queued, %d refused by the privacy "
                 "budget) at as_of %s", report.webhooks, report.computations, report.cooling, report.queued,
                 report.refused, report.as_of)
        return report

    def deliver_due(self) -> int:
        """Claim and attempt every delivery due now (in parallel threads); the number attempted.
        Each thread claims its delivery right before sending it, so a lease (60 s) always covers
        its one attempt (at most 10 s), never a queue of them."""
        attempted = 0
        with ThreadPoolExecutor(self.threads) as pool:
            while True:
                due = self.webhooks.due(self.clock.now(), BATCH)
                if not due:
                    return attempted
                made = sum(pool.map(self._claim_and_attempt, due))
                if not made:  # all taken by other workers meanwhile
                    return attempted
                attempted += made

    def _claim_and_attempt(self, delivery_id: str) -> bool:
        claimed = self.webhooks.claim(delivery_id, self.clock.now(), delivery.LEASE)
        if claimed is None:
            return False
        try:
            if not claimed.enabled:  # disabled (by its owner, or by a 410) since it was queued
                delivery.give_up(self.webhooks, claimed, self.clock, "the webhook is disabled")
            else:
                delivery.attempt(self.webhooks, claimed, self.clock, allow_private=self.allow_private,
                                 timeout=self.timeout)
        except Exception:  # one broken delivery must not stop the others; its lease runs out
            log.exception("delivery %s failed unexpectedly", claimed.id)
        return True

    def run_once(self) -> RoundReport:
        report = self.evaluate()
        self.deliver_due()
        return report

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                generation = self.store.snapshot().generation
                if time.monotonic() >= self._next_evaluation or generation != self._evaluated_generation:
                    self._next_evaluation = time.monotonic() + self.interval_seconds
                    self.evaluate()
                self.deliver_due()
            except Exception:  # the database or the data may be briefly unavailable: retry next tick
                log.exception("worker round failed; retrying")
            stop.wait(TICK_SECONDS)
