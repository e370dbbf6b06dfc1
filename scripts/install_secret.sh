#!/usr/bin/env bash
# The install's secret for `scripts/run.sh` (SIGNALS_SECRET: it keys the privacy noise and the hash
# of user ids): made at random on the first run, kept in $SIGNALS_DATA_DIR/secret (mode 0600, beside
# the demo key) and used again on every later run, so two installs never share one and no secret in
# the repository ever serves. Never prints it: run.sh reads the file. What it did goes to stderr.
#
# It must exist before the demo data is made (the user ids are stored as hashes keyed by it) and
# stay the same afterwards: event data without the secret it was made with is refused here (an
# earlier run.sh made its data with a public development secret; or the file was deleted), with
# how to start the data afresh. `--new`: a new secret in $SIGNALS_DATA_DIR/secret.new, whatever is
# there (scripts/run.sh --new-data makes the demo data again with it, then puts it in the old one's
# place: if making the data fails, the old data keeps its old secret).
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir="${SIGNALS_DATA_DIR:-./data}"
secret_file="$data_dir/secret"
new=""
case "${1:-}" in
  --new) new=1 ;;
  "") ;;
  *) echo "usage: scripts/install_secret.sh [--new]" >&2; exit 2 ;;
esac
if [ -z "$new" ] && [ -s "$secret_file" ]; then
  echo "==> the install's secret (SIGNALS_SECRET), made by an earlier run, kept in $secret_file" >&2
  exit 0
fi
if [ -z "$new" ] && [ -f "$data_dir/GENERATION" ]; then
  cat >&2 <<EOF
error: $data_dir holds event data but no secret ($secret_file): its user ids were hashed with another
    secret (an earlier ./scripts/run.sh used a public development secret, or the file was deleted),
    and every process of this install must use the one that made its data.
    Either set SIGNALS_SECRET to that secret, or make new demo data with a new secret (the events
    in $data_dir are replaced; keys, webhooks and the demo key stay):
      ./scripts/run.sh --new-data
EOF
  exit 1
fi
mkdir -p "$data_dir"
kept="$secret_file${new:+.new}"
# 48 random bytes, URL-safe text (64 characters); written whole or not at all, readable by you only.
(umask 077 && .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(48))' > "$kept.tmp" \
  && mv "$kept.tmp" "$kept")
echo "==> a new secret for this install (SIGNALS_SECRET), kept in $secret_file (mode 0600, never shown; the data" \
  "is made with it: deleting it means making the data again)" >&2
