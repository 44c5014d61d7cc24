#!/usr/bin/env bash
# Packs COLMAP (this machine's Debian package, with every shared library it loads beyond the C
# and C++ runtimes) and the fox photos into the part tools/gpu-machine/carry-colmap/ for
# prepare.sh: the GPU machine has no colmap and allows no installs.
#   tools/gpu-machine/pack_colmap.sh [SCENE]      # SCENE of ../shared/data, default fox
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${SPLAT_SHARED:-../shared}
scene=${1:-fox}
p=tools/gpu-machine/carry-colmap
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
colmap=$(command -v colmap) || { echo "error: no colmap here (scripts/deps.sh installs it)" >&2; exit 1; }
mkdir -p "$tmp/colmap/lib"
cp "$colmap" "$tmp/colmap/"
ldd "$colmap" | awk '$3 ~ /^\// {print $1, $3}' |
  grep -vE '^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
  while read -r _ path; do cp -L "$path" "$tmp/colmap/lib/"; done
strip "$tmp/colmap/colmap" "$tmp/colmap/lib/"* 2>/dev/null || true
rm -rf "$p" && mkdir -p "$p/shared/data"
tar -C "$tmp" -cJf "$p/colmap.tar.xz" colmap
cp -r "$shared/data/$scene" "$p/shared/data/"
echo "$(colmap help 2>&1 | head -1) -> $p"
du -sh "$p"/*
