"""`python -m service lander [--once]`: land the collector's log into the store (service/collector/lander.py).

Its own process (the Procfile's `lander`), not a task of the alert worker: a landing holds the
store's writer lock and a core for as long as it reads, deduplicates and writes a round of events,
and it must keep doing so every SIGNALS_LANDER_INTERVAL_SECONDS whatever else is slow (a webhook
that times out, a trending computation); and it can be stopped, restarted or killed on its own
(a kill is safe at any moment: the next round lands what the killed one had not published).

With SIGNALS_COLLECTOR_LOG=amqp://... it also consumes the RabbitMQ quorum queue
(service/collector/carrier.py): each round lands the batches delivered so far, with the log's
files and the held events, and acknowledges them to the broker once their generation is published.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
import threading
import time
from typing import Any

from service.cli import until_stopped
from service.clock import SystemClock
from service.observability.logging_setup import configure_logging
from service.settings import Settings

log = logging.getLogger("signals.lander")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lander", help="land the events the collector appended (Procfile: lander)",
        description="Fold the collector's log into the store every SIGNALS_LANDER_INTERVAL_SECONDS: a new "
                    "generation (polars) or a published batch of inserts (ClickHouse), each event once.")
    parser.add_argument("--once", action="store_true", help="land what the log holds now, then exit")
    parser.add_argument("--include-open-hour", action="store_true",
                        help="with --once: land the running hour's events too (by default they wait for the hour "
                             "to end; answers count whole hours only, and a landing changes its dates' noise)")
    # It releases the closed hours with SIGNALS_PRIVACY_RELEASE (their noise is keyed by the secret).
    parser.set_defaults(func=run, needs_secret=lambda settings: settings.privacy_release)


_ATTEMPTED: list[dt.datetime] = []  # the last due hour a release ran for (one run per due hour)


def _release_closed_hours(settings: Settings, now: dt.datetime) -> None:
    """With SIGNALS_PRIVACY_RELEASE: release every hour closed SIGNALS_PRIVACY_RELEASE_DELAY_SECONDS
    ago and not yet released (service/release/: a released hour is never released again, so an
    event that lands later is kept in the store and left out of the release)."""
    from service.api.windows import floor_hour
    from service.release.schedule import release_now
    from service.release.storage import ReleaseStore

    due = floor_hour(now - dt.timedelta(seconds=settings.privacy_release_delay_seconds))
    through = ReleaseStore(settings.data_dir).through()
    if (through is not None and through >= due) or _ATTEMPTED[-1:] == [due]:
        return
    _ATTEMPTED[:] = [due]
    try:
        summary = release_now(settings, due + dt.timedelta(minutes=1))
    except Exception:  # the next round tries again: nothing half-released is ever shown
        log.exception("releasing the closed hours failed; the next round tries again")
        return
    log.info("released %d nodes through %s in %.2f s", summary.nodes, summary.through, summary.seconds)


def run(args: argparse.Namespace, settings: Settings) -> int:
    configure_logging(settings.log_level)
    from service import backend
    from service.collector import log as event_log
    from service.collector.index import LandedIndex
    from service.collector.lander import land_once
    from service.observability import metrics
    from service.store.unavailable import BackendUnavailable

    try:
        target = backend.choose(settings).landing_target()
    except BackendUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    clock = SystemClock()
    with target.lock():
        target.sweep()
        index = LandedIndex(settings.data_dir).load()
    event_log.remove_temporary(settings.data_dir)
    newest: list[dt.datetime | None] = [None]
    consumer = None
    if settings.collector_carried:
        from service.collector.carrier import Consumer

        consumer = Consumer(settings.collector_log, settings.collector_queue, settings.data_dir)
        if args.once:  # what the queue holds now: give its deliveries a moment to arrive
            consumer.wait(0.5, threading.Event())

    def one_round() -> bool:
        """One round; True when it stopped at its bound and more is waiting."""
        now = clock.now()
        carried = []
        if consumer is not None:
            try:
                carried = consumer.take()
            except Exception as exc:  # noqa: BLE001 (the held hours and the log's files land meanwhile)
                log.warning("RabbitMQ cannot be reached (%s %s): this round lands no queued batches",
                            type(exc).__name__, exc)
        landed = land_once(settings.data_dir, target, index, now=now,
                           hold_open_hour=not (args.once and args.include_open_hour), carried=carried)
        if consumer is not None:
            consumer.ack(landed.carried)  # after the generation is published: a kill before it redelivers them
        index.compact(now, settings.late_hours)
        metrics.LANDING_SECONDS.observe(landed.seconds)
        metrics.LANDER_EVENTS.labels("landed").inc(landed.landed)
        metrics.LANDER_EVENTS.labels("duplicate").inc(landed.duplicates)
        if landed.newest is not None and (newest[0] is None or landed.newest > newest[0]):
            newest[0] = landed.newest
        backlog, _age = event_log.backlog(settings.data_dir)
        backlog += sum(item.events for item in event_log.held(settings.data_dir))
        if consumer is not None:
            try:
                backlog += consumer.backlog()
            except Exception as exc:  # noqa: BLE001 (the round itself is done; the next one connects again)
                log.warning("the queue's depth is unknown: %s %s", type(exc).__name__, exc)
        metrics.BACKLOG.set(backlog)
        if newest[0] is not None:
            metrics.LAG.set(max(0.0, (now - newest[0]).total_seconds()))
        if landed.batches:
            log.info("landed %d events (%d duplicates dropped) from %d batches%s in %.2f s; %d events of the "
                     "running hour held; %d events wait", landed.landed, landed.duplicates, landed.batches,
                     f" as generation {landed.generation}" if landed.generation else "", landed.seconds,
                     landed.held, backlog)
        if settings.privacy_release and not landed.more:
            _release_closed_hours(settings, now)
        if args.once:
            print(f"landed {landed.landed} events, {landed.duplicates} duplicates dropped, from {landed.batches} "
                  f"batches" + (f"; data generation {landed.generation}" if landed.generation else "")
                  + (f"; {landed.held} events of the running hour held until it ends" if landed.held else ""))
        return landed.more or (consumer is not None and (consumer.full or (args.once and bool(landed.carried))))

    if args.once:
        while one_round():  # a backlog larger than one round's bound
            if consumer is not None:
                consumer.wait(0.5, threading.Event())
        return 0

    def loop(stop: threading.Event) -> None:
        log.info("lander started (every %g s)", settings.lander_interval_seconds)
        while not stop.is_set():
            started = time.monotonic()
            more = False
            try:
                more = one_round()
            except Exception:  # the next round tries again; what this one wrote was removed or is swept
                log.exception("a landing round failed; the next round tries again")
            if not more:  # a backlog past one round's bound goes on at once
                pause = max(0.0, settings.lander_interval_seconds - (time.monotonic() - started))
                if consumer is not None:
                    consumer.wait(pause, stop)  # heartbeats and deliveries meanwhile
                else:
                    stop.wait(pause)
        if consumer is not None:
            consumer.close()

    until_stopped(loop)
    return 0
