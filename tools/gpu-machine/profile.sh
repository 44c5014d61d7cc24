#!/usr/bin/env bash
# Runs on the GPU machine (Firecracker runtime: ncu reads the hardware counters there): Nsight
# Compute on the rasterizer kernels of a production state. Trains the Lego protocol once
# (configs/lego.toml, about 30 s) unless CHECKPOINT is given, then profiles a few steps of
# `splat bench replay` from that state (chained submission: a graph hides its kernels from ncu).
#   tools/gpu-machine/profile.sh [CHECKPOINT] [KERNEL_REGEX]     # default regex: rasterize
# The report (ncu's text output: instruction mix, warp stall reasons, issue slots, occupancy)
# goes to $OUT/profile.txt; the clocks are left alone (--clock-control none), as in every other
# measurement (docs/benchmarks.md, "Method"). Profiles taken with it: tools/gpu-machine/perf-log.md (gates 13
# and 15).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
ckpt=${1:-} regex=${2:-rasterize}
data=$carry/shared/data/lego
bin=${SPLAT_BIN:-$carry/bin/splat}
if [ -z "$ckpt" ]; then
  rm -rf "$state/profile_train"
  "$bin" train "$data" --config configs/lego.toml --set output.save_renders=false \
    --out "$state/profile_train" > "$out/profile_train.log" 2>&1 || { tail -20 "$out/profile_train.log"; exit 1; }
  ckpt=$state/profile_train/checkpoint.ckpt
fi
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
[ -n "$ncu" ] || { echo "error: ncu not found on this machine" >&2; exit 1; }
"$ncu" --clock-control none --kernel-name "regex:$regex" --launch-skip 20 --launch-count 4 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
  --section WarpStateStats --section Occupancy --section LaunchStats \
  "$bin" bench replay --checkpoint "$ckpt" "$data" --iters 10 --warmup 5 \
  --set backend.submission=chained --set backend.pipelining=off > "$out/profile.txt" 2>&1
rc=$?
grep -E "rasterize|Duration|Issue Slots Busy|Executed Ipc|Warp Cycles Per Issued|Achieved Occupancy|Stall|Registers" \
  "$out/profile.txt" | head -80
exit $rc
