"""service/engine: typed requests in, polars frames out, without HTTP; the cost bound of /query;
geography labels. The tests that take `engine_kind` run once per engine (polars, and ClickHouse
through chdb)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["polars", "clickhouse"])
def engine_kind(request: pytest.FixtureRequest, chdb_dir: Path) -> str:
    """Runs a test once per engine: tests.support.engines.Engine builds the engine of this kind."""
    from tests.support import engines

    engines.current.update(kind=request.param, chdb=chdb_dir)
    yield request.param
    engines.current.update(kind="polars")
