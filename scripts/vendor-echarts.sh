#!/usr/bin/env bash
# Vendor Apache ECharts (the console's charts) into the provider's package data, from the npm registry, checked
# against the tarball's published sha512 (npm's "integrity"). Run by hand to move to another version: change VERSION
# and INTEGRITY (`npm view echarts@X dist.integrity`), run, commit plugins/ftops_provider/ui/static/.
# The files are committed so that the wheel and a clone work with no network and no JavaScript build step.
set -euo pipefail
VERSION=6.1.0
INTEGRITY=sha512-q0yaFPggC9FUdsWH4blavRWFmxdrIodbkoKNAjJudAI6CA9gNPxHtV2RcZNEepZVlk4yvBYkOkbk6HIVpIyHZA==
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=plugins/ftops_provider/ui/static
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "echarts@$VERSION" --silent >/dev/null)
got="sha512-$(openssl dgst -sha512 -binary "$work/echarts-$VERSION.tgz" | base64 -w0)"
[ "$got" = "$INTEGRITY" ] || { echo "vendor-echarts: echarts-$VERSION.tgz is $got, not the pinned $INTEGRITY" >&2; exit 1; }
tar -xzf "$work/echarts-$VERSION.tgz" -C "$work"
cp "$work/package/dist/echarts.min.js" "$out/echarts-$VERSION.min.js"
cat "$work/package/LICENSE" "$work/package/NOTICE" > "$out/echarts-$VERSION.LICENSE"
echo "vendor-echarts: $out/echarts-$VERSION.min.js ($(wc -c < "$out/echarts-$VERSION.min.js") bytes)"
