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

AS_OF = DEFAULT_DEMO_END
CASES = sorted({(b.window, b.dimension) for b in DEMO_BURSTS})


@pytest.fixture(scope="module")
def frames(default_demo_dir):
    return EventStore(default_demo_dir).snapshot()


@pytest.fixture(scope="module")
def engine():
    settings = Settings()  # as served: the settings' privacy parameters and the development secret
    return Engine(Privacy(settings.secret, privacy_params(settings)))


@pytest.mark.parametrize("metric", ["suppressions", "events", "unique_users"])
@pytest.mark.parametrize(("window", "dimension"), CASES, ids=[f"{w}-{d}" for w, d in CASES])
def test_the_injected_bursts_lead_with_default_parameters(frames, engine, window, dimension, metric):
    injected = {b.value for b in DEMO_BURSTS if (b.window, b.dimension) == (window, dimension)}
    # A shorter window's burst lies inside this window's recent period: it is real growth too
    # (a 6-hour burst lifts the last 24 hours), and may rank among this window's own.
    bursts = {b.value for b in DEMO_BURSTS if b.dimension == dimension}
    request = Trending(window, dimension, metric, limit=50, min_baseline=10)  # the API's defaults
    values = engine.trending(frames, AS_OF, request)["value"].to_list()
    assert injected <= set(values), values[:10]
    last = max(values.index(v) for v in injected)
    assert set(values[:last + 1]) <= bursts, values[:10]


def test_the_demo_ends_where_the_fixture_says(frames):
    assert frames.suppressions["ts"].max() < AS_OF <= frames.suppressions["ts"].max() + dt.timedelta(hours=1)
