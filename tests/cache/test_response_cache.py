"""Response caching over the real Redis: shared canonical entries, ETag/304, Cache-Control,
invalidation by a new data generation, and one computation per key."""

from __future__ import annotations

import datetime as dt
import gc
import json
import shutil
import threading
import time
import uuid
import weakref

import falcon.testing
import polars as pl
import pytest
import redis

import cache
from service.answers.cache_entry import CacheEntry, seconds_until_next_hour
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.fixture_data import FIXTURE_NOW, suppressions_frame
from tests.support.http import get, post_query
from tests.support.landing import write_events
from tests.support.redis_app import delete_prefix, redis_test_client
from tests.support.secret import TEST_SECRET

pytestmark = pytest.mark.redis


def key_for(accounts, tier=Tier.PROFESSIONAL) -> str:
    return accounts.create_key(tier, subscription=f"cache-{uuid.uuid4().hex[:8]}")[0]


def test_miss_then_hit_with_the_same_bytes(rclient, accounts):
    key = key_for(accounts)
    first = get(rclient, "/top-keywords", key, {"window": "7d"})
    second = get(rclient, "/top-keywords", key, {"window": "7d"})
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "hit")
    assert first.content == second.content and first.headers["etag"] == second.headers["etag"]


def test_canonical_parameters_share_one_entry(rclient, accounts):
    key = key_for(accounts)
    assert get(rclient, "/trending", key, "window=24h&metric=events").headers["x-cache"] == "miss"
    assert get(rclient, "/trending", key, "metric=events&window=24h").headers["x-cache"] == "hit"
    assert get(rclient, "/trending", key, "metric=events").headers["x-cache"] == "hit"  # default window
    assert get(rclient, "/trending", key, "metric=events&limit=50&min_baseline=10.0").headers["x-cache"] == "hit"
    assert get(rclient, "/trending", key, "metric=events&limit=5").headers["x-cache"] == "miss"


def test_query_bodies_are_canonical_too(rclient, accounts):
    key = key_for(accounts, Tier.ANALYST)
    body = {"window": "7d", "filters": {"countries": ["US", "DE"], "platforms": ["chrome"]}}
    assert post_query(rclient, key, body).headers["x-cache"] == "miss"
    same = {"filters": {"platforms": ["chrome"], "countries": ["de", "US", "US"]}, "window": "7d", "limit": 100}
    assert post_query(rclient, key, same).headers["x-cache"] == "hit"


def test_entries_are_shared_across_subscribers(rclient, accounts):
    get(rclient, "/geo-heat", key_for(accounts), {"level": "city"})
    assert get(rclient, "/geo-heat", key_for(accounts), {"level": "city"}).headers["x-cache"] == "hit"


def test_etag_if_none_match_gives_304(rclient, accounts):
    key = key_for(accounts)
    first = get(rclient, "/keyword-activity", key)
    etag = first.headers["etag"]
    for header in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        result = get(rclient, "/keyword-activity", key, headers={"If-None-Match": header})
        assert result.status_code == 304 and result.content == b""
        assert result.headers["etag"] == etag
    assert get(rclient, "/keyword-activity", key, headers={"If-None-Match": '"other"'}).status_code == 200


def test_cache_control_lasts_until_the_next_hour(rclient, accounts):
    result = get(rclient, "/top-keywords", key_for(accounts))
    next_hour = FIXTURE_NOW.replace(minute=0, second=0) + dt.timedelta(hours=1)
    assert result.headers["cache-control"] == f"private, max-age={int((next_hour - FIXTURE_NOW).total_seconds())}"
    assert result.headers["last-modified"] == "Tue, 10 Mar 2026 12:00:00 GMT"


def test_csv_is_cached_with_its_headers(rclient, accounts):
    key = key_for(accounts, Tier.ANALYST)
    body = {"window": "7d", "group_by": ["keyword"], "format": "csv"}
    first, second = post_query(rclient, key, body), post_query(rclient, key, body)
    assert second.headers["x-cache"] == "hit" and first.content == second.content
    assert second.headers["content-type"].startswith("text/csv")
    assert second.headers["content-disposition"] == first.headers["content-disposition"]


