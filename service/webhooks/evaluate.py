"""One evaluation round: for every enabled webhook, the trending values whose growth exceeds its
threshold, computed by the same engine and privacy stage as GET /trending (same `as_of`, same
snapshot, the endpoint's maximum limit), so an alert's numbers are the ones /trending shows.

Webhooks that share (window, dimension, metric, min_baseline) share one trending computation: a
round costs at most one computation per distinct combination, whatever the number of webhooks.

An alert shows its subscription the trending answer's numbers, so it is charged to the
subscription's privacy budget as GET /trending's same answer is (service/privacy/budget.py: the
same answer name, so a subscription that also asks /trending pays once); an alert the budget
refuses is not sent (counted in the round's report and logged).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import polars as pl

from service.api.endpoint_params import TRENDING_LIMIT
from service.api.windows import compute_as_of
from service.engine import requests as rq
from service.engine.interface import QueryEngine as Engine
from service.engine.interface import Snapshot
from service.privacy.budget import PrivacyBudget, answer_name
from service.privacy.charges import charging
from service.webhooks.webhook_store import WebhookStore

log = logging.getLogger("signals.webhooks")

SOURCE = "signals"
EVENT = "trending_alert"
CLAIM_BATCH = 500  # cooldown claims per transaction (short enough not to hold the writer lock long)
# GET /trending's largest limit: every alerted value is one /trending can show.
assert TRENDING_LIMIT.maximum is not None
ALERT_LIMIT = int(TRENDING_LIMIT.maximum)


def triggered_at(moment: dt.datetime) -> str:
    """ISO 8601 UTC with milliseconds: 2026-03-10T12:00:00.123Z."""
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def payload(webhook_id: str, window: str, dimension: str, threshold_pct: float, at: dt.datetime,
            alerts_json: str) -> str:
    """The spec's trending_alert, exactly its fields. `alerts_json` is the records as polars writes
    them for /trending, so the numbers are byte for byte the endpoint's."""
    head = {"source": SOURCE, "event": EVENT, "webhook_id": webhook_id, "window": window, "dimension": dimension,
            "threshold_pct": threshold_pct, "triggered_at": triggered_at(at)}
    parts = [f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False)}" for k, v in head.items()]
    parts.append(f'"alerts":{alerts_json}')
    return "{" + ",".join(parts) + "}"


@dataclasses.dataclass
class RoundReport:
    as_of: dt.datetime | None = None
    webhooks: int = 0
    computations: int = 0
    cooling: int = 0
    with_alerts: int = 0
    refused: int = 0  # alerts not sent: their subscription's privacy budget was spent
    queued: int = 0
    seconds_computing: float = 0.0


def trending_request(window: str, dimension: str, metric: str, min_baseline: float) -> rq.Trending:
    return rq.Trending(window=window, dimension=dimension, metric=metric, limit=ALERT_LIMIT,
                       min_baseline=float(min_baseline))


class TrendingMemo:
    """Trending answers of the current (data generation, as_of): the engine's answer, noise
    included, is fixed by those two, so rounds within the same hour on the same data compute
    nothing again."""

    def __init__(self) -> None:
        self._at: tuple[int, dt.datetime] | None = None
        self._frames: dict[tuple, tuple[pl.DataFrame, int]] = {}

    def get(self, generation: int, as_of: dt.datetime, key: tuple, compute: Any) -> tuple[pl.DataFrame, int, bool]:
        """The answer, what it costs (micro-epsilon, privacy/charges.py), and whether it was computed now."""
        if self._at != (generation, as_of):
            self._at, self._frames = (generation, as_of), {}
        if key in self._frames:
            return *self._frames[key], False
        with charging() as charges:
            frame = compute()
        self._frames[key] = (frame, charges.micro)
        return frame, charges.micro, True


def evaluate(store: WebhookStore, engine: Engine, frames: Snapshot, now: dt.datetime,
             hooks: Sequence[Any] | None = None, memo: TrendingMemo | None = None,
             budget: PrivacyBudget | None = None) -> RoundReport:
    import time

    report = RoundReport()
    if frames.last_event is None:
        return report
    as_of = compute_as_of(now, frames.last_event)
    report.as_of = as_of
    hooks = store.enabled_webhooks() if hooks is None else hooks
    report.webhooks = len(hooks)
    groups: dict[tuple, list[Any]] = defaultdict(list)
    for hook in hooks:
        if hook.cooldown_until is not None and hook.cooldown_until > now:
            report.cooling += 1
            continue
        groups[(hook.window, hook.dimension, hook.metric, float(hook.min_baseline))].append(hook)
    for key, members in groups.items():
        started = time.perf_counter()
        memo = memo if memo is not None else TrendingMemo()
        frame, charge, computed = memo.get(frames.generation, as_of, key,
                                           lambda k=key: engine.trending(frames, as_of, trending_request(*k)))
        report.computations += computed
        report.seconds_computing += time.perf_counter() - started
        if frame.is_empty():
            continue
        growth = frame["growth_pct"]
        claims = []
        answer = answer_name("trending", trending_request(*key), as_of, f"g{frames.generation}")
        for hook in members:
            mask = growth > hook.threshold_pct
            if not mask.any():
                continue
            if budget is not None and budget.enabled and not budget.charge(hook.subscription_id, answer, charge,
                                                                           now).allowed:
                report.refused += 1
                log.warning("webhook %s: alert not sent, its subscription's privacy budget is spent", hook.id)
                continue
            alerts_json = frame.filter(pl.Series(mask)).write_json()
            claims.append((hook, lambda _id, h=hook, a=alerts_json: payload(h.id, h.window, h.dimension,
                                                                           h.threshold_pct, now, a)))
        report.with_alerts += len(claims)
        for start in range(0, len(claims), CLAIM_BATCH):
            report.queued += store.claim_cooldowns_and_enqueue(claims[start:start + CLAIM_BATCH], EVENT, now)
    return report
