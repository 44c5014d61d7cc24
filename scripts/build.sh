#!/usr/bin/env bash
# Configures and builds splat into build/ (CPU backend; the CUDA backend too when nvcc is found).
# Extra arguments go to cmake's configure step, e.g. -DSPLAT_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