def test_an_ingest_invalidates_through_the_generation(tmp_path, fixture_data_dir, accounts, redis_url, redis_prefix):
    data_dir = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data_dir)
    store = EventStore(data_dir, check_interval=0)
    client, gate, prefix = redis_test_client(redis_url, redis_prefix, data_dir, store, accounts,
                                             FixedClock(FIXTURE_NOW))
    try:
        key = key_for(accounts)
        before = get(client, "/top-keywords", key)
        assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
        get(client, "/geo-heat", key)  # an endpoint that then goes quiet: its plans must not hold old data
        old_frames = weakref.ref(store.snapshot())
        extra = suppressions_frame().filter(pl.col("keyword") == "bitcoin").head(1).with_columns(
            pl.lit("brand new keyword").alias("keyword"), pl.lit(5000).cast(pl.Int32).alias("suppressions"),
            pl.lit(dt.datetime(2026, 3, 10, 9, tzinfo=dt.UTC)).dt.cast_time_unit("us").alias("ts"))
        write_events(data_dir, "suppressions", extra)
        after = get(client, "/top-keywords", key, headers={"Cache-Control": "no-cache"})  # not the previous, stale
        assert after.headers["x-cache"] == "miss"
        assert after.json["keywords"][0]["keyword_raw"] == "brand new keyword"
        assert after.headers["etag"] != before.headers["etag"]
        assert int(after.headers["x-signals-data-generation"]) == int(before.headers["x-signals-data-generation"]) + 1
        gc.collect()
        assert old_frames() is None, "the previous generation's event data is still held (a worker's memory would grow per ingest)"
    finally:
        gate.close()
        delete_prefix(redis_url, prefix)


def test_one_computation_per_key_across_concurrent_requests(fixture_data_dir, fixture_store, accounts, redis_url,
                                                            redis_prefix):
    """Many workers asking for the same missing entry at once: the engine runs once."""
    calls = []

    class CountingEngine:
        def __init__(self):
            from service.engine.polars import PolarsEngine as Engine
            from service.privacy import Privacy
            self._inner = Engine(Privacy.exact())

        def __getattr__(self, name):
            method = getattr(self._inner, name)

            def counted(*args, **kwargs):
                calls.append(name)
                threading.Event().wait(0.3)  # a slow computation, so that the others must wait
                return method(*args, **kwargs)
            return counted

    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    gates = [cache.connect(redis_url, prefix) for _ in range(6)]  # six "workers" sharing one Redis
    clients = [
        falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW),
                                             store=fixture_store, accounts=accounts, engine=CountingEngine(),
                                             gate=gate))
        for gate in gates
    ]
    key = key_for(accounts)
    results = []
    threads = [threading.Thread(target=lambda c=c: results.append(get(c, "/geo-heat", key, {"window": "30d"})))
               for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert calls == ["geo_heat"]
        assert len({r.content for r in results}) == 1 and all(r.status_code == 200 for r in results)
    finally:
        for gate in gates:
            gate.close()
        delete_prefix(redis_url, prefix)


class SlowEngine:
    """The real engine, slowed down; the first call can be made to fail."""

    def __init__(self, seconds: float, fail_first: bool = False) -> None:
        from service.engine.polars import PolarsEngine as Engine
        from service.privacy import Privacy
        self._inner, self._seconds, self._fail_first, self.calls = Engine(Privacy.exact()), seconds, fail_first, 0
        self.started = threading.Event()  # set when the first computation begins (its lock taken)

    def __getattr__(self, name):
        method = getattr(self._inner, name)

        def slow(*args, **kwargs):
            self.calls += 1
            self.started.set()
            threading.Event().wait(self._seconds)
            if self._fail_first and self.calls == 1:
                raise RuntimeError("the computation failed")
            return method(*args, **kwargs)
        return slow


def _two_workers_one_filling(gates, engine, fixture_data_dir, fixture_store, accounts, after_start=None):
    """Worker A starts computing an entry (holding its lock); then worker B asks for it and
    waits. Returns (A's response, B's response, seconds B took)."""
    clients = [falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW),
                                                    store=fixture_store, accounts=accounts, engine=engine, gate=gate))
               for gate in gates]
    key = key_for(accounts)
    results = {}
    first = threading.Thread(target=lambda: results.update(a=get(clients[0], "/geo-heat", key, {"window": "7d"})))
    first.start()
    assert engine.started.wait(30), "worker A never started computing"
    if after_start:
        threading.Timer(0.3, after_start).start()
    started = time.monotonic()
    results["b"] = get(clients[1], "/geo-heat", key, {"window": "7d"})
    took = time.monotonic() - started
    first.join()
    return results["a"], results["b"], took


def test_a_waiting_worker_computes_when_the_filling_one_fails(fixture_data_dir, fixture_store, accounts, redis_url,
                                                              redis_prefix, monkeypatch):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    gates = [cache.connect(redis_url, prefix) for _ in range(2)]
    engine = SlowEngine(0.5, fail_first=True)
    try:
        failed, served, took = _two_workers_one_filling(gates, engine, fixture_data_dir, fixture_store, accounts)
        assert failed.status_code == 500 and served.status_code == 200
        assert engine.calls == 2
        assert took < 30, "the waiter noticed the lock was released without a body, not waited its full time"
    finally:
        for gate in gates:
            gate.close()
        delete_prefix(redis_url, prefix)


