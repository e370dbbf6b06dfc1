"""`python -m service worker [--once]`: the trending-alert worker (service/webhooks/worker.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

from service.cli import until_stopped
from service.observability.logging_setup import configure_logging
from service.settings import Settings

# The worker's machinery (accounts, engine, webhooks) is imported where used: the other commands
# (`python -m service data ingest`) need not load it.
if TYPE_CHECKING:
    from service.accounts import AccountStore
    from service.engine.interface import Backend
    from service.webhooks.worker import Worker


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "worker", help="evaluate webhooks and deliver trending alerts",
        description="Evaluate every enabled webhook each SIGNALS_WORKER_INTERVAL_SECONDS and when new data "
                    "lands, and deliver the alerts from the outbox in the accounts database.")
    parser.add_argument("--once", action="store_true",
                        help="evaluate once, make every delivery attempt that is due, and exit")
    parser.set_defaults(func=run, needs_secret=True)  # keys the noise


def build_worker(settings: Settings, chosen: Backend) -> tuple[Worker, AccountStore]:
    import cache
    from service import backend
    from service.accounts import AccountStore
    from service.app import privacy_params
    from service.privacy import Privacy
    from service.privacy.budget import PrivacyBudget
    from service.webhooks.webhook_store import WebhookStore
    from service.webhooks.worker import Worker

    accounts = AccountStore(settings.accounts_url)
    store, engine = backend.answering(settings, chosen, Privacy(settings.require_secret(), privacy_params(settings)))
    # Alerts are charged to their subscription's privacy budget, in the web's ledgers (Redis).
    gate = cache.connect(settings.redis_url, settings.redis_prefix)
    worker = Worker(store, WebhookStore(accounts.db_engine), engine,
                    interval_seconds=settings.worker_interval_seconds,
                    allow_private=settings.webhook_allow_private,
                    budget=PrivacyBudget(gate, settings.privacy_budget, settings.privacy_shared_budget))
    return worker, accounts


def run(args: argparse.Namespace, settings: Settings) -> int:
    configure_logging(settings.log_level)
    log = logging.getLogger("signals.webhooks")
    if settings.webhook_allow_private:
        log.warning("SIGNALS_WEBHOOK_ALLOW_PRIVATE: webhooks may reach http, loopback and private addresses "
                    "(development only)")
    from service import backend
    from service.store.unavailable import BackendUnavailable

    chosen = backend.choose(settings)
    worker, accounts = build_worker(settings, chosen)
    try:
        chosen.check(worker.store)
    except BackendUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        accounts.close()
        return 1
    try:
        if args.once:
            report = worker.run_once()
            print(f"evaluated {report.webhooks} webhooks: {report.computations} trending computations, "
                  f"{report.queued} alerts queued")
            return 0
        log.info("worker started (every %g s and on new data)", settings.worker_interval_seconds)
        until_stopped(worker.run)
        return 0
    finally:
        accounts.close()
