#!/usr/bin/env bash
# Run the whole test suite. Installs the test dependencies into .venv, type-checks service/ and
# cache/ with mypy (pyproject.toml [tool.mypy]; a type error fails the command before any test
# runs), then runs pytest.
# Tests use the real Redis (REDIS on 127.0.0.1:6379, or a throwaway redis-server the suite
# starts itself) and the real PostgreSQL (SIGNALS_TEST_POSTGRES_URL, default the local `test` db).
# The Apps Script functions run under Node's test runner (node --test, Node 18+), started by
# tests/connectors/test_apps_script.py with answers it records from the API; Node must be on PATH.
# The TypeScript client (connectors/typescript) is installed from its package-lock.json (npm ci,
# from npm's cache when it has the packages) and tested with `npm test` (its types, its bundle's
# staleness, node:test against a fake fetch: a few seconds) before pytest, in both tiers.
# The dashboard's browser tests run Debian's chromium + chromium-driver, installed when missing;
# they save their screenshots to a temporary directory (docs/dashboard.md's and the README's are
# made by scripts/screenshots.sh), so a run leaves `git status` as it was.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    the quick tier: no server process, no browser, no large data set,
#                              on two pytest workers (tests/support/tiers.py says what is left out)
# Extra arguments go to pytest, e.g. scripts/test.sh -k openapi, scripts/test.sh --quick -k params
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements-dev.txt
echo "==> mypy (service/, cache/)" >&2
.venv/bin/mypy
echo "==> the TypeScript client (connectors/typescript: npm ci, npm test)" >&2
(cd connectors/typescript && npm ci --prefer-offline --no-audit --no-fund --loglevel=error && npm test --silent)
if [ "${1:-}" = "--quick" ]; then
  shift
  exec .venv/bin/python -m pytest -m "not process and not slow" -n 2 "$@"
fi
scripts/install_chromium.sh  # the dashboard's browser tests: Debian chromium + chromium-driver, only when missing
exec .venv/bin/python -m pytest "$@"
