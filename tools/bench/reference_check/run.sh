#!/usr/bin/env bash
# Checks splat's .splat, .spz and compressed .ply against the reference implementations, run from
# checkouts of their repositories (nothing of them is kept in splat): antimatter15/splat's
# processPlyBuffer (node), nianticlabs/spz's saveSpz/loadSpz (C++; needs libzstd-dev, zlib1g-dev)
# and playcanvas/splat-transform's CompressedChunk.pack and decompressPly (node).
#   tools/bench/reference_check/run.sh MODEL.ply SPLAT_REPO SPZ_REPO SPLAT_TRANSFORM_REPO
# Each *_REPO is a checkout or a bare git directory. SPLAT names the binary (default build-cpu/splat).
set -euo pipefail
[ $# -eq 4 ] || { sed -n 2,7p "$0" >&2; exit 2; }
model=$1 splat_repo=$2 spz_repo=$3 transform_repo=$4
here=$(cd "$(dirname "$0")" && pwd)
splat=${SPLAT:-build-cpu/splat}
export WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A file of a repository, from a checkout or a bare git directory.
show() {
  if [ -e "$1/$2" ]; then cat "$1/$2"; else git --git-dir="$1" show "HEAD:$2"; fi
}
"$splat" export "$model" --out "$WORK/ours.splat" >/dev/null
"$splat" export "$model" --out "$WORK/ours.spz" >/dev/null
"$splat" export "$model" --out "$WORK/ours.compressed.ply" >/dev/null
"$splat" export "$WORK/ours.compressed.ply" --out "$WORK/decoded.ply" >/dev/null

echo "== .splat: antimatter15/splat processPlyBuffer"
show "$splat_repo" main.js >"$WORK/main.js"
node "$here/splat.js" "$WORK/main.js" "$model" "$WORK/ref.splat" >/dev/null
cmp "$WORK/ref.splat" "$WORK/ours.splat" && echo "identical bytes ($(stat -c %s "$WORK/ours.splat") bytes)"

echo "== .spz: nianticlabs/spz saveSpz (version 3, from RDF) and loadSpz"
mkdir -p "$WORK/spz/src/cc"
for f in load-spz.cc load-spz.h splat-types.cc splat-types.h splat-utils.h splat-c-types.h; do
  show "$spz_repo" "src/cc/$f" >"$WORK/spz/src/cc/$f"
done
g++ -O1 -std=c++17 -I"$WORK/spz" "$here/spz_driver.cc" "$WORK/spz/src/cc/load-spz.cc" \
  "$WORK/spz/src/cc/splat-types.cc" -lz -lzstd -o "$WORK/spz_driver"
"$WORK/spz_driver" save "$model" "$WORK/ref.spz" 2>/dev/null
gzip -dc <"$WORK/ref.spz" >"$WORK/ref.bin"
gzip -dc <"$WORK/ours.spz" >"$WORK/ours.bin"
cmp "$WORK/ref.bin" "$WORK/ours.bin" && echo "identical uncompressed streams ($(stat -c %s "$WORK/ours.bin") bytes)"
echo "the reference's decoding of splat's file against the float model (max abs difference):"
"$WORK/spz_driver" compare "$WORK/ours.spz" "$model" 2>/dev/null

echo "== compressed .ply: playcanvas/splat-transform CompressedChunk.pack and decompressPly"
show "$transform_repo" src/lib/readers/decompress-ply.ts >"$WORK/decompress-ply.ts"
show "$transform_repo" src/lib/writers/compressed-chunk.ts >"$WORK/compressed-chunk.ts"
python3 "$here/strip_types.py" "$WORK"
node "$here/compressed_ply.js" "$WORK/ours.compressed.ply" "$WORK/decoded.ply" "$model"
