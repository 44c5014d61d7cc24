#!/usr/bin/env bash
# Runs on the GPU machine with fox staged (tools/gpu-machine/build.sh --scenes fox): issue 48's
# roofline of the capture workload, fox at full size, 30,000 steps, 1M-splat cap (docs/benchmarks.md,
# "Roofline: the capture workload"):
#   1. splat train --timing: stage times and work.* counts as means over the run (the model growing
#      to 1M splats, the coarse-to-fine image sizes, the SH degree rising);
#   2. splat bench replay --timing of its final checkpoint: the same at the steady state (1M splats,
#      full size, SH degree 3, no refine);
#   3. tools/bench/roofline.py on both, into $OUT/roofline.md (with the two JSON files and logs).
#   tools/gpu-machine/roofline.sh [--replay-only] [--iters N] [more splat train arguments]
# --replay-only trains without --timing (faster) and writes the steady-state table alone.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
iters=300 timing=--timing
if [ "${1:-}" = --replay-only ]; then timing=; shift; fi
if [ "${1:-}" = --iters ]; then iters=$2; shift 2; fi
for f in "$carry"/bin*/*.xz; do [ -f "$f" ] && xz -d -f "$f"; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$carry/bin/splat" --version
data=$carry/shared/data/fox
run=$state/roofline_train
rm -rf "$run"
start=$(date +%s)
if ! "$carry/bin/splat" train "$data" $timing --set train.iterations=30000 \
    --set densify.cap_max=1000000 "$@" --out "$run" >"$out/roofline_train.log" 2>&1; then
  tail -20 "$out/roofline_train.log"
  exit 1
fi
echo "train $timing: $(($(date +%s) - start)) s"
grep -E "^done|^test:" "$out/roofline_train.log"
cp "$run/metrics.json" "$out/train_metrics.json"
if ! "$carry/bin/splat" bench replay --checkpoint "$run/checkpoint.ckpt" "$data" --timing \
    --warmup 20 --iters "$iters" --out "$out/replay.json" >"$out/roofline_replay.log" 2>&1; then
  tail -20 "$out/roofline_replay.log"
  exit 1
fi
grep "^ms/iter" "$out/roofline_replay.log"
# The memory ceiling of this card: a 1 GiB device-to-device copy (bytes read + written), as the
# default of roofline.py was measured on the H200; the FP32 ceiling stays the datasheet's.
bw=$(python3 -c "import torch, time
n = 2**30; a = torch.empty(n, dtype=torch.uint8, device='cuda'); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
torch.cuda.synchronize(); t = time.time()
for _ in range(20): b.copy_(a)
torch.cuda.synchronize(); print(2 * n * 20 / (time.time() - t))" 2>/dev/null) && echo "copy bandwidth: $bw B/s" ||
  bw=
{
  python3 tools/bench/roofline.py "$out/replay.json" ${bw:+--bandwidth "$bw"} \
    --title "fox, full size, 1M splats: bench replay of the final state (20 + $iters steps)"
  [ -z "$timing" ] || {
    echo
    python3 tools/bench/roofline.py "$out/train_metrics.json" ${bw:+--bandwidth "$bw"} \
      --title "fox, full size, 30,000 steps growing to 1M splats: mean over the training run"
  }
} | tee "$out/roofline.md"
