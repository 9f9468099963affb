#!/usr/bin/env bash
# make check: the quick tier for contributors, the tests that need neither a JVM nor Airflow processes (about
# 2-3 minutes on a 2-core machine, against make test's 40-72; CONTRIBUTING.md). FTOPS_TEST_TIER=check leaves out every
# test marked `full` and runs the rest where no JVM and no Airflow can start: a test that tries fails, named
# (tests/conftest.py, tests/check_tier.py). Arguments go to pytest (a path, -k, -x).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export FTOPS_TEST_TIER=check
workers="${FTOPS_TEST_WORKERS:-2}"
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder --durations=10 "$@"
