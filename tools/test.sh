#!/usr/bin/env bash
# The test command: installs what the tests need, then lint, type-check and the whole suite,
# with PostgreSQL and Redis up (tools/services.py uses the ones at HEARD_TEST_DATABASE_URL and
# HEARD_TEST_REDIS_URL, or installs and starts throwaway ones, and stops what it started).
# Usage: bash tools/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests speak with (espeak-ng), measure audio with (sox) and drive the
# captions page with (chromium, headless).
missing=()
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v sox >/dev/null || missing+=(sox)
command -v chromium >/dev/null || missing+=(chromium)
if ((${#missing[@]})); then
  echo "== installing system packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "== installing heard[dev]"
python -m pip install --quiet --disable-pip-version-check -e ".[dev]"

echo "== ruff"
python -m ruff format --check .
python -m ruff check .
echo "== mypy"
python -m mypy
echo "== pytest"
python tools/services.py -- python -m pytest "$@"
