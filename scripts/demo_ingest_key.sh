#!/usr/bin/env bash
# The ingest key of `scripts/run.sh --post-events`: made once, kept in
# $SIGNALS_DATA_DIR/demo-ingest-key (mode 0600) and used again on later runs, as scripts/demo_key.sh
# keeps the Professional demo key. A kept key that is no longer active is replaced. Prints what it
# did on stderr and the key file's path alone on stdout (the key itself is never printed).
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir="${SIGNALS_DATA_DIR:-./data}"
key_file="$data_dir/demo-ingest-key"
py=.venv/bin/python
if [ -s "$key_file" ]; then
  key=$(head -n 1 "$key_file")
  # `keys list` shows each key's prefix (sig_ingest_ and 7 characters) and its status, last.
  status=$($py -m service keys list | awk -v prefix="${key:0:18}" '$1 == prefix {print $NF}')
  if [ "$status" = "active" ]; then
    echo "==> the demo ingest key made by an earlier run (kept in $key_file)" >&2
    echo "$key_file"
    exit 0
  fi
  echo "==> the demo ingest key in $key_file is ${status:-not in the accounts database}: making a new one" >&2
fi
key=$($py -m service keys create --ingest --name demo-events | tail -n 1)
mkdir -p "$data_dir"
(umask 077 && printf '%s\n' "$key" > "$key_file.tmp" && mv "$key_file.tmp" "$key_file")
echo "==> a demo ingest key, kept in $key_file (mode 0600)" >&2
echo "$key_file"