def test_a_waiting_worker_computes_when_redis_goes_away(fixture_data_dir, fixture_store, accounts, monkeypatch):
    from tests.support.redis_server import ThrowawayRedis

    server = ThrowawayRedis().start()
    gates = [cache.connect(server.url, "gone:") for _ in range(2)]
    try:
        engine = SlowEngine(2.0)
        filled, served, took = _two_workers_one_filling(gates, engine, fixture_data_dir, fixture_store, accounts,
                                                        after_start=server.stop)
        assert filled.status_code == 200 and served.status_code == 200
        assert served.headers["x-cache"] == "miss" and served.content == filled.content
        assert took < 30, "the waiter computed once Redis was gone, not after its full wait"
    finally:
        for gate in gates:
            gate.close()
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_a_stored_entry_lives_until_the_next_hour(fixture_data_dir, fixture_store, accounts, redis_url, redis_prefix):
    client, gate, prefix = redis_test_client(redis_url, redis_prefix, fixture_data_dir, fixture_store, accounts,
                                             FixedClock(FIXTURE_NOW))
    try:
        result = get(client, "/top-keywords", key_for(accounts), {"limit": "11"})
        assert result.headers["x-cache"] == "miss"
        max_age = int(result.headers["cache-control"].rsplit("=", 1)[1])
        store = redis.Redis.from_url(redis_url)
        # The answer's entry (beside it: `previous:`, its copy to be served stale next hour, service/answers/stale.py;
        # `asked:`, how to ask it again, service/answers/precompute.py).
        (stored,) = list(store.scan_iter(f"{prefix}body:top_keywords:*"))
        ttl = store.pttl(stored) / 1000
        store.close()
        # The entry is keyed by as_of and expires when the next as_of can begin: stored for as
        # many seconds as max-age announces (both from the app's clock), which Redis counts down
        # from the moment it was stored.
        assert max_age == seconds_until_next_hour(FIXTURE_NOW)
        # (the seconds between storing and reading it, a few on a loaded machine, are counted off)
        assert -1 <= max_age - ttl <= 5, (ttl, max_age)
    finally:
        gate.close()
        delete_prefix(redis_url, prefix)


def test_response_cache_can_be_switched_off(fixture_data_dir, fixture_store, accounts):
    app = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, cache_responses=False), clock=FixedClock(FIXTURE_NOW),
                     store=fixture_store, accounts=accounts, gate=cache.LocalGate())
    client = falcon.testing.TestClient(app)
    key = key_for(accounts)
    first, second = get(client, "/top-keywords", key), get(client, "/top-keywords", key)
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "miss")
    assert first.content == second.content and first.headers["etag"] == second.headers["etag"]
    assert second.headers["x-ratelimit-remaining"] == "298"


def test_settings_parse_the_cache_switch():
    from service.settings import SettingsError

    assert Settings.from_env({"SIGNALS_CACHE_RESPONSES": "off"}).cache_responses is False
    assert Settings.from_env({}).cache_responses is True
    with pytest.raises(SettingsError, match="SIGNALS_CACHE_RESPONSES"):
        Settings.from_env({"SIGNALS_CACHE_RESPONSES": "maybe"})


def test_a_new_secret_or_privacy_setting_never_gets_old_bodies(fixture_data_dir, fixture_store, accounts, redis_url,
                                                              redis_prefix):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    gates = []

    def client_with(**settings):
        gates.append(cache.connect(redis_url, prefix))  # one shared Redis and prefix for all
        app = create_app(Settings(data_dir=fixture_data_dir, **settings), clock=FixedClock(FIXTURE_NOW),
                         store=fixture_store, accounts=accounts, gate=gates[-1])
        return falcon.testing.TestClient(app)

    key = key_for(accounts)
    try:
        assert get(client_with(secret="one"), "/geo-heat", key).headers["x-cache"] == "miss"
        assert get(client_with(secret="one"), "/geo-heat", key).headers["x-cache"] == "hit"
        assert get(client_with(secret="two"), "/geo-heat", key).headers["x-cache"] == "miss"
        assert get(client_with(secret="one", privacy_min_users=5), "/geo-heat", key).headers["x-cache"] == "miss"
    finally:
        for gate in gates:
            gate.close()
        delete_prefix(redis_url, prefix)


