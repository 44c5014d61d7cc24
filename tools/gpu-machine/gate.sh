#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the parts of tools/gpu-machine/build.sh
# staged: the A/B gate (splat bench ab, DESIGN.md section 6) of the staged binary against a
# baseline binary on the Lego protocol (all 200 test views), then (unless NO_TIMING is set) one
# --timing run of each for the per-stage tables.
#   [GATE_B=CANDIDATE_BINARY] tools/gpu-machine/gate.sh BASELINE_BINARY PAIRS [CONFIG_A [CONFIG_B]]
# The candidate defaults to the staged bin/splat; the configs to configs/lego.toml. DATA=DIR gates
# on another scene. A gate longer than a call: OUT outside $out (it must outlive the call, e.g.
# $state/gate/ab), STOP_AFTER=SECONDS, then the same command with RESUME=1 in the next call of
# the same warm machine (splat bench ab --stop-after, --resume).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
base=$1 pairs=$2 cand=${GATE_B:-$carry/bin/splat} cfg_a=${3:-configs/lego.toml} cfg_b=${4:-${3:-configs/lego.toml}}
data=${DATA:-$carry/shared/data/lego}
mkdir -p "$state/gate"
"$cand" bench ab --a "$cfg_a" --b "$cfg_b" --binary-a "$base" --binary-b "$cand" \
  --pairs "$pairs" "$data" --out "$out/ab" ${STOP_AFTER:+--stop-after "$STOP_AFTER"} \
  ${RESUME:+--resume} 2>&1 | tail -25
[ -n "${NO_TIMING:-}" ] && exit 0  # modes that cannot time (graph, depth2)
for arm in a b; do
  bin=$([ $arm = a ] && echo "$base" || echo "$cand")
  cfg=$([ $arm = a ] && echo "$cfg_a" || echo "$cfg_b")
  echo "== per-stage, arm $arm"
  rm -rf "$state/gate/timing_$arm"
  "$bin" train "$data" --config "$cfg" --timing --out "$state/gate/timing_$arm" > "$out/timing_$arm.log" 2>&1
  cp "$state/gate/timing_$arm/metrics.json" "$out/metrics_timing_$arm.json"
  python3 - "$out/metrics_timing_$arm.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"train {m['train_seconds']:.2f} s, {m['ms_per_iter']:.3f} ms/iter, PSNR {m['psnr']:.3f}, splats {m['num_splats']}")
for t in m.get("timing", []): print(f"| {t['stage']} | {t['mean_ms']:.4f} | {100 * t['share']:.1f}% |")
for k, v in m.items():
    if not isinstance(v, (dict, list)): print(k, v)
for k, v in m.get("backend_report", {}).items(): print(k, v)
PY
done
