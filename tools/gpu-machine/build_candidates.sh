#!/usr/bin/env bash
# Builds splat and splat_gpu_tests of each named commit into tools/gpu-machine/carry-v/NAME/
# (stripped, xz), for candidates.sh on the GPU machine. Reuses build-cuda (only what a commit
# changes is rebuilt) and returns to the current branch. Needs a clean working tree: it checks
# commits out.
#   tools/gpu-machine/build_candidates.sh base=main try=my-branch
# then carry ["tools/gpu-machine/carry-v"] in a call.
# The machine needs build.sh's parts staged too (libraries, golden vectors, Lego), in this call or
# an earlier one of the same warm machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: $0 NAME=REV [NAME=REV ...]" >&2; exit 2; }
git diff --quiet && git diff --cached --quiet || { echo "error: the working tree has changes; commit or stash them" >&2; exit 1; }
home=$(git symbolic-ref -q --short HEAD || git rev-parse HEAD)
trap 'git checkout -q "$home"' EXIT
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
v=tools/gpu-machine/carry-v
rm -rf "$v"
for arg in "$@"; do
  name=${arg%%=*} rev=${arg#*=}
  [ -n "$name" ] && [ "$name" != "$arg" ] || { echo "error: '$arg' is not NAME=REV" >&2; exit 2; }
  git checkout -q --detach "$rev"
  cmake --build build-cuda -j"$(nproc)" --target splat splat_gpu_tests
  mkdir -p "$v/$name"
  cp build-cuda/splat build-cuda/splat_gpu_tests "$v/$name/"
  strip "$v/$name"/*
  xz -T0 "$v/$name"/*
  echo "$name: $(git rev-parse --short=12 HEAD)"
done
. tools/gpu-machine/carry_limit.sh
size=$(du -sb "$v" | cut -f1) budget=$(part_budget)
echo "$v/: $((size / 1048576)) MiB of the $((budget / 1048576)) MiB a call can carry besides the working tree"
[ "$size" -le "$budget" ] || { echo "error: $v/ is too large for one call: build fewer candidates at a time" >&2; exit 1; }
