"""The quick tier (`./scripts/test.sh --quick`, or `pytest -m "not process and not slow"`): what a
newcomer runs in about a minute, with no browser and no server process.

A test is `slow` when it builds one of the large demo data sets, or belongs to a module that runs
the product's commands as processes or waits on real time (listed below, with the reason). The
`process` marker (real gunicorn, MCP, dashboard, browser) is set by the tests themselves.
"""

from __future__ import annotations

import pytest

# Fixtures that generate large data sets (seconds each, per session).
SLOW_FIXTURES = {"default_demo_dir"}

# Modules whose tests run the product's command line or a worker as processes, or sleep on purpose.
SLOW_MODULES = {
    "test_ingest_crash",       # kills real ingest processes at each stage
    "test_processes",          # the command line, as processes
    "test_apps_script",        # node --test
    "test_webhooks_worker",    # retries and timeouts in real time; worker processes
    "test_wire",               # Redis connections broken and restored
    "test_redis_outage",       # a throwaway redis-server stopped and started
    "test_accounts_outage",    # PostgreSQL behind a proxy that is cut
    "test_slow_clients",       # waits out client timeouts
    "test_demo",               # one million demo events
    "test_demo_trending",
    "test_privacy_caps",       # heavy-tailed cells of many users
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
