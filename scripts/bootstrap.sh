#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install a requirements file into it; skipped when unchanged.
# Usage: scripts/bootstrap.sh requirements.txt|requirements-dev.txt
set -euo pipefail
cd "$(dirname "$0")/.."
reqs="${1:-requirements.txt}"

python_bin=""
for candidate in python3.11 python3.12 python3.13 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    python_bin="$candidate"; break
  fi
done
if [ -z "$python_bin" ]; then
  echo "error: Python 3.11 or newer is needed (none found on PATH)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $python_bin" >&2
  "$python_bin" -m venv .venv
fi

# Reinstall only when the requirement files changed since the last successful install.
stamp=".venv/.installed-$(basename "$reqs")"
digest=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  echo "==> installing $reqs into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$reqs"
  echo "$digest" > "$stamp"
fi
