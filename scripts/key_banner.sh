#!/usr/bin/env bash
# What scripts/run.sh shows of the demo key (scripts/demo_key.sh): the whole key first, alone on its
# line, before anything else that could be taken for it; then where it is kept and how to check it.
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir="${SIGNALS_DATA_DIR:-./data}"
port="${PORT:-8000}"
notes=$(mktemp)
trap 'rm -f "$notes"' EXIT
if ! key=$(scripts/demo_key.sh 2>"$notes"); then
  cat "$notes" >&2
  exit 1
fi
echo "==> your API key (Professional plan), the whole next line:"
echo "$key"
sed 's/^==> /    /' "$notes"
echo "    check it: curl -H \"Authorization: Bearer \$(head -n 1 $data_dir/demo-key)\" http://127.0.0.1:$port/api/v1/account"
