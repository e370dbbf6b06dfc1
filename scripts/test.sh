#!/usr/bin/env bash
# Run the whole test suite. Installs the test dependencies into .venv, then runs pytest.
# Tests use the real Redis (REDIS on 127.0.0.1:6379, or a throwaway redis-server the suite
# starts itself) and the real PostgreSQL (SIGNALS_TEST_POSTGRES_URL, default the local `test` db).
# The Apps Script functions run under Node's test runner (node --test, Node 18+), started by
# tests/test_apps_script.py with answers it records from the API; Node must be on PATH.
# The dashboard's browser tests run Debian's chromium + chromium-driver, installed when missing.
# Extra arguments go to pytest, e.g. scripts/test.sh -k openapi
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements-dev.txt
scripts/install_chromium.sh  # the dashboard's browser tests: Debian chromium + chromium-driver, only when missing
exec .venv/bin/python -m pytest "$@"
