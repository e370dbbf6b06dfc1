"""The privacy budget: what one subscription may learn about one person, stated and enforced.

Each answer costs the people in it what its cells' releases cost (`charges.py`: the sum of the
release epsilon of every cell its computation drew, as if one person were in all of them). A
subscription's ledger adds up what the answers it is shown cost in a calendar month (UTC); an
answer that would take it past its limit (`SIGNALS_PRIVACY_BUDGET`) is refused with `429`
(`privacy-budget`) until the month renews. The ledger lives in Redis, shared by every worker and
machine, and is charged atomically (cache/charge.lua): a worker killed mid-request has either
charged the answer or shown nothing, and the same answer asked again costs nothing (it shows the
same noise: the cell's noise is a function of what it counts), whatever its page, format or
limit. Without Redis, and while Redis is down, the ledger is this process's (as the rate limit).

Reports every subscriber receives are not charged to each: an answer the precompute process makes
ready for the hour (the most asked requests) is charged once, to the shared ledger
(`SIGNALS_PRIVACY_SHARED_BUDGET` a month), and shown to every subscription for free; when that
ledger is spent, precomputed answers are charged per subscription like any other.

docs/privacy.md "What this guarantees" has the bound this gives, in numbers, and why."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import math
from typing import Any

from cache import Gate
from service.http.errors import PRIVACY_BUDGET, Problem
from service.privacy.charges import MICRO

SHARED = "shared"  # the shared ledger's name (a subscription's is "sub<id>")
# Fields of a request that choose how an answer is shown, not which cells it draws: an answer
# asked again in another format, page or length costs what it costs beyond its first asking.
PRESENTATION = ("format", "offset", "limit")
HEADER = "Signals-Privacy-Budget"


def answer_name(endpoint: str, request: Any, as_of: dt.datetime, data: str) -> str:
    """What an answer is for the ledger: the endpoint, the request without its presentation
    fields, the hour and the data it was computed from (`data`: the generation or the data
    version its cache key names)."""
    fields = {k: v for k, v in dataclasses.asdict(request).items() if k not in PRESENTATION}
    canonical = json.dumps({"e": endpoint, "r": fields, "a": as_of.isoformat(), "d": data},
                           sort_keys=True, separators=(",", ":"), default=list)
    return f"{endpoint}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"


def ledger_name(subscription_id: int, now: dt.datetime) -> str:
    """The ledger of a subscription's budget in the month holding `now`."""
    return f"sub{subscription_id}:{month_bounds(now)[0]}"


def month_bounds(now: dt.datetime) -> tuple[str, dt.datetime]:
    """The budget's period holding `now`: its name (YYYY-MM) and when the next one starts."""
    now = now.astimezone(dt.UTC)
    return _month(now.year, now.month)


@functools.lru_cache(maxsize=16)
def _month(year: int, month: int) -> tuple[str, dt.datetime]:  # asked two or three times by every request
    return f"{year:04d}-{month:02d}", dt.datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=dt.UTC)


@functools.lru_cache(maxsize=16)
def _iso(moment: dt.datetime) -> str:  # a period's renewal, in every answer's header
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _epsilon(micro: int) -> str:
    """Micro-epsilon as an RFC 8941 decimal (three places)."""
    return f"{micro / MICRO:.3f}"


@dataclasses.dataclass(frozen=True)
class BudgetState:
    """A subscription's budget after (or instead of) a charge; amounts in micro-epsilon."""

    limit: int
    spent: int
    charged: int
    renews: dt.datetime
    now: dt.datetime
    allowed: bool = True

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.spent)

    @property
    def renews_in(self) -> int:
        return max(1, math.ceil((self.renews - self.now).total_seconds()))

    def header(self) -> tuple[str, str]:
        """`Signals-Privacy-Budget`, an RFC 8941 dictionary: epsilon left, the limit, spent this
        period, charged for this answer, and when the period renews."""
        renews = _iso(self.renews)
        return HEADER, (f"remaining={_epsilon(self.remaining)}, limit={_epsilon(self.limit)}, "
                        f"spent={_epsilon(self.spent)}, charged={_epsilon(self.charged if self.allowed else 0)}, "
                        f'renews="{renews}"')

    def as_json(self) -> dict[str, Any]:
        return {"limit": round(self.limit / MICRO, 3), "spent": round(self.spent / MICRO, 3),
                "remaining": round(self.remaining / MICRO, 3), "charge": round(self.charged / MICRO, 3),
                "renews": self.renews.strftime("%Y-%m-%dT%H:%M:%SZ")}

    def refusal(self) -> Problem:
        return Problem(
            429,
            f"This answer would cost the subscription's privacy budget {self.charged / MICRO:,.3f} epsilon; "
            f"it has spent {self.spent / MICRO:,.3f} of its {self.limit / MICRO:,.3f} this month "
            f"({self.remaining / MICRO:,.3f} left). The budget renews at {self.as_json()['renews']} "
            f"(in {self.renews_in} s). Answers already received cost nothing to ask again; a narrower "
            f"request (fewer cells: a filter, a shorter window, a coarser bucket) costs less. "
            f"This is not the per-minute rate limit (docs/privacy.md, \"The privacy budget\").",
            headers={"Retry-After": str(self.renews_in), HEADER: self.header()[1]},
            kind=PRIVACY_BUDGET, extensions={"privacy_budget": self.as_json()})


class PrivacyBudget:
    """The ledgers of the subscriptions and the shared one, kept by the gate (Redis or local)."""

    def __init__(self, gate: Gate, limit_epsilon: float, shared_limit_epsilon: float) -> None:
        self._gate = gate
        self.limit = round(limit_epsilon * MICRO)
        self.shared_limit = round(shared_limit_epsilon * MICRO)

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def charge(self, subscription_id: int, answer: str, amount: int, now: dt.datetime,
               read: tuple[str, str, int, int] | None = None) -> BudgetState:
        """Charge a subscription for an answer it is about to be shown (`allowed` False: refused,
        nothing charged). `read`: the ledger as the request's admission read it in the same round
        trip (`Admission.ledger`): an answer already paid for in full costs no second call."""
        renews = month_bounds(now)[1]
        if read is not None and read[:2] == (ledger_name(subscription_id, now), answer) and read[3] >= amount:
            return BudgetState(self.limit, read[2], 0, renews, now)
        ttl = math.ceil((renews - now).total_seconds()) + 86_400
        spend = self._gate.charge(ledger_name(subscription_id, now), answer, amount, self.limit, ttl)
        return BudgetState(self.limit, spend.spent, spend.charged, renews, now, spend.allowed)

    def state(self, subscription_id: int, now: dt.datetime) -> BudgetState:
        """The subscription's budget as it stands, charging nothing."""
        renews = month_bounds(now)[1]
        return BudgetState(self.limit, self._gate.spent(ledger_name(subscription_id, now)), 0, renews, now)

    def charge_shared(self, answer: str, amount: int, now: dt.datetime) -> bool:
        """Charge the shared ledger for an answer made ready for everyone; False when it is spent
        (the answer is then charged to each subscription that is shown it)."""
        if self.shared_limit <= 0:
            return False
        period, renews = month_bounds(now)
        ttl = math.ceil((renews - now).total_seconds()) + 86_400
        return self._gate.charge(f"{SHARED}:{period}", answer, amount, self.shared_limit, ttl).allowed

    def shared_spent(self, now: dt.datetime) -> int:
        return self._gate.spent(f"{SHARED}:{month_bounds(now)[0]}")
