"""Answers read from a release of real-sized cells (300,000 demo events over 4 days): what a
caller sees, and the attacks the release closes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import falcon.testing
import polars as pl
import pytest

from cache import LocalGate
from service.accounts import AccountStore
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.store.reader import EventStore
from tests.release.conftest import DEMO_END, RELEASE_SECRET

API = "/api/v1/signals"
NEW_YORK = "5128581"


@pytest.fixture
def demo_client(released_demo_dir: Path, accounts: AccountStore) -> falcon.testing.TestClient:
    settings = Settings(data_dir=released_demo_dir, privacy_release=True, secret=RELEASE_SECRET)
    return falcon.testing.TestClient(create_app(settings, clock=FixedClock(DEMO_END + dt.timedelta(minutes=5)),
                                                accounts=accounts, gate=LocalGate()))


def _get(client, key: str, path: str) -> dict:
    answer = client.simulate_get(API + path, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    return answer.json


def _query(client, key: str, body: dict) -> falcon.testing.Result:
    return client.simulate_post(API + "/query", json=body,
                                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})


def test_a_ranking_of_real_cells_is_near_the_truth(demo_client, keys, released_demo_dir: Path) -> None:
    keywords = _get(demo_client, keys["observer"], "/top-keywords?window=24h&limit=10")["keywords"]
    assert len(keywords) == 10
    assert [k["rank"] for k in keywords] == list(range(1, 11))
    assert all(k["users_est"] >= 1 and k["suppressions"] >= k["users_est"] for k in keywords)
    # Against the bounded exact values (what the release adds noise to): within 5 noise s.d.
    from service.release.bounding import bounded_hours
    from service.release.menu import TABLES_BY_NAME
    from service.release.sources import FrameDays

    table = TABLES_BY_NAME["keywords"]
    days = FrameDays(EventStore(released_demo_dir).snapshot())
    start = DEMO_END - dt.timedelta(hours=24)
    bounded = pl.concat([bounded_hours(table, days.rows("suppressions", d)) for d in (start.date(), DEMO_END.date())])
    truth = dict(bounded.filter((pl.col("hour") >= start) & (pl.col("hour") < DEMO_END))
                 .group_by("cell").agg(pl.col("suppressions").sum()).iter_rows())
    sd = 5 * 202 * 3  # 5 s.d. of a 24-hour window: at most 9 sub-day nodes of s.d. 202
    for k in keywords:
        assert abs(k["suppressions"] - truth[k["keyword_raw"]]) < sd, k


def test_every_shown_place_has_users_and_counts_that_agree(demo_client, keys) -> None:
    regions = _get(demo_client, keys["observer"], "/geo-heat?window=7d&level=city")["regions"]
    assert regions, "the release shows the large cities of the demo"
    for place in regions:
        assert place["unique_users"] >= 1 and place["suppressions"] >= place["unique_users"]
        assert place["keyword_count"] >= 1


def test_the_membership_oracle_is_gone(demo_client, keys, released_demo_dir: Path) -> None:
    """Adding a town nobody in the data lives in changes the answer (by the town's released noise),
    as adding a town with a few users does: which of the two a town is, the answer does not say."""
    frames = EventStore(released_demo_dir).snapshot()
    present = set(frames.suppressions.get_column("city").cast(pl.String).drop_nulls().unique())
    from service.release import domains

    empty_towns = [c for c in domains.values("city") if c not in present][:5]
    body = {"window": "7d", "filters": {"cities": [NEW_YORK]}}
    alone = _query(demo_client, keys["analyst"], body).json["results"]
    for town in empty_towns:
        with_town = _query(demo_client, keys["analyst"], {**body, "filters": {"cities": [NEW_YORK, town]}})
        assert with_town.status_code == 200
        assert with_town.json["results"] != alone, town


def test_a_two_dimension_difference_is_refused(demo_client, keys) -> None:
    """users[P] - users[P, platform != p] needed a place crossed with a platform: not in the release."""
    answer = _query(demo_client, keys["analyst"], {
        "window": "30d", "filters": {"cities": [NEW_YORK], "platforms": ["chrome", "safari"]}})
    assert answer.status_code == 422 and answer.json["type"] == "urn:signals:problem:outside-release"


def test_shifted_windows_share_their_nodes(demo_client, keys, released_demo_dir: Path) -> None:
    """Averaging windows an hour apart averages little: they are sums of mostly the same nodes."""
    from service.release.levels import cover

    a = cover(DEMO_END - dt.timedelta(hours=48), DEMO_END)
    b = cover(DEMO_END - dt.timedelta(hours=49), DEMO_END - dt.timedelta(hours=1))
    shared = set(a) & set(b)
    assert len(shared) >= min(len(a), len(b)) // 3
