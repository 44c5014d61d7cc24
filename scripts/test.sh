#!/usr/bin/env bash
# Build and run the test suite. GPU tests (ctest label "gpu") run only where a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh
label_args=()
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || label_args=(-LE gpu)
ctest --test-dir build --output-on-failure -j"$(nproc)" "${label_args[@]}"
