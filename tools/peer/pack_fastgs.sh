#!/usr/bin/env bash
# Packs FastGS (CVPR 2026) for tools/peer/fastgs.sh into the part tools/gpu-machine/carry-peer/
# (the GPU machine has no network: FastGS and its three CUDA extensions are built there, patched
# for CUDA 13 by tools/peer/fastgs_patch.py). Carry it like build.sh's parts: env.sh stages it.
#   tools/peer/pack_fastgs.sh FASTGS_GIT_DIR
# FASTGS_GIT_DIR: a bare clone of fastgs/FastGS (the fetch tool's snapshot); its HEAD's Python
# code and submodule sources are packed (not its prebuilt .so files, glm's docs or images).
# FastGS imports plyfile and websockets, which the machine's Python lacks (and Debian has no
# plyfile): fastgs.sh puts tools/peer/shim/ (minimal stand-ins) on its PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: $0 FASTGS_GIT_DIR" >&2; exit 2; }
g=$1
p=tools/gpu-machine/carry-peer
mkdir -p "$p"
rev=$(git --git-dir="$g" rev-parse --short HEAD)
paths=$(git --git-dir="$g" ls-tree -r --name-only HEAD |
  grep -E '^(arguments|gaussian_renderer|lpipsPyTorch|scene|utils)/.*\.py$|^(train|render|metrics)\.py$|^LICENSE|^submodules/' |
  grep -vE '__pycache__|/build/|\.egg-info/|\.so$|/third_party/glm/(doc|test)/|/images/|\.(png|jpg)$')
# The snapshot lacks the prebuilt .so blobs, and git archive stops at them even when they are
# left out of its paths: write the chosen files one by one instead.
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
for f in $paths; do
  mkdir -p "$tmp/fastgs/$(dirname "$f")"
  git --git-dir="$g" cat-file blob "HEAD:$f" >"$tmp/fastgs/$f"
done
tar -C "$tmp" -cf - fastgs | xz -9 >"$p/fastgs.tar.xz"
xz -dc "$p/fastgs.tar.xz" | tar -t | grep -qx fastgs/train.py ||
  { echo "error: $p/fastgs.tar.xz lacks train.py ($g is not a FastGS clone?)" >&2; exit 1; }
echo "FastGS $rev -> $p/fastgs.tar.xz"
du -h "$p/fastgs.tar.xz"
