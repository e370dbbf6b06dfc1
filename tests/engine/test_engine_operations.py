"""Every engine answers every operation of the endpoint table: a new endpoint is its declaration
(service/api/endpoints.py `ENDPOINTS`) and one method per engine, and an engine without one fails here,
in the quick tier, not at run time on the first request (docs/architecture.md, "Adding a GET
endpoint")."""

from __future__ import annotations

import pytest

from service import backend
from service.api.endpoints import ENDPOINTS
from service.engine.interface import QueryEngine, missing_operations
from service.settings import ENGINES, Settings

OPERATIONS = [endpoint.name for endpoint in ENDPOINTS]


@pytest.mark.parametrize("name", sorted(backend.BACKENDS))
def test_each_engine_has_a_method_for_every_operation(name: str) -> None:
    engine = backend.BACKENDS[name](Settings(engine=name, clickhouse_url="chdb://unused")).engine_class()
    assert missing_operations(engine, [*OPERATIONS, "counts"]) == [], engine


def test_the_engine_protocol_names_every_operation() -> None:
    assert missing_operations(QueryEngine, OPERATIONS) == []


def test_every_setting_of_the_engine_has_a_backend() -> None:
    assert sorted(backend.BACKENDS) == sorted(ENGINES)
    for name in ENGINES:
        assert backend.choose(Settings(engine=name, clickhouse_url="chdb://unused")).name == name


def test_a_missing_operation_is_named() -> None:
    class Partial:
        def top_keywords(self, snapshot, as_of, req): ...

        geo_heat = None  # not a method

    assert missing_operations(Partial, ["top_keywords", "geo_heat", "query"]) == ["geo_heat", "query"]
