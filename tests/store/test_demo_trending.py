"""On the demo data a new user first sees, trending with the default parameters puts the injected
bursts first, ahead of values whose growth is only noise (issue 11: it used to rank noise first)."""

from __future__ import annotations

import datetime as dt

import pytest

from service.app import privacy_params
from service.demo.bursts import DEMO_BURSTS
from service.engine.polars import PolarsEngine as Engine
from service.engine.requests import Trending
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.default_demo import DEFAULT_DEMO_END
from tests.support.secret import TEST_SECRET

AS_OF = DEFAULT_DEMO_END
CASES = sorted({(b.window, b.dimension) for b in DEMO_BURSTS})


@pytest.fixture(scope="module")
def frames(default_demo_dir):
    return EventStore(default_demo_dir).snapshot()


SECRETS = [TEST_SECRET] + [f"trending-secret-{i}" for i in range(7)]  # the demo's, and others


def _trending(frames, secret: str, window: str, dimension: str, metric: str) -> list[str]:
    engine = Engine(Privacy(secret, privacy_params(Settings())))  # the settings' privacy parameters
    request = Trending(window, dimension, metric, limit=50, min_baseline=10)  # the API's defaults
    return engine.trending(frames, AS_OF, request)["value"].to_list()


def test_the_injected_bursts_lead_with_default_parameters(frames):
    """Over 8 secrets (8 draws of the noise), every case and metric: a burst that is shown is ahead of
    every value whose growth is only noise, and a burst is left out at most once in 40 (one that draws
    its recent count low by more than its noise's s.d. can fall under the lower bound; 2 of 192 before
    issue 41's noise, 4 after, 1 of them with the served secret: 24h keyword suppressions, drawn 1.4 s.d.
    low)."""
    missed, cases = [], 0
    for secret in SECRETS:
        for window, dimension in CASES:
            injected = {b.value for b in DEMO_BURSTS if (b.window, b.dimension) == (window, dimension)}
            # A shorter window's burst lies inside this window's recent period: it is real growth too
            # (a 6-hour burst lifts the last 24 hours), and may rank among this window's own.
            bursts = {b.value for b in DEMO_BURSTS if b.dimension == dimension}
            for metric in ("suppressions", "events", "unique_users"):
                cases += 1
                values = _trending(frames, secret, window, dimension, metric)
                shown = injected & set(values)
                if shown != injected:
                    missed.append((secret, window, dimension, metric, values[:5]))
                if shown:
                    last = max(values.index(v) for v in shown)
                    assert set(values[:last + 1]) <= bursts, (secret, window, dimension, metric, values[:10])
    assert len(missed) * 40 <= cases, missed


def test_the_demo_ends_where_the_fixture_says(frames):
    assert frames.suppressions["ts"].max() < AS_OF <= frames.suppressions["ts"].max() + dt.timedelta(hours=1)
