#!/usr/bin/env bash
# The Professional demo key of `scripts/run.sh`: made once, kept in $SIGNALS_DATA_DIR/demo-key
# (mode 0600, readable by you only) and printed again on later runs, so keys do not pile up in
# `keys list`. A kept key that is no longer active (revoked, expired, or another accounts
# database) is replaced by a new one. Prints what it did on stderr (never any part of the key) and
# the key alone on stdout. scripts/key_banner.sh shows it to a person (scripts/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir="${SIGNALS_DATA_DIR:-./data}"
key_file="$data_dir/demo-key"
py=.venv/bin/python
key=""
if [ -s "$key_file" ]; then
  key=$(head -n 1 "$key_file")
  # `keys list` shows each key's prefix (sig_live_ and 7 characters) and its status, last.
  status=$($py -m service keys list | awk -v prefix="${key:0:16}" '$1 == prefix {print $NF}')
  if [ "$status" = "active" ]; then
    echo "==> the Professional demo key made by an earlier run, kept in $key_file" >&2
    echo "$key"
    exit 0
  fi
  echo "==> the demo key in $key_file is ${status:-not in the accounts database}: making a new one" >&2
fi
key=$($py -m service keys create --tier professional --subscription demo | tail -n 1)
mkdir -p "$data_dir"
(umask 077 && printf '%s\n' "$key" > "$key_file.tmp" && mv "$key_file.tmp" "$key_file")
echo "==> a new Professional demo key, kept in $key_file (mode 0600) and shown again on every run" >&2
# No part of the key on stderr: a person (or a script) reading the output must find the key once,
# whole, on stdout (a 16-character prefix printed first was taken for the key).
echo "    (revoke it with: .venv/bin/python -m service keys revoke \"\$(head -n 1 $key_file)\"; make more with: keys create --tier analyst)" >&2
echo "$key"
