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
# The tests run in an environment of their own, never the one a user runs heard from: an
# editable install and the dev extras there would change a running `heard serve` under it
# (issue 70). $HEARD_TEST_VENV names it (CI's .ci/run passes the one it made); .venv-test by
# default, made here when missing (PEP 668: no installs into the system's Python).
venv="${HEARD_TEST_VENV:-.venv-test}"
echo "== the test command changes only this: heard[dev] into $venv (nothing else of yours), and"
echo "   Debian packages when missing (espeak-ng, sox, chromium; postgresql and redis-server when"
echo "   none answer at the test URLs: the tests use throwaway servers on free ports, stopped"
echo "   afterwards, but on a machine run by systemd the packages' own services stay enabled)"
if [ ! -e "$venv" ]; then
  echo "== making a virtual environment in $venv"
  python3 -m venv "$venv"
elif ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  if [ -n "${HEARD_TEST_VENV:-}" ]; then  # someone else's: not ours to remake
    echo "tools/test.sh: $venv has no working pip; give HEARD_TEST_VENV a venv made by python3 -m venv" >&2
    exit 2
  fi
  echo "== $venv was left half-made: making it again"
  python3 -m venv --clear "$venv"
fi
py="$venv/bin/python"
# what the tests run by name (heard, celery) comes from there too, not from an active venv
VIRTUAL_ENV=$(cd "$venv" && pwd)
export VIRTUAL_ENV PATH="$VIRTUAL_ENV/bin:$PATH"

# System packages the tests speak with (espeak-ng), measure audio with (sox) and drive the
# captions page with (chromium, headless).
missing=()
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v sox >/dev/null || missing+=(sox)
command -v chromium >/dev/null || missing+=(chromium)
if ((${#missing[@]})); then
  echo "== installing Debian packages the tests need: ${missing[*]}"
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
# heard's data folder (its default SQLite store, uploads) is a temporary one for the run, so a
# test that uses the default store never reads or writes the user's own.
data=$(mktemp -d)
trap 'rm -rf "$site" "$data"' EXIT
# heard's own settings from the user's shell (HEARD_DATABASE_URL, HEARD_MODEL...) would change
# what the tests run against: only the tests' own (HEARD_TEST_*) reach them.
for name in $(compgen -e | grep '^HEARD_' | grep -v '^HEARD_TEST_'); do unset "$name"; done
XDG_DATA_HOME="$data" "$py" tools/services.py -- "$py" -m pytest "$@"
