#!/usr/bin/env bash
# Runs on the GPU machine after a Lego run has left a checkpoint: splat bench replay of every
# execution mode from that state (two rounds, modes alternating), then splat bench parity (cuda
# against the cpu reference on the same state).
#   tools/gpu-machine/modes.sh CHECKPOINT [ITERS]
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
ckpt=$1 iters=${2:-300}
mkdir -p "$out/modes"
data=$carry/shared/data/lego
modes=("chained off false" "chained depth2 false" "graph off false" "graph depth2 false" "chained off true" "graph depth2 true")
for round in 1 2; do
  for m in "${modes[@]}"; do
    read -r sub pipe det <<<"$m"
    tag="${sub}_${pipe}_det${det}_r$round"
    "$carry/bin/splat" bench replay --checkpoint "$ckpt" "$data" --iters "$iters" --warmup 30 \
      --set backend.timing=false --set backend.submission="$sub" --set backend.pipelining="$pipe" \
      --set backend.deterministic="$det" \
      --out "$out/modes/$tag.json" > "$out/modes/$tag.log" 2>&1 || { echo "FAILED $tag"; tail -5 "$out/modes/$tag.log"; }
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['backend_report']; print(f\"$tag median {j['median_ms']:.3f} p5 {j['p5_ms']:.3f} p95 {j['p95_ms']:.3f} mean {j['mean_ms']:.3f} captures {r.get('engine.graph_captures',0):.0f} launches {r.get('engine.graph_launches',0):.0f} overflows {r.get('engine.isect_overflows',0):.0f} in_flight {r.get('engine.max_in_flight',0):.0f}\")" "$out/modes/$tag.json" 2>/dev/null
  done
done
echo "== bench parity"
"$carry/bin/splat" bench parity --checkpoint "$ckpt" "$data" --out "$out/parity.json" 2>&1 | tail -12
