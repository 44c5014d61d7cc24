#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .carry/ from scripts/device_build.sh:
# the A/B gate (splat bench ab, DESIGN.md section 6) of the carried binary against a baseline
# binary on the Lego device subset, then (unless NO_TIMING is set) one --timing run of each for
# the per-stage tables.
#   [GATE_B=CANDIDATE_BINARY] scripts/device_gate.sh BASELINE_BINARY PAIRS [CONFIG_A [CONFIG_B]]
# The candidate defaults to .carry/bin/splat.
# Configs default to configs/lego.toml; both get data.test_every = 4 (the subset's test views), or
# TEST_EVERY (8: the subset without its odd quarters, when a call must carry less). DATA=DIR gates
# on another scene, with the configs as given. A gate longer than a call: OUT outside the
# repository (it must outlive the call), STOP_AFTER=SECONDS, then the same command with RESUME=1
# in the next call of the lease (splat bench ab --stop-after, --resume).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
base=$1 pairs=$2 cand=${GATE_B:-.carry/bin/splat} cfg_a=${3:-configs/lego.toml} cfg_b=${4:-${3:-configs/lego.toml}}
mkdir -p "$out" /tmp/gate
data=${DATA:-.carry/shared/data/lego}
te=${TEST_EVERY:-4}
subset() { sed "s/^\[data\]\$/[data]\ntest_every = $te/" "$1" > "$2"; grep -q "^test_every = $te" "$2"; }
if [ -n "${DATA:-}" ]; then
  cp "$cfg_a" /tmp/gate/a.toml && cp "$cfg_b" /tmp/gate/b.toml
else
  subset "$cfg_a" /tmp/gate/a.toml
  subset "$cfg_b" /tmp/gate/b.toml
fi
"$cand" bench ab --a /tmp/gate/a.toml --b /tmp/gate/b.toml --binary-a "$base" --binary-b "$cand" \
  --pairs "$pairs" "$data" --out "$out/ab" ${STOP_AFTER:+--stop-after "$STOP_AFTER"} \
  ${RESUME:+--resume} 2>&1 | tail -25
[ -n "${NO_TIMING:-}" ] && exit 0  # modes that cannot time (graph, depth2)
for arm in a b; do
  bin=$([ $arm = a ] && echo "$base" || echo "$cand")
  echo "== per-stage, arm $arm"
  "$bin" train "$data" --config /tmp/gate/$arm.toml --timing --out "/tmp/gate/timing_$arm" > "$out/timing_$arm.log" 2>&1
  cp "/tmp/gate/timing_$arm/metrics.json" "$out/metrics_timing_$arm.json"
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
