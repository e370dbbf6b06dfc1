#!/usr/bin/env bash
# The dashboard screenshots of docs/dashboard.md and the README (docs/dashboard/*.png), made on
# purpose rather than by the test suite (whose browser tests save theirs to a temporary
# directory): the dashboard's browser
# tests run with SIGNALS_SCREENSHOTS_DIR=docs/dashboard, in headless Debian Chromium at 1440 px,
# against the real API and dashboard on the run command's demo data (1M events, seed 7), which the
# tests' fixtures start with the tests' own SIGNALS_SECRET (tests/support/secret.py).
# Installs chromium and chromium-driver with apt when missing. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements-dev.txt
scripts/install_chromium.sh
export SIGNALS_SCREENSHOTS_DIR="$PWD/docs/dashboard"
exec .venv/bin/python -m pytest -q tests/dashboard/test_dashboard_layout.py \
  tests/dashboard/test_dashboard_state.py tests/dashboard/test_dashboard_browser.py "$@"
