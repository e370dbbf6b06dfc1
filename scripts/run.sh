#!/usr/bin/env bash
# Run the product on the embedded default: demo data, SQLite accounts, in-process cache and
# limits unless REDIS_URL is set. Starts every process of the Procfile (honcho).
#   ./scripts/run.sh                 the product
#   ./scripts/run.sh --post-events   and a demo client posting about 20 events a second to the
#                                    collector, so the newest hour fills (docs/collector.md)
#   ./scripts/run.sh --new-data      first a new secret and new demo data made with it (the events
#                                    of the data directory are replaced; keys and webhooks stay)
set -euo pipefail
post_events=""
new_data=""
for arg in "$@"; do
  case "$arg" in
    --post-events) post_events=1 ;;
    --new-data) new_data=1 ;;
    *) echo "usage: scripts/run.sh [--post-events] [--new-data]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements.txt
if [ -f .env ]; then set -a; . ./.env; set +a; fi
export SIGNALS_DATA_DIR="${SIGNALS_DATA_DIR:-./data}"
export PORT="${PORT:-8000}"
py=.venv/bin/python

# The install's secret (SIGNALS_SECRET keys the privacy noise and the hash of user ids): made at
# random on the first run, kept in $SIGNALS_DATA_DIR/secret (0600), never shown; every process gets
# it from here unless the environment sets its own (scripts/install_secret.sh). Before the demo
# data: its user ids are hashed with it.
# --new-data: a new one (secret.new), in the place of the old one once the data made with it is in.
secret_file="$SIGNALS_DATA_DIR/secret${new_data:+.new}"
if [ -z "${SIGNALS_SECRET:-}" ]; then
  scripts/install_secret.sh ${new_data:+--new}
  SIGNALS_SECRET=$(head -n 1 "$secret_file")
fi
export SIGNALS_SECRET

if [ -n "$new_data" ]; then
  echo "==> --new-data: a new demo data set (1,000,000 events, 90 days) in the place of the events in $SIGNALS_DATA_DIR"
  $py -m service data demo --events "${SIGNALS_DEMO_EVENTS:-1000000}" --days 90 --replace
  if [ -f "$SIGNALS_DATA_DIR/secret.new" ]; then mv "$SIGNALS_DATA_DIR/secret.new" "$SIGNALS_DATA_DIR/secret"; fi
elif [ ! -f "$SIGNALS_DATA_DIR/GENERATION" ]; then
  echo "==> no event data in $SIGNALS_DATA_DIR: generating the demo data set (1,000,000 events, 90 days)"
  $py -m service data demo --events "${SIGNALS_DEMO_EVENTS:-1000000}" --days 90
fi

# Privacy by release (SIGNALS_PRIVACY_RELEASE=1): release every closed hour of the store before the
# API starts (a few minutes the first time; later runs release only the hours since), then the
# lander releases each hour as it closes. After --new-data a release made before (other data, the
# old secret) is made again from nothing.
case "${SIGNALS_PRIVACY_RELEASE:-0}" in
  1|true|yes|on)
    echo "==> releasing the closed hours of the store (privacy by release: docs/privacy.md)"
    $py -m service data release ${new_data:+--rebuild} ;;
  *)
    if [ -n "$new_data" ] && [ -d "$SIGNALS_DATA_DIR/release" ]; then
      echo "==> --new-data: making the release of an earlier run again, for the new data and secret"
      $py -m service data release --rebuild
    fi ;;
esac

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
# The collector (Procfile `collector:`) takes events over HTTP with ingest keys; the lander
# (`lander:`) folds them into the store within seconds.
export SIGNALS_COLLECTOR_PORT="${SIGNALS_COLLECTOR_PORT:-8002}"
echo "==> Event collector on http://127.0.0.1:$SIGNALS_COLLECTOR_PORT/api/v1/events  (ingest keys: python -m service keys create --ingest; docs/collector.md)"
# The Procfile names bare commands (gunicorn, ...): they come from the project's .venv.
export PATH="$PWD/.venv/bin:$PATH"
procfile=Procfile
if [ -n "$post_events" ]; then
  ingest_key_file=$(scripts/demo_ingest_key.sh)
  mkdir -p "$SIGNALS_DATA_DIR/run"
  procfile="$SIGNALS_DATA_DIR/run/Procfile.events"
  { cat Procfile
    echo "events: python -m connectors.sender demo --url http://127.0.0.1:$SIGNALS_COLLECTOR_PORT --key-file $ingest_key_file --rate 20"
  } > "$procfile"
  echo "==> posting about 20 demo events a second to the collector (process \`events\`): the newest hour fills"
fi
exec honcho start -f "$procfile" -p "$PORT"
