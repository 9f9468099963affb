#!/usr/bin/env bash
# Install the JavaScript the browser tests inject into pages (tests/browser/package-lock.json: axe-core) into
# tests/browser/node_modules, from the lock file (npm ci). Idempotent: skipped while the lock is unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../tests/browser"
stamp=node_modules/.ftops-lock.sha
want=$(sha256sum package-lock.json | cut -d' ' -f1)
[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && exit 0
command -v npm >/dev/null || { echo "browser-packages: npm is needed (NodeSource's nodejs has it; Debian's own nodejs needs its npm package: apt-get install npm)" >&2; exit 1; }
echo "browser-packages: installing tests/browser/package-lock.json with npm ci" >&2
npm ci --no-audit --no-fund --silent
echo "$want" > "$stamp"
