#!/usr/bin/env bash
# Installs the Debian packages splat builds with, if any is missing (apt-get; root or sudo).
# Open MPI (libopenmpi-dev, openmpi-bin) is optional for the build (multi-process training) and is
# installed so that CI runs the multi-rank tests. With --test, also what only the tests use: a
# headless browser (Chromium) that opens the pages splat writes, and python3.
#   scripts/deps.sh [--test]
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libpng-dev libjpeg-dev libwebp-dev zlib1g-dev
          libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libgtest-dev libopenmpi-dev openmpi-bin)
[ "${1:-}" = "--test" ] && packages+=(chromium python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
