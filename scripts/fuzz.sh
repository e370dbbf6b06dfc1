#!/usr/bin/env bash
# Fuzz the API from its own OpenAPI document with schemathesis, every check on, against the real
# gunicorn of the Procfile. Zero failures expected; exits non-zero otherwise.
#
# Self-contained: schemathesis goes into its own venv (.venv-fuzz, kept out of the project's
# requirements), the server runs on a free port of 127.0.0.1 with a fresh demo data set (200,000
# events) and accounts database in a temporary directory, and a fresh Professional key. Requests
# are paced at 4 a second, under the Professional limit of 300 a minute, so no 429 is provoked.
# Takes about 5 minutes. Extra arguments go to `schemathesis run`, e.g. --seed 1 or --max-examples 10;
# FUZZ_VENV=path uses (or makes) another venv for schemathesis.
# Also fails when the server logged a traceback, the key or the secret (a random one for the run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh requirements.txt

root=$PWD
fuzz_venv="${FUZZ_VENV:-$root/.venv-fuzz}"
if [ ! -x "$fuzz_venv/bin/schemathesis" ]; then
  echo "==> installing schemathesis into $fuzz_venv" >&2
  python3 -m venv "$fuzz_venv"
  "$fuzz_venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis>=4,<5"
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Only the settings the run needs: none inherited from the caller's shell or .env; the run's own
# secret (SIGNALS_SECRET: the processes refuse to start without one).
py=.venv/bin/python
secret=$($py -c 'import secrets; print(secrets.token_urlsafe(48))')
run_env=(env -u REDIS_URL -u WEB_CONCURRENCY SIGNALS_DATA_DIR="$work/data" SIGNALS_ACCOUNTS_URL= SIGNALS_HOST=127.0.0.1
         SIGNALS_SECRET="$secret")
echo "==> demo data (200,000 events, 90 days) in $work/data" >&2
"${run_env[@]}" $py -m service data demo --events 200000 --days 90 --no-progress >&2
key=$("${run_env[@]}" $py -m service keys create --tier professional --subscription fuzz | tail -n 1)
port=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
api="http://127.0.0.1:$port"

echo "==> gunicorn on $api (log: $work/server.log)" >&2
web=$(sed -n 's/^web: *//p' Procfile)
# Host names resolve without DNS in this server (scripts/fuzz_resolver/sitecustomize.py says why).
PATH="$PWD/.venv/bin:$PATH" "${run_env[@]}" PYTHONPATH="$root/scripts/fuzz_resolver" PORT="$port" $web \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  if curl -fsS "$api/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "error: the server stopped" >&2; exit 1; fi
  sleep 0.2
done
curl -fsS "$api/readyz" >/dev/null

# Run from the temporary directory: schemathesis keeps its cache (.schemathesis/) in the current one.
status=0
(cd "$work" && "$fuzz_venv/bin/schemathesis" --config-file "$root/scripts/fuzz.toml" run "$api/api/v1/openapi" \
  --url "$api" -H "Authorization: Bearer $key" --checks all --rate-limit 4/s --max-examples 25 "$@") || status=$?

if grep -q "Traceback" "$work/server.log"; then
  grep -n -A20 "Traceback" "$work/server.log" >&2; echo "error: the server logged a traceback" >&2; status=1
fi
if grep -qF "$key" "$work/server.log"; then echo "error: the API key appears in the server log" >&2; status=1; fi
if grep -qF "$secret" "$work/server.log"; then echo "error: the secret appears in the server log" >&2; status=1; fi
requests=$(grep -c '" [0-9][0-9][0-9] ' "$work/server.log" || true)
echo "==> $requests requests served; schemathesis exit status $status" >&2
exit "$status"
