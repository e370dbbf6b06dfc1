"""The quick tier (`./scripts/test.sh --quick`, or `pytest -m "not process and not slow"`): what a
newcomer runs in about a minute, with no browser and no server process.

A test is `slow` when it builds one of the large demo data sets, or belongs to a module that runs
the product's commands as processes or waits on real time (listed below, with the reason). The
`process` marker (real gunicorn, MCP, dashboard, browser) is set by the tests themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Fixtures that generate large data sets (seconds each, per session).
SLOW_FIXTURES = {"default_demo_dir"}

# Modules whose tests run the product's command line or a worker as processes, or sleep on purpose,
# by their path below tests/.
SLOW_MODULES = {
    "store/test_ingest_crash.py",         # kills real ingest processes at each stage
    "processes/test_processes.py",        # the command line, as processes
    "connectors/test_apps_script.py",     # node --test
    "webhooks/test_webhooks_worker.py",   # retries and timeouts in real time; worker processes
    "cache/test_wire.py",                 # Redis connections broken and restored
    "cache/test_redis_outage.py",         # a throwaway redis-server stopped and started
    "accounts/test_accounts_outage.py",   # PostgreSQL behind a proxy that is cut
    "processes/test_slow_clients.py",     # waits out client timeouts
    "store/test_demo.py",                 # one million demo events
    "release/test_release_kill.py",       # kills `data release` processes mid-way
    "store/test_demo_trending.py",
    "privacy/test_privacy_caps.py",       # heavy-tailed cells of many users
    "privacy/test_privacy_budget_kill.py",  # kills processes charging the privacy ledger
    "collector/test_lander_crash.py",     # kills real landing rounds at each stage
    "collector/test_count.py",            # the lander and `data count` as processes, chdb among them
    "collector/test_collector_processes.py",  # the Procfile's collector and lander; kill -9
    "collector/test_carrier_processes.py",    # killed landers over RabbitMQ; the Procfile's processes with it
}
TESTS = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = sorted(path for path in SLOW_MODULES if not (TESTS / path).is_file())
    if missing:  # a module moved or renamed would otherwise join the quick tier unnoticed
        raise pytest.UsageError(f"tests/support/tiers.py names test modules that do not exist: {missing}")
    slow = pytest.mark.slow
    for item in items:
        module = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        if module in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(slow)
