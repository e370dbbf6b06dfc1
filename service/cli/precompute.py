"""`python -m service precompute [--once]`: ready before it is asked (service/answers/precompute.py)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from service.cli import until_stopped
from service.observability.logging_setup import configure_logging
from service.settings import Settings

if TYPE_CHECKING:
    from service.answers.precompute import Precompute
    from service.engine.interface import Backend, EventSource


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "precompute", help="compute the most asked answers when the hour turns or data lands",
        description="When the hour turns or a new data generation lands, compute the answers asked most "
                    "recently (SIGNALS_PRECOMPUTE_TOP, most asked first) for the new as_of, one at a time at a "
                    "lower priority, so their askers find them in the cache. Needs REDIS_URL (the counts "
                    "and the cache the web workers share).")
    parser.add_argument("--once", action="store_true", help="precompute for the current as_of once and exit")
    parser.set_defaults(func=run, needs_secret=True)  # keys the noise


def build(settings: Settings, chosen: Backend, store: EventSource) -> Precompute:
    import cache
    from service import backend
    from service.answers.precompute import Precompute
    from service.app import privacy_params, signals_resources
    from service.clock import SystemClock
    from service.privacy import Privacy

    answering_store, engine = backend.answering(settings, chosen, Privacy(settings.require_secret(), privacy_params(settings)))
    store = answering_store if settings.privacy_release else store
    gate = cache.connect(settings.redis_url, settings.redis_prefix, settings.redis_spin_microseconds / 1e6,
                         settings.process_cache_mb << 20)
    clock = SystemClock()
    resources = signals_resources(settings, engine, store, clock, gate, background=True)
    return Precompute(store, resources, gate, clock, top=settings.precompute_top)


def run(args: argparse.Namespace, settings: Settings) -> int:
    configure_logging(settings.log_level)
    log = logging.getLogger("signals.precompute")
    if not settings.redis_url:
        print("warning: REDIS_URL is not set: precompute sees no requests and shares no cache with the web "
              "process, so it has nothing to do", file=sys.stderr)
    os.nice(10)  # requests first
    from service import backend
    from service.store.unavailable import BackendUnavailable

    chosen = backend.choose(settings)
    store = chosen.event_store()
    precompute = build(settings, chosen, store)
    try:
        chosen.check(store)
    except BackendUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.once:
        report = precompute.run_round()
        print(f"precomputed for {report.as_of.isoformat()} (generation {report.generation}): {report.computed} "
              f"computed, {report.cached} already cached, {report.failed} failed, of {report.asked} asked, "
              f"in {report.seconds:.1f} s")
        return 0
    log.info("precompute started (top %d requests, on each hour turn and landing)", settings.precompute_top)
    until_stopped(precompute.run)
    return 0
