#!/usr/bin/env bash
# Runs on the GPU machine after candidates.sh has unpacked the binaries into
# $state/bins/NAME/: a first look at every candidate that costs seconds, not a gate. Trains the
# Lego protocol once with BASE (about 30 s) unless CHECKPOINT is given, then runs
# `splat bench replay` of every binary from that state, ROUNDS rounds with the binaries
# alternating (default mode: graph, depth2), and one --timing replay of each for its per-stage
# table. It only screens: adopting a candidate takes a gate (gate.sh).
#   tools/gpu-machine/screen.sh BASE [ROUNDS] [CHECKPOINT]       # ITERS (500), DATA (Lego) from env
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
base=$1 rounds=${2:-3} ckpt=${3:-}
iters=${ITERS:-500} data=${DATA:-$carry/shared/data/lego}
out=$out/screen
mkdir -p "$out"
if [ -z "$ckpt" ]; then
  rm -rf "$state/screen_train"
  "$state/bins/$base/splat" train "$data" --config configs/lego.toml \
    --set output.save_renders=false --out "$state/screen_train" > "$out/train.log" 2>&1 ||
    { tail -20 "$out/train.log"; exit 1; }
  ckpt=$state/screen_train/checkpoint.ckpt
fi
names=$(ls "$state/bins")
replay() {  # NAME TAG [ARGS ...]
  local name=$1 tag=$2
  shift 2
  "$state/bins/$name/splat" bench replay --checkpoint "$ckpt" "$data" --iters "$iters" --warmup 50 "$@" \
    --out "$out/$tag.json" > "$out/$tag.log" 2>&1 || echo "$tag failed: $(tail -1 "$out/$tag.log")"
}
for r in $(seq 1 "$rounds"); do
  for name in $names; do replay "$name" "${name}_r$r"; done
done
for name in $names; do replay "$name" "${name}_timing" --timing; done
python3 - "$out" "$base" "$rounds" $names <<'PY'
import json, statistics, sys
out, base, rounds, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def load(tag):
    try:
        return json.load(open(f"{out}/{tag}.json"))
    except OSError:
        return None
med = {n: [j["median_ms"] for r in range(1, rounds + 1) if (j := load(f"{n}_r{r}"))] for n in names}
b = statistics.median(med[base]) if med.get(base) else None
print("| binary | median ms/step per round | median | vs " + base + " |")
print("|---|---|---|---|")
for n in names:
    if not med[n]:
        print(f"| {n} | failed | | |")
        continue
    m = statistics.median(med[n])
    rel = f"{(m / b - 1) * 100:+.2f}%" if b else ""
    print(f"| {n} | {', '.join(f'{v:.3f}' for v in med[n])} | {m:.3f} | {rel} |")
stages = {n: {k[3:]: v for k, v in (load(f"{n}_timing") or {}).get("backend_report", {}).items() if k.startswith("ms.")}
          for n in names}
order = list(dict.fromkeys(s for n in [base] + names for s in stages[n]))  # base's stages first
print("\n| stage (--timing, ms/step) | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for s in order:
    print(f"| {s} | " + " | ".join(f"{stages[n].get(s, float('nan')):.4f}" for n in names) + " |")
PY
