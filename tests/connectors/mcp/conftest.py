"""The MCP server's tests: gunicorn from the Procfile on the fixture data and the Procfile's `mcp:`
process in front of it, once per module (tests.support.mcp_stack has the session helpers)."""

from __future__ import annotations

import pytest

from tests.support.fixture_data import write_fixture_store
from tests.support.mcp_stack import Stack, api_process, mcp_process
from tests.support.processes import create_key


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("mcp") / "data"
    write_fixture_store(data_dir)
    keys = {tier: create_key(data_dir, tier) for tier in ("observer", "analyst", "professional")}
    keys["professional2"] = create_key(data_dir, "professional")
    # no key cache in the API, so a revoked key is refused at once
    with api_process(data_dir, SIGNALS_AUTH_CACHE_SECONDS="0") as (api, api_log), mcp_process(api) as (mcp, mcp_log):
        yield Stack(data_dir, api, mcp, keys)
    for key in keys.values():
        assert key not in api_log[0] and key not in mcp_log[0], "an API key must never be logged"
    assert "Traceback" not in mcp_log[0], mcp_log[0]
