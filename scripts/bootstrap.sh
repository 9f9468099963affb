#!/usr/bin/env bash
# Set up everything ftops needs in ./.venv from the project's own files (requirements.lock).
# Idempotent: a second run only re-syncs. Prints what is missing when a prerequisite cannot be
# installed from here (Python 3.11+, Java 17+).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { echo "ftops setup: $*" >&2; exit 1; }

py="${FTOPS_PYTHON:-python3}"
command -v "$py" >/dev/null || die "Python 3.11+ is required and '$py' was not found on PATH (set FTOPS_PYTHON)."
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "Python 3.11+ is required; '$py' is $("$py" -V 2>&1)."
# `make check` sets FTOPS_SETUP_WITHOUT_JAVA=1: its tests start no JVM, so a contributor needs no Java for them.
if [ "${FTOPS_SETUP_WITHOUT_JAVA:-}" != 1 ]; then
  command -v java >/dev/null || die "Java 17+ is required by Spark and 'java' was not found on PATH (install OpenJDK 17)."
  jv=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ -n "$jv" ] && [ "$jv" -ge 17 ] || die "Java 17+ is required by Spark; found: $(java -version 2>&1 | head -1)."
fi

tools="$root/.tools"
if [ ! -x "$tools/bin/uv" ]; then
  echo "ftops setup: installing uv into .tools/"
  "$py" -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "uv==0.13.8"
fi
uv="$tools/bin/uv"

if [ ! -x .venv/bin/python ]; then
  echo "ftops setup: creating .venv"
  "$uv" venv --quiet -p "$py" .venv
fi
stamp=.venv/.ftops-lock.sha
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "ftops setup: syncing .venv with requirements.lock (first run downloads and builds pyspark: a few minutes)"
  # sync, not install: install would re-resolve and bring back pyspark-client (see overrides.txt).
  "$uv" pip sync --quiet -p .venv/bin/python requirements.lock
  "$uv" pip install --quiet --no-deps -p .venv/bin/python -e .
  echo "$want" > "$stamp"
fi
