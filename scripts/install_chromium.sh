#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the dashboard's browser tests and benchmark
# (tests/dashboard/test_dashboard_browser.py, bench/bench_dashboard.py), only when /usr/bin/chromium or
# /usr/bin/chromedriver is missing. No browser is downloaded from anywhere but the apt sources.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "==> installing chromium and chromium-driver (apt) for the dashboard's browser tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
