#!/usr/bin/env bash
# Builds splat and splat_gpu_tests of each named commit into .carry-v/NAME/ (stripped, xz), for
# scripts/device_candidates.sh on the GPU machine. Reuses build-cuda (only what a commit changes is
# rebuilt) and returns to the current branch. Needs a clean working tree: it checks commits out.
#   scripts/build_candidates.sh base=main try=my-branch      # then carry [".carry", ".carry-v"]
# Run scripts/device_build.sh once before, for .carry/ (libraries, golden vectors, Lego subset).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 NAME=REV [NAME=REV ...]" >&2; exit 2; }
git diff --quiet && git diff --cached --quiet || { echo "error: the working tree has changes; commit or stash them" >&2; exit 1; }
home=$(git symbolic-ref -q --short HEAD || git rev-parse HEAD)
trap 'git checkout -q "$home"' EXIT
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
rm -rf .carry-v
for arg in "$@"; do
  name=${arg%%=*} rev=${arg#*=}
  [ -n "$name" ] && [ "$name" != "$arg" ] || { echo "error: '$arg' is not NAME=REV" >&2; exit 2; }
  git checkout -q --detach "$rev"
  cmake --build build-cuda -j"$(nproc)" --target splat splat_gpu_tests
  mkdir -p ".carry-v/$name"
  cp build-cuda/splat build-cuda/splat_gpu_tests ".carry-v/$name/"
  strip ".carry-v/$name"/*
  xz -T0 ".carry-v/$name"/*
  echo "$name: $(git rev-parse --short=12 HEAD)"
done
du -sh .carry .carry-v 2>/dev/null || true
total=$(du -scm .carry .carry-v 2>/dev/null | tail -1 | cut -f1)
[ "$total" -lt 64 ] || { echo "error: .carry + .carry-v are ${total} MiB, over the 64 MiB a device call carries" >&2; exit 1; }
