#!/usr/bin/env bash
# Quick start: build, then train on the generated demo scene (GPU if present, else CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/splat demo "$@"
