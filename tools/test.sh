#!/usr/bin/env bash
# The test command: installs what the tests need, then lint, type-check and the whole suite,
# with PostgreSQL and Redis up (tools/services.py uses the ones at HEARD_TEST_DATABASE_URL and
# HEARD_TEST_REDIS_URL, or installs and starts throwaway ones, and stops what it started).
# Usage: bash tools/test.sh [--newest] [extra pytest args]
# heard[dev] is installed at the releases in constraints.txt (the ones the suite last passed
# with, per Python version), so a run can be repeated exactly; --newest takes the newest
# release of every dependency instead, so that a release that breaks heard fails here first.
set -euo pipefail
cd "$(dirname "$0")/.."
pins=(-c constraints.txt)
if [ "${1:-}" = "--newest" ]; then
  shift
  pins=(--upgrade --upgrade-strategy eager)
fi
# The active virtual environment's python; with none active, .venv's (made here when missing:
# Debian and Ubuntu let pip install nothing into the system's Python, PEP 668).
if [ -n "${VIRTUAL_ENV:-}" ]; then
  py=python
else
  if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then  # none, or one left half-made
    echo "== making a virtual environment in .venv"
    python3 -m venv --clear .venv
  fi
  py=.venv/bin/python
fi

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

echo "== installing heard[dev] (${pins[*]})"
"$py" -m pip install --quiet --disable-pip-version-check "${pins[@]}" -e ".[dev]" ||
  "$py" -m pip install --disable-pip-version-check "${pins[@]}" -e ".[dev]"  # again, saying why
"$py" -c 'import sys, av, numpy; print("== Python", sys.version.split()[0], "PyAV", av.__version__, "numpy", numpy.__version__)'

echo "== ruff"
"$py" -m ruff format --check .
"$py" -m ruff check .
echo "== mypy"
"$py" -m mypy
echo "== docs (mkdocs build --strict)"
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
NO_MKDOCS_2_WARNING=1 "$py" -m mkdocs build --strict --quiet --site-dir "$site"
echo "== pytest"
"$py" tools/services.py -- "$py" -m pytest "$@"
