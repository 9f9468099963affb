#!/usr/bin/env bash
# Install the Debian packages listed in scripts/system-packages.txt that are missing (tests need them).
# Runs apt-get as root (or through sudo); on a machine without apt it says what to install and fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t wanted < <(grep -v '^\s*#' scripts/system-packages.txt | awk 'NF {print $1}')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "system-packages: please install ${missing[*]} (no apt-get here)" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "system-packages: installing ${missing[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
