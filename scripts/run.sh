#!/usr/bin/env bash
# Run the product on the embedded default: demo data, SQLite accounts, in-process cache and
# limits unless REDIS_URL is set. Starts every process of the Procfile (honcho).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements.txt
if [ -f .env ]; then set -a; . ./.env; set +a; fi
export SIGNALS_DATA_DIR="${SIGNALS_DATA_DIR:-./data}"
export PORT="${PORT:-8000}"
py=.venv/bin/python

if [ ! -f "$SIGNALS_DATA_DIR/GENERATION" ]; then
  echo "==> no event data in $SIGNALS_DATA_DIR: generating the demo data set (1,000,000 events, 90 days)"
  $py -m service data demo --events "${SIGNALS_DEMO_EVENTS:-1000000}" --days 90
fi

# The key made once, kept in $SIGNALS_DATA_DIR/demo-key (0600), shown again on every run: whole and
# first (scripts/key_banner.sh).
scripts/key_banner.sh
key=$(head -n 1 "$SIGNALS_DATA_DIR/demo-key")
if [ -z "${REDIS_URL:-}" ]; then
  echo "==> REDIS_URL is not set: cache and rate limits are in-process, so the API runs one worker."
  echo "    Set REDIS_URL for shared limits and cores + 1 workers."
fi
echo "==> API on http://127.0.0.1:$PORT  (its Prometheus metrics on http://127.0.0.1:${SIGNALS_METRICS_PORT:-9464}/metrics)"
echo "    try: curl -H \"Authorization: Bearer $key\" http://127.0.0.1:$PORT/api/v1/signals/top-keywords"
# The dashboard and the MCP server call the API from this machine for their callers and name each
# caller in X-Forwarded-For; the API believes it from these addresses (and they believe a proxy's).
export SIGNALS_TRUSTED_PROXIES="${SIGNALS_TRUSTED_PROXIES:-127.0.0.1/32,::1/128}"
# The MCP server (Procfile `mcp:`) calls the API started here, on its own port.
export SIGNALS_API_URL="${SIGNALS_API_URL:-http://127.0.0.1:$PORT}"
export SIGNALS_MCP_PORT="${SIGNALS_MCP_PORT:-8001}"
echo "==> MCP server (Professional keys) on http://127.0.0.1:$SIGNALS_MCP_PORT/mcp  (docs/mcp.md)"
# The dashboard (Procfile `dashboard:`) calls the same API with each viewer's own key.
export SIGNALS_DASHBOARD_PORT="${SIGNALS_DASHBOARD_PORT:-8050}"
echo "==> Dashboard on http://127.0.0.1:$SIGNALS_DASHBOARD_PORT  (sign in with the key above; docs/dashboard.md)"
# The Procfile names bare commands (gunicorn, ...): they come from the project's .venv.
export PATH="$PWD/.venv/bin:$PATH"
exec honcho start -f Procfile -p "$PORT"
