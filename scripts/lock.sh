#!/usr/bin/env bash
# Recompile requirements.lock from requirements.in (pyspark-client dropped, see overrides.txt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x .tools/bin/uv ] || ./scripts/bootstrap.sh
.tools/bin/uv pip compile -q -p 3.11 requirements.in --override overrides.txt -o requirements.lock
echo "requirements.lock: $(grep -c '==' requirements.lock) pinned packages"
