"""The previous answer served stale while the current one computes (service/answers/stale.py), and the
precompute round (service/answers/precompute.py), in process with a clock the test moves."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import falcon.testing
import pytest

import cache
from service.answers.precompute import Precompute
from service.answers.stale import StalePolicy, _refuses_stale
from service.api.tiers import Tier
from service.app import create_app, signals_resources
from service.clock import FixedClock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import get
from tests.support.redis_app import delete_prefix
from tests.support.secret import TEST_SECRET

# The fixture's data end at 12:20: at 11:30 as_of is 11:00; at 12:05 it is 12:00.
BEFORE = FIXTURE_NOW.replace(hour=11, minute=30)
AFTER = FIXTURE_NOW.replace(hour=12, minute=5)


def build(fixture_data_dir, fixture_store, accounts, gate, clock, **settings):
    app_settings = Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, **settings)
    app = create_app(app_settings, clock=clock, store=fixture_store, accounts=accounts, gate=gate,
                     engine=Engine(Privacy.exact()))
    key = accounts.create_key(Tier.PROFESSIONAL, subscription=f"stale-{uuid.uuid4().hex[:8]}")[0]
    return falcon.testing.TestClient(app), key, app_settings


def until_hit(client, key, path, query) -> falcon.testing.Result:
    deadline = time.monotonic() + 10
    while True:
        result = get(client, path, key, query)
        if result.headers["x-cache"] == "hit":
            return result
        assert time.monotonic() < deadline, "the current answer was never computed"
        time.sleep(0.05)


def test_the_previous_answer_is_served_stale_and_labelled(fixture_data_dir, fixture_store, accounts):
    clock = FixedClock(BEFORE)
    client, key, _ = build(fixture_data_dir, fixture_store, accounts, cache.LocalGate(), clock)
    first = get(client, "/geo-heat", key, {"window": "7d"})
    assert first.headers["x-signals-as-of"] == "2026-03-10T11:00:00Z"
    clock.advance(AFTER - BEFORE)
    stale = get(client, "/geo-heat", key, {"window": "7d"})
    assert stale.status_code == 200 and stale.headers["x-cache"] == "stale"
    assert stale.headers["x-signals-as-of"] == "2026-03-10T11:00:00Z"
    assert stale.headers["last-modified"] == "Tue, 10 Mar 2026 11:00:00 GMT"
    assert stale.headers["x-signals-data-generation"] == first.headers["x-signals-data-generation"]
    assert stale.headers["age"] == str(round((AFTER - BEFORE).total_seconds()))
    assert stale.headers["cache-status"].startswith("signals; hit; ttl=-")
    assert stale.headers["cache-status"].endswith("detail=stale-while-revalidate")
    assert stale.headers["cache-control"] == "private, max-age=0"
    # The body is the previous answer's, saying which hour it is for.
    assert stale.json["as_of"] == "2026-03-10T11:00:00Z"
    assert {k: v for k, v in stale.json.items() if k != "as_of"} == first.json
    assert stale.headers["etag"] != first.headers["etag"]
    # Meanwhile the current answer computed: the next request gets it.
    current = until_hit(client, key, "/geo-heat", {"window": "7d"})
    assert current.headers["x-signals-as-of"] == "2026-03-10T12:00:00Z" and "as_of" not in current.json


@pytest.mark.parametrize("headers", [{"Cache-Control": "no-cache"}, {"Cache-Control": "max-age=0"},
                                     {"Cache-Control": "No-Store, private"}])
def test_no_cache_gets_the_current_answer(fixture_data_dir, fixture_store, accounts, headers):
    clock = FixedClock(BEFORE)
    client, key, _ = build(fixture_data_dir, fixture_store, accounts, cache.LocalGate(), clock)
    get(client, "/top-keywords", key)
    clock.advance(AFTER - BEFORE)
    current = get(client, "/top-keywords", key, headers=headers)
    assert current.headers["x-cache"] == "miss" and current.headers["x-signals-as-of"] == "2026-03-10T12:00:00Z"


def test_an_explicit_as_of_is_never_answered_with_another_hour(fixture_data_dir, fixture_store, accounts):
    clock = FixedClock(BEFORE)
    client, key, _ = build(fixture_data_dir, fixture_store, accounts, cache.LocalGate(), clock)
    get(client, "/top-keywords", key)
    clock.advance(AFTER - BEFORE)
    asked = get(client, "/top-keywords", key, {"as_of": "2026-03-10T12:00:00Z"})
    assert asked.headers["x-cache"] == "miss" and asked.headers["x-signals-as-of"] == "2026-03-10T12:00:00Z"


def test_no_stale_answer_when_switched_off_or_more_than_an_hour_old(fixture_data_dir, fixture_store, accounts):
    clock = FixedClock(BEFORE - dt.timedelta(hours=1))  # as_of 10:00
    client, key, _ = build(fixture_data_dir, fixture_store, accounts, cache.LocalGate(), clock)
    get(client, "/top-keywords", key)
    clock.advance(AFTER - BEFORE + dt.timedelta(hours=1))  # as_of 12:00: the 10:00 answer is two hours old
    assert get(client, "/top-keywords", key).headers["x-cache"] == "miss"
    clock = FixedClock(BEFORE)
    client, key, _ = build(fixture_data_dir, fixture_store, accounts, cache.LocalGate(), clock, stale_seconds=0)
    get(client, "/top-keywords", key)
    clock.advance(AFTER - BEFORE)
    assert get(client, "/top-keywords", key).headers["x-cache"] == "miss"


def test_stale_answers_only_in_the_first_seconds_after_the_turn():
    policy = StalePolicy(0.2, FixedClock(AFTER))
    gate = cache.LocalGate()
    from service.answers.cache_entry import CacheEntry

    policy.keep(gate, "id", CacheEntry('"e"', "application/json", None, b"{}"), FIXTURE_NOW.replace(hour=11, minute=0),
                1, 60)
    as_of = FIXTURE_NOW.replace(hour=12, minute=0)
    policy.seen(as_of, 1)  # a process's first sight, 5 minutes into the hour: past the 0.2 s window
    assert policy.find(gate, "id", as_of, 1, None) is None
    policy.seen(as_of, 2)  # new data landed: the window opens
    assert policy.find(gate, "id", as_of, 2, None) is not None
    time.sleep(0.25)
    assert policy.find(gate, "id", as_of, 1, None) is None


@pytest.mark.parametrize(("minute", "served"), [(5, True), (45, False)])
def test_a_worker_that_first_sees_the_hour_late_acts_as_if_it_saw_the_turn(minute, served):
    # Which of the workers takes the first request after the turn is chance: a worker that had not
    # answered before must answer as the others do (within 10 minutes of the hour's start).
    policy = StalePolicy(600, FixedClock(FIXTURE_NOW.replace(hour=12, minute=minute)))
    gate = cache.LocalGate()
    from service.answers.cache_entry import CacheEntry

    policy.keep(gate, "id", CacheEntry('"e"', "application/json", None, b"{}"), FIXTURE_NOW.replace(hour=11, minute=0),
                1, 60)
    as_of = FIXTURE_NOW.replace(hour=12, minute=0)
    policy.seen(as_of, 1)
    assert (policy.find(gate, "id", as_of, 1, None) is not None) is served


def test_cache_control_directives_that_refuse_stale():
    assert _refuses_stale("no-cache") and _refuses_stale("private, NO-CACHE") and _refuses_stale("max-age=0")
    assert not _refuses_stale(None) and not _refuses_stale("max-age=60") and not _refuses_stale("private")


@pytest.mark.redis
def test_a_precompute_round_makes_the_most_asked_ready_for_the_new_hour(fixture_data_dir, fixture_store, accounts,
                                                                        redis_url, redis_prefix):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    web_gate, precompute_gate = cache.connect(redis_url, prefix), cache.connect(redis_url, prefix)
    clock = FixedClock(BEFORE)
    try:
        client, key, settings = build(fixture_data_dir, fixture_store, accounts, web_gate, clock,
                                      redis_url=redis_url, redis_prefix=prefix)
        asked = [("/top-keywords", {"window": "7d"}), ("/trending", {"window": "24h"})]
        # "Most asked" is how many subscriptions asked: one repeating a request 50 times counts once,
        # three asking another once each count three.
        for _ in range(50):
            assert get(client, asked[0][0], key, asked[0][1]).status_code == 200
        others = [accounts.create_key(Tier.PROFESSIONAL, subscription=f"stale-{uuid.uuid4().hex[:8]}")[0]
                  for _ in range(2)]
        for each in (key, *others):
            get(client, asked[1][0], each, asked[1][1])
        resources = signals_resources(settings, Engine(Privacy.exact()), fixture_store, clock, precompute_gate,
                                      background=True)
        precompute = Precompute(fixture_store, resources, precompute_gate, clock, top=10)
        assert [(identity.split(":")[0], count) for identity, count in precompute_gate.most_asked(10)] == [
            ("trending", 3.0), ("top_keywords", 1.0)]
        report = precompute.run_round()  # as_of 11:00: everything was asked in this hour already
        assert (report.asked, report.cached, report.computed) == (2, 2, 0)
        assert precompute.due() is None  # nothing new until the hour turns or data lands
        clock.advance(AFTER - BEFORE)
        report = precompute.run_round(precompute.due())
        assert (report.asked, report.computed, report.failed) == (2, 2, 0)
        assert report.as_of.isoformat() == "2026-03-10T12:00:00+00:00"
        # the clock stood at 12:05 and some seconds (the turn was at 12:00)
        since_turn = (AFTER - AFTER.replace(minute=0, second=0, microsecond=0)).total_seconds()
        assert report.lag_seconds == pytest.approx(since_turn + report.seconds)
        answers = [get(client, path, key, query) for path, query in asked]
        assert [a.headers["x-cache"] for a in answers] == ["hit", "hit"]
        assert {a.headers["x-signals-as-of"] for a in answers} == {"2026-03-10T12:00:00Z"}
        # Counts fade each round: recent asks weigh more than old ones. The asks just made are by a
        # subscription that asked the same earlier today: they count nothing more.
        def counts() -> dict[str, float]:
            return {identity.split(":")[0]: count for identity, count in precompute_gate.most_asked(10)}

        assert counts() == pytest.approx({"trending": 3 * 0.25, "top_keywords": 1 * 0.25})
        other = get(client, asked[0][0], others[0], asked[0][1])  # a subscription's first ask today counts
        assert other.headers["x-cache"] == "hit"
        assert counts() == pytest.approx({"trending": 3 * 0.25, "top_keywords": 1 * 0.25 + 1})
    finally:
        web_gate.close()
        precompute_gate.close()
        delete_prefix(redis_url, prefix)