@pytest.mark.parametrize(("moment", "seconds"), [
    ("2026-03-10T12:34:56+00:00", 1504),
    ("2026-03-10T12:34:56.500000+00:00", 1503),   # whole seconds, never past the hour
    ("2026-03-10T12:59:59.999000+00:00", 1),       # at least 1
    ("2026-03-10T13:00:00+00:00", 3600),
    ("2026-03-10T14:04:56+01:30", 1504),           # any offset: the UTC hour counts
])
def test_max_age_runs_to_the_next_hour(moment, seconds):
    assert seconds_until_next_hour(dt.datetime.fromisoformat(moment)) == seconds


def test_one_body_cache_keeps_each_body_decoded_beside_it():
    """The process's one body cache (cache/bodies.py): a body's decoded entry is kept with it, so a
    hot body is parsed once; decoded copies count against the same budget; a body not kept (too
    large, or another object than the one kept) is decoded each time."""
    from cache import ProcessBodies

    calls: list[bytes] = []

    def decode(raw: bytes) -> CacheEntry:
        calls.append(raw)
        return CacheEntry.decode(raw)

    bodies = ProcessBodies(budget=16 * 1024)
    small = [CacheEntry(f'"{n}"', "application/json", None, b"x" * 900) for n in range(40)]
    for n, entry in enumerate(small):
        raw = entry.encode()
        bodies.put(f"k{n}", raw, 60)
        assert bodies.decoded(f"k{n}", raw, decode) == entry
        assert bodies.decoded(f"k{n}", bodies.get(f"k{n}"), decode) == entry  # kept: not decoded again
    assert len(calls) == 40
    assert bodies.size <= 16 * 1024  # decoded copies counted: the oldest went
    kept = bodies.get("k39")
    assert kept is not None and bodies.decoded("k39", kept, decode) == small[39] and len(calls) == 40
    other = small[39].encode()  # equal bytes, another object: not what is kept, decoded
    assert bodies.decoded("k39", other, decode) == small[39] and len(calls) == 41
    large = CacheEntry('"big"', "application/json", None, b"y" * 5000)  # over a quarter: not kept
    bodies.put("big", large.encode(), 60)
    assert bodies.get("big") is None
    with pytest.raises(json.JSONDecodeError):
        bodies.decoded("big", b"{not json}\nbody", CacheEntry.decode)


def test_as_of_and_the_cache_entry_move_on_with_the_hour(fixture_data_dir, fixture_store, accounts):
    # Data ends at 12:20, so as_of is the current hour until 13:00, and stays 13:00 after.
    clock = FixedClock(FIXTURE_NOW - dt.timedelta(hours=1))
    client = falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=clock,
                                                  store=fixture_store, accounts=accounts, gate=cache.LocalGate()))
    key = key_for(accounts)
    seen = []
    for _ in range(4):
        for _ in range(2):  # the second request of each hour is a hit, on that hour's entry
            # no-cache: the current answer, never the previous one served stale (service/answers/stale.py)
            result = get(client, "/top-keywords", key, headers={"Cache-Control": "no-cache"})
            seen.append((result.headers["x-signals-as-of"], result.headers["x-cache"]))
        clock.advance(dt.timedelta(hours=1))
    assert seen == [
        ("2026-03-10T11:00:00Z", "miss"), ("2026-03-10T11:00:00Z", "hit"),
        ("2026-03-10T12:00:00Z", "miss"), ("2026-03-10T12:00:00Z", "hit"),
        ("2026-03-10T13:00:00Z", "miss"), ("2026-03-10T13:00:00Z", "hit"),
        ("2026-03-10T13:00:00Z", "hit"), ("2026-03-10T13:00:00Z", "hit"),
    ]


def test_the_process_cache_size_is_a_setting(fixture_data_dir, fixture_store, accounts, monkeypatch):
    from service.settings import SettingsError

    assert Settings.from_env({}).process_cache_mb == 64
    assert Settings.from_env({"SIGNALS_PROCESS_CACHE_MB": "8"}).process_cache_mb == 8
    for bad in ("0", "-1", "lots"):
        with pytest.raises(SettingsError, match="SIGNALS_PROCESS_CACHE_MB"):
            Settings.from_env({"SIGNALS_PROCESS_CACHE_MB": bad})
    assert cache.connect(None, process_cache_bytes=3 << 20)._bodies.budget == 3 << 20
    with_redis = cache.connect("redis://127.0.0.1:1/0", process_cache_bytes=5 << 20)
    assert with_redis._primary._bodies is with_redis._fallback._bodies  # one store: served while Redis is down
    assert with_redis._primary._bodies.budget == 5 << 20
    made = []
    monkeypatch.setattr(cache, "connect", lambda *args: made.append(args) or cache.LocalGate())
    create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, process_cache_mb=7), clock=FixedClock(FIXTURE_NOW),
               store=fixture_store, accounts=accounts)
    assert made[0][-1] == 7 << 20
