#!/usr/bin/env bash
# Installs the Debian packages splat builds with, if any is missing (apt-get; root or sudo).
# Open MPI (libopenmpi-dev, openmpi-bin) is optional for the build (multi-process training) and is
# installed so that CI runs the multi-rank tests. COLMAP and ffmpeg are programs `splat prepare`
# runs (camera poses for photos, frames of a video), not build dependencies. With --test, also what only the tests use: a
# headless browser (Chromium, and Selenium to drive it from python3) that opens the pages splat
# writes and serves, clang-format (the format check), clang with its sanitizer, libFuzzer and OpenMP runtimes (tools/dev/sanitize.sh),
# and what the Python package builds and is tested with (docs/python.md; scripts/test_python.sh).
#   scripts/deps.sh [--test]
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libpng-dev libjpeg-dev libwebp-dev zlib1g-dev
          libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libgtest-dev libopenmpi-dev openmpi-bin
          libcpp-httplib-dev colmap ffmpeg)
[ "${1:-}" = "--test" ] && packages+=(chromium chromium-driver python3 python3-selenium clang clang-format libclang-rt-14-dev
                                      libomp-dev
                                      python3-dev pybind11-dev libdlpack-dev python3-numpy python3-pytest python3-pip
                                      python3-venv python3-setuptools python3-wheel)
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
