"""The privacy budget (service/privacy/budget.py, charges.py, cache/charge.lua): what an answer
costs, the ledger per subscription in the gate (in process and in Redis), its header, the 429 when
it would be passed, and the shared ledger of precomputed answers."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import math
import uuid

import falcon.testing
import polars as pl
import pytest

import cache
from cache import LocalGate
from service.answers.cache_entry import CacheEntry
from service.api.tiers import Tier
from service.api.windows import TimeRange
from service.app import create_app
from service.clock import FixedClock
from service.demo.generate import generate_demo
from service.privacy import CellContext, Privacy, PrivacyParams, Published
from service.privacy.budget import HEADER, PrivacyBudget, answer_name, month_bounds
from service.privacy.charges import MICRO, Charges, charging
from service.settings import Settings, SettingsError
from service.store.reader import EventStore
from tests.support.http import get, post_query

DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
NOW = DEMO_END + dt.timedelta(minutes=20)


def budget_of(result) -> dict[str, str]:
    """The Signals-Privacy-Budget header as a dict of its members."""
    return dict(part.strip().split("=", 1) for part in result.headers[HEADER.lower()].split(","))


# -- what a release costs -----------------------------------------------------------------------

def test_release_epsilon_is_the_documented_bound_per_measure():
    params = PrivacyParams()
    assert params.release_epsilon("unique_users") == pytest.approx(1.508, abs=1e-3)
    assert params.release_epsilon("suppressions") == pytest.approx(1.334, abs=1e-3)  # in a family or not
    assert params.release_epsilon("events") == pytest.approx(1.334, abs=1e-3)
    assert params.release_epsilon("keyword_count") == pytest.approx(1.414, abs=1e-3)
    # All of the variance its own: the plain Laplace bound, a little above epsilon (rounding's share).
    whole = PrivacyParams(time_base_share=1.0)
    assert 1.0 < whole.release_epsilon("unique_users") < 1.07
    assert PrivacyParams.exact().release_epsilon("unique_users") == 0.0


def test_more_noise_costs_less():
    assert PrivacyParams(epsilon_users=0.5).release_epsilon("unique_users") < PrivacyParams().release_epsilon("unique_users")


def _frame(cells: int) -> tuple[pl.DataFrame, CellContext]:
    frame = pl.DataFrame({"keyword": [f"k{i}" for i in range(cells)], "users": [50 + i for i in range(cells)]})
    span = TimeRange(DEMO_END - dt.timedelta(days=7), DEMO_END)
    return frame, CellContext(table="suppressions", dims=["keyword"], time_range=span,
                              published=[Published("users", "unique_users", "users")])


def test_the_stage_charges_every_cell_it_draws_when_collecting():
    privacy = Privacy("secret")
    frame, cell = _frame(40)
    with charging() as charges:
        privacy.publish(frame, cell)
        privacy.publish(frame.head(0), cell)  # nothing drawn, nothing charged
    assert charges.cells == 40
    assert charges.epsilon == pytest.approx(40 * PrivacyParams().release_epsilon("unique_users"))
    assert charges.micro >= round(charges.epsilon * MICRO)
    privacy.publish(frame, cell)  # outside `charging`: nothing collects, nothing fails


def test_suppressed_cells_are_charged_too():
    privacy = Privacy("secret")
    frame, cell = _frame(10)
    small = frame.with_columns(pl.lit(1).alias("users"))  # all below k: dropped, yet drawn
    with charging() as charges:
        assert privacy.publish(small, cell).height < 10
    assert charges.cells == 10


def test_charges_round_up_and_ignore_free_releases():
    charges = Charges()
    charges.add(0.0, 5)
    charges.add(1e-7, 1)
    assert charges.cells == 1 and charges.micro == 1


# -- periods ------------------------------------------------------------------------------------

def test_the_budget_renews_on_the_first_of_the_month_utc():
    assert month_bounds(dt.datetime(2026, 11, 28, 17, tzinfo=dt.UTC)) == ("2026-11", dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    assert month_bounds(dt.datetime(2026, 12, 31, 23, 59, tzinfo=dt.UTC)) == ("2026-12", dt.datetime(2027, 1, 1, tzinfo=dt.UTC))
    east = dt.timezone(dt.timedelta(hours=3))
    assert month_bounds(dt.datetime(2026, 12, 1, 1, tzinfo=east))[0] == "2026-11"


def test_an_answer_is_named_without_its_presentation():
    from service.engine.requests import FlexibleQuery, TopKeywords
    base = TopKeywords(window="7d", limit=10)
    other_page = TopKeywords(window="7d", limit=50, offset=50)
    assert answer_name("top_keywords", base, DEMO_END, "g1") == answer_name("top_keywords", other_page, DEMO_END, "g1")
    assert answer_name("top_keywords", base, DEMO_END, "g1") != answer_name("top_keywords", base, DEMO_END, "g2")
    assert answer_name("top_keywords", base, DEMO_END, "g1") != answer_name("top_keywords", base, DEMO_END - dt.timedelta(hours=1), "g1")
    assert answer_name("top_keywords", base, DEMO_END, "g1") != answer_name(
        "top_keywords", TopKeywords(window="24h", limit=10), DEMO_END, "g1")
    query = FlexibleQuery(window="7d", filters={}, group_by=("country",), bucket=None)
    as_csv = FlexibleQuery(window="7d", filters={}, group_by=("country",), bucket=None, format="csv", limit=5)
    assert answer_name("query", query, DEMO_END, "g1") == answer_name("query", as_csv, DEMO_END, "g1")
    ascending = FlexibleQuery(window="7d", filters={}, group_by=("country",), bucket=None, order="asc")
    assert answer_name("query", query, DEMO_END, "g1") != answer_name("query", ascending, DEMO_END, "g1")


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "1e13"])
def test_a_budget_setting_out_of_range_is_refused(monkeypatch, value):
    monkeypatch.setenv("SIGNALS_PRIVACY_BUDGET", value)
    with pytest.raises(SettingsError, match="SIGNALS_PRIVACY_BUDGET"):
        Settings.from_env()


# -- the ledger, in process and in Redis --------------------------------------------------------

@pytest.fixture(params=["local", pytest.param("redis", marks=pytest.mark.redis)])
def gate(request, redis_url, redis_prefix):
    if request.param == "local":
        yield LocalGate()
        return
    prefix = f"{redis_prefix}budget-{uuid.uuid4().hex[:8]}:"
    gate = cache.connect(redis_url, prefix)
    yield gate
    from tests.support.redis_app import delete_prefix
    delete_prefix(redis_url, prefix)
    gate.close()


def test_a_ledger_charges_an_answer_once_and_refuses_past_its_limit(gate):
    assert gate.charge("sub1:2026-11", "a", 400, 1000, 60) == cache.Spend(True, 400, 400)
    assert gate.charge("sub1:2026-11", "a", 400, 1000, 60) == cache.Spend(True, 400, 0)   # asked again: free
    assert gate.charge("sub1:2026-11", "a", 500, 1000, 60) == cache.Spend(True, 500, 100)  # more of it: the rest
    assert gate.charge("sub1:2026-11", "b", 600, 1000, 60) == cache.Spend(False, 500, 600)  # refused, unchanged
    assert gate.spent("sub1:2026-11") == 500
    assert gate.charge("sub1:2026-11", "c", 500, 1000, 60) == cache.Spend(True, 1000, 500)  # exactly the limit
    assert gate.charge("sub2:2026-11", "b", 600, 1000, 60).allowed  # another ledger: its own
    assert gate.spent("nobody:2026-11") == 0


def test_a_ledger_remembers_a_bounded_number_of_answers(gate):
    """The caller decides how many answers there are, not how much memory the ledger takes: past
    `most`, a new answer is charged but not remembered, so asking it again charges it again."""
    for answer in ("a", "b"):
        assert gate.charge("sub5:2026-11", answer, 100, 10_000, 60, most=2).charged == 100
    assert gate.charge("sub5:2026-11", "a", 100, 10_000, 60, most=2).charged == 0   # remembered
    assert gate.charge("sub5:2026-11", "c", 100, 10_000, 60, most=2).charged == 100
    assert gate.charge("sub5:2026-11", "c", 100, 10_000, 60, most=2).charged == 100  # not remembered: again
    assert gate.charge("sub5:2026-11", "b", 150, 10_000, 60, most=2).charged == 50   # remembered, more of it
    assert gate.spent("sub5:2026-11") == 450


def test_concurrent_charges_never_pass_the_limit(gate):
    limit, amount = 10_000, 700

    def charge(i: int) -> cache.Spend:
        return gate.charge("sub9:2026-11", f"answer-{i}", amount, limit, 60)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        spends = list(pool.map(charge, range(60)))
    allowed = sum(1 for s in spends if s.allowed)
    assert allowed == limit // amount
    assert gate.spent("sub9:2026-11") == allowed * amount <= limit


@pytest.mark.redis
def test_redis_ledger_is_shared_by_every_worker(redis_url, redis_prefix):
    prefix = f"{redis_prefix}budget-{uuid.uuid4().hex[:8]}:"
    one, two = cache.connect(redis_url, prefix), cache.connect(redis_url, prefix)
    try:
        assert one.charge("sub3:2026-11", "a", 600, 1000, 60).allowed
        assert two.charge("sub3:2026-11", "a", 600, 1000, 60).charged == 0  # the other worker's charge counts
        assert not two.charge("sub3:2026-11", "b", 600, 1000, 60).allowed
    finally:
        from tests.support.redis_app import delete_prefix
        delete_prefix(redis_url, prefix)
        one.close()
        two.close()


# -- over HTTP ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("budget-demo")
    generate_demo(data_dir, events=40_000, days=40, seed=5, end=DEMO_END, secret="test", progress=False)
    return data_dir


@pytest.fixture(scope="module")
def demo_store(demo_dir):
    return EventStore(demo_dir)


def make_client(demo_dir, demo_store, accounts, gate=None, **settings):
    values = {"data_dir": demo_dir, "secret": "budget-test", **settings}
    return falcon.testing.TestClient(create_app(Settings(**values), clock=FixedClock(NOW), store=demo_store,
                                                accounts=accounts, gate=gate or LocalGate()))


def new_key(accounts, subscription=None):
    return accounts.create_key(Tier.PROFESSIONAL, subscription=subscription or f"budget-{uuid.uuid4().hex[:8]}")[0]


def test_every_answer_carries_the_budget_and_a_repeat_costs_nothing(demo_dir, demo_store, accounts):
    client, key = make_client(demo_dir, demo_store, accounts), new_key(accounts)
    first = get(client, "/top-keywords", key, {"window": "7d", "limit": "10"})
    budget = budget_of(first)
    assert float(budget["charged"]) > 0 and budget["renews"] == '"2026-04-01T00:00:00Z"'
    assert float(budget["limit"]) == Settings().privacy_budget
    assert float(budget["spent"]) == float(budget["charged"])
    assert float(budget["remaining"]) == pytest.approx(float(budget["limit"]) - float(budget["spent"]), abs=0.002)
    # The same answer again, as a page, longer, or as CSV: the same noise, nothing new to charge.
    for query in ({"window": "7d", "limit": "10"}, {"window": "7d", "limit": "5", "offset": "5"}):
        again = budget_of(get(client, "/top-keywords", key, query))
        assert float(again["charged"]) == 0 and again["spent"] == budget["spent"]
    # A different answer is charged.
    other = budget_of(get(client, "/top-keywords", key, {"window": "24h"}))
    assert float(other["charged"]) > 0 and float(other["spent"]) > float(budget["spent"])


def test_the_ledger_is_per_subscription_not_per_key(demo_dir, demo_store, accounts):
    client = make_client(demo_dir, demo_store, accounts)
    name = f"budget-{uuid.uuid4().hex[:8]}"
    first, second = new_key(accounts, name), new_key(accounts, name)
    charged = budget_of(get(client, "/geo-heat", first, {"window": "7d", "level": "country"}))
    shared = budget_of(get(client, "/geo-heat", second, {"window": "7d", "level": "country"}))
    assert float(shared["charged"]) == 0 and shared["spent"] == charged["spent"]
    stranger = budget_of(get(client, "/geo-heat", new_key(accounts), {"window": "7d", "level": "country"}))
    assert stranger["charged"] == charged["charged"]


def test_the_account_shows_the_budget_and_charges_nothing(demo_dir, demo_store, accounts):
    client, key = make_client(demo_dir, demo_store, accounts), new_key(accounts)
    spent = budget_of(post_query(client, key, {"window": "7d", "group_by": ["country"]}))["spent"]
    account = client.simulate_get("/api/v1/account", headers={"Authorization": f"Bearer {key}"})
    assert account.status_code == 200
    shown = budget_of(account)
    assert shown["spent"] == spent and float(shown["charged"]) == 0
    assert "privacy_budget" not in account.json  # the spec's body, unchanged


def test_an_answer_past_the_budget_is_refused_with_what_was_spent_and_when_it_renews(demo_dir, demo_store, accounts):
    # What a day's ranking costs (any subscription pays the same for it), and a budget of one and a half.
    cost = float(budget_of(get(make_client(demo_dir, demo_store, accounts), "/top-keywords", new_key(accounts),
                               {"window": "24h"}))["charged"])
    client = make_client(demo_dir, demo_store, accounts, privacy_budget=round(1.5 * cost, 3))
    key = new_key(accounts)
    first = get(client, "/top-keywords", key, {"window": "24h"})
    assert first.status_code == 200 and float(budget_of(first)["charged"]) == cost
    refused = get(client, "/top-keywords", key, {"window": "7d"})
    assert refused.status_code == 429
    body = refused.json
    assert refused.headers["content-type"] == "application/problem+json"
    assert body["type"] == "urn:signals:problem:privacy-budget" and body["status"] == 429
    assert body["title"] == "Privacy budget spent"
    assert "rate limit" in body["detail"] and "renews at 2026-04-01T00:00:00Z" in body["detail"]
    state = body["privacy_budget"]
    assert state["limit"] == round(1.5 * cost, 3) and state["spent"] == pytest.approx(cost, abs=0.001)
    assert state["remaining"] == pytest.approx(0.5 * cost, abs=0.002) and state["charge"] > state["remaining"]
    assert state["renews"] == "2026-04-01T00:00:00Z"
    until = dt.datetime(2026, 4, 1, tzinfo=dt.UTC) - NOW
    assert int(refused.headers["retry-after"]) == math.ceil(until.total_seconds())
    assert budget_of(refused)["spent"] == budget_of(first)["spent"]
    assert "ratelimit-policy" in refused.headers  # the minute's limit is still shown, unchanged
    # The refusal charged nothing; the answer already received stays free; a smaller one still fits.
    again = get(client, "/top-keywords", key, {"window": "24h", "limit": "5"})
    assert again.status_code == 200 and float(budget_of(again)["charged"]) == 0
    small = get(client, "/keyword-timeseries", key, {"keyword": "crypto", "window": "24h"})
    assert small.status_code == 200 and 0 < float(budget_of(small)["charged"]) < 0.5 * cost
    # Another subscription has its own budget.
    assert get(client, "/top-keywords", new_key(accounts), {"window": "24h"}).status_code == 200


def test_no_budget_no_header(demo_dir, demo_store, accounts):
    client, key = make_client(demo_dir, demo_store, accounts, privacy_budget=0.0), new_key(accounts)
    result = get(client, "/top-keywords", key, {"window": "7d"})
    assert result.status_code == 200 and HEADER.lower() not in result.headers


def test_the_same_answer_is_the_same_charge_with_the_cache_off(demo_dir, demo_store, accounts):
    cached = budget_of(get(make_client(demo_dir, demo_store, accounts), "/trending", new_key(accounts),
                           {"window": "24h"}))
    client = make_client(demo_dir, demo_store, accounts, cache_responses=False)
    key = new_key(accounts)
    uncached = budget_of(get(client, "/trending", key, {"window": "24h"}))
    assert uncached["charged"] == cached["charged"]
    assert float(budget_of(get(client, "/trending", key, {"window": "24h"}))["charged"]) == 0


def test_a_past_as_of_is_another_answer(demo_dir, demo_store, accounts):
    client, key = make_client(demo_dir, demo_store, accounts), new_key(accounts)
    now = budget_of(get(client, "/geo-heat", key, {"window": "24h", "level": "country"}))
    earlier = budget_of(get(client, "/geo-heat", key, {"window": "24h", "level": "country",
                                                       "as_of": "2026-03-10T11:00:00Z"}))
    assert float(earlier["charged"]) > 0 and float(earlier["spent"]) > float(now["spent"])


def test_a_legitimate_sheet_refreshed_every_hour_is_never_refused(demo_dir, demo_store, accounts):
    """Issue 41, point 4: a sheet's 16 reports every hour (here 12 hours, within the plan's requests
    a minute: each hour is a new answer), under the default budget; a month of it stays within it."""
    client, key = make_client(demo_dir, demo_store, accounts), new_key(accounts)
    reports = [("/top-keywords", {"window": w, "limit": "50"}) for w in ("24h", "7d", "30d")] + [
        ("/keyword-timeseries", {"keyword": "crypto", "window": "7d", "bucket": "hour"}),
        ("/keyword-timeseries", {"keyword": "climate change", "window": "30d", "bucket": "day"}),
        ("/domain-timeseries", {"domain": "reddit.com", "window": "7d", "bucket": "day"}),
        ("/geo-heat", {"window": "24h", "level": "country"}), ("/geo-heat", {"window": "7d", "level": "region"}),
        ("/geo-heat", {"window": "30d", "level": "city"}),
        ("/trending", {"window": "24h"}), ("/trending", {"window": "7d", "dimension": "domain"}),
        ("/keyword-activity", {"window": "7d"}), ("/keyword-activity", {"window": "7d", "type": "removed"}),
    ]
    bodies = [{"window": "7d", "group_by": ["region"], "filters": {"countries": ["US"]}},
              {"window": "30d", "group_by": ["platform", "page_context"]},
              {"window": "7d", "group_by": ["time"], "bucket": "day"}]
    assert len(reports) + len(bodies) == 16
    spent = 0.0
    for hours_back in range(12):
        as_of = (DEMO_END - dt.timedelta(hours=hours_back)).strftime("%Y-%m-%dT%H:00:00Z")
        for path, query in reports:
            result = get(client, path, key, {**query, "as_of": as_of})
            assert result.status_code == 200, result.text
        for body in bodies:
            result = post_query(client, key, {**body, "as_of": as_of})
            assert result.status_code == 200, result.text
        spent = float(budget_of(result)["spent"])
    assert spent * 60 < Settings().privacy_budget


@pytest.mark.redis
def test_a_precomputed_answer_is_paid_once_by_the_shared_ledger(demo_dir, demo_store, accounts, redis_url, redis_prefix):
    import redis

    from service.answers.precompute import Precompute
    from service.app import signals_resources
    from service.engine.polars import PolarsEngine
    from tests.support.redis_app import delete_prefix

    prefix = f"{redis_prefix}budget-{uuid.uuid4().hex[:8]}:"
    gates = [cache.connect(redis_url, prefix) for _ in range(3)]
    raw = redis.Redis.from_url(redis_url)
    try:
        values = {"redis_url": redis_url, "redis_prefix": prefix}
        asker = new_key(accounts)
        first = get(make_client(demo_dir, demo_store, accounts, gate=gates[0], **values), "/top-keywords", asker,
                    {"window": "7d"})
        assert float(budget_of(first)["charged"]) > 0  # computed for this subscription: its charge
        # The next hour's answer is not there yet (here: the body expired), and precompute makes it
        # ready for everyone, paid once by the shared ledger.
        for name in raw.scan_iter(f"{prefix}body:top_keywords:*"):
            raw.delete(name)
        settings = Settings(data_dir=demo_dir, secret="budget-test", **values)
        resources = signals_resources(settings, PolarsEngine(Privacy("budget-test", PrivacyParams())), demo_store,
                                      FixedClock(NOW), gates[1], background=True)
        report = Precompute(demo_store, resources, gates[1], FixedClock(NOW), top=5).run_round()
        assert report.computed == 1
        budget = PrivacyBudget(gates[1], settings.privacy_budget, settings.privacy_shared_budget)
        shared = budget.shared_spent(NOW)
        assert shared > 0
        entries = [CacheEntry.decode(raw.get(name)) for name in raw.scan_iter(f"{prefix}body:top_keywords:*")]
        assert [entry.shared for entry in entries] == [True] and entries[0].charge == shared
        # Another subscription is shown it for nothing; the shared ledger is not charged again.
        other = get(make_client(demo_dir, demo_store, accounts, gate=gates[2], **values), "/top-keywords",
                    new_key(accounts), {"window": "7d"})
        assert other.headers["x-cache"] == "hit" and float(budget_of(other)["charged"]) == 0
        assert float(budget_of(other)["spent"]) == 0 and budget.shared_spent(NOW) == shared
    finally:
        delete_prefix(redis_url, prefix)
        raw.close()
        for gate in gates:
            gate.close()


def test_the_openapi_document_names_the_budget(client):
    document = client.simulate_get("/api/v1/openapi").json
    ok = document["paths"]["/api/v1/signals/top-keywords"]["get"]["responses"]["200"]["headers"]
    assert HEADER in ok and "renews" in ok[HEADER]["description"]
    assert HEADER in document["paths"]["/api/v1/account"]["get"]["responses"]["200"]["headers"]
    assert "privacy-budget" in document["components"]["responses"]["Problem429"]["description"]
