#!/usr/bin/env bash
# Runs on the GPU machine after scripts/device_screen.sh (its checkpoint, the binaries in
# /tmp/bins/NAME/): Nsight Compute's source counters (warp stall samples and executed instructions
# per line; the kernels carry -lineinfo) of the kernels matching REGEX, one launch each, written
# per CUDA source line to $OUT/source_NAME.csv, and the hottest lines printed.
#   scripts/device_source.sh NAME [REGEX]      # default regex: rasterize_(fwd|bwd)_kernel
set -uo pipefail
cd "$(dirname "$0")/.."
name=$1 regex=${2:-rasterize_(fwd|bwd)_kernel}
ckpt=${CKPT:-/tmp/screen_train/checkpoint.ckpt} data=${DATA:-.carry/shared/data/lego}
out=${OUT:-/tmp/splat_out}
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
[ -n "$ncu" ] || { echo "error: ncu not found on this machine" >&2; exit 1; }
rep=/tmp/source_$name
"$ncu" --clock-control none --kernel-name "regex:$regex" --launch-skip 10 --launch-count 2 \
  --section SourceCounters --section WarpStateStats --import-source yes -f -o "$rep" \
  "/tmp/bins/$name/splat" bench replay --checkpoint "$ckpt" "$data" --iters 8 --warmup 2 \
  --set backend.submission=chained --set backend.pipelining=off > "$out/source_$name.log" 2>&1 ||
  { tail -5 "$out/source_$name.log"; exit 1; }
"$ncu" --import "$rep.ncu-rep" --page source --csv --print-source cuda > "$out/source_$name.csv" 2>&1 ||
  "$ncu" --import "$rep.ncu-rep" --page source --csv > "$out/source_$name.csv" 2>&1
head -c 1500 "$out/source_$name.csv"
