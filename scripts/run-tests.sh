#!/usr/bin/env bash
# Run the whole test suite in the project's venv (CI runs this through `make test`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Debian packages the tests use (the compose parser, ...): scripts/system-packages.txt
./scripts/system-packages.sh
# JavaScript the browser test injects (axe-core): tests/browser/package-lock.json
./scripts/browser-packages.sh
# Airflow writes ~/airflow when AIRFLOW_HOME is unset; keep everything under the project.
export AIRFLOW_HOME="${AIRFLOW_HOME:-$PWD/.state/airflow}"
# Two workers (pytest-xdist), each taking whole modules (module-scoped Spark jobs stay on one worker),
# slowest modules first (tests/conftest.py; --no-loadscope-reorder keeps that order: by default xdist hands out
# the modules with the most tests first, which left a 7-minute module alone at the end); FTOPS_TEST_WORKERS=0 runs
# in one process.
# --durations: the slowest tests are named in every run (CI time is watched against its 40-min aim).
workers="${FTOPS_TEST_WORKERS:-2}"
# The tests' Spark JVMs map Spark's classes from an archive built once per JDK and Spark (about a minute;
# tests/spark_class_archive.py). Importing the conftest here builds it where its progress shows: inside
# pytest the message would only appear at the end.
.venv/bin/python -c "import tests.conftest"
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
