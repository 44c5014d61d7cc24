#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh staged: train.time_budget at
# several budgets on one scene, a row each (budget, planned iterations, train seconds, splats,
# PSNR).
#   tools/gpu-machine/budget.sh SCENE "SECONDS ..." [splat train arguments]
#   tools/gpu-machine/budget.sh lego "5 10 30" --config configs/lego.toml
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
scene=$1 budgets=$2
shift 2
mkdir -p "$out/budget"
echo "| scene | budget s | iterations | train s | splats | PSNR dB |"
echo "|---|---|---|---|---|---|"
for b in $budgets; do
  dir=$out/budget/$scene-$b
  "$carry/bin/splat" train "$carry/shared/data/$scene" "$@" --set train.time_budget="$b" --out "$dir" \
    >"$dir.log" 2>&1 || { echo "| $scene | $b | failed: $(tail -1 "$dir.log") |"; continue; }
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(f\"| {sys.argv[2]} | {sys.argv[3]} | {m['iterations']} | {m['train_seconds']:.2f} | {m['num_splats']} | {m['psnr']:.3f} |\")" \
    "$dir/metrics.json" "$scene" "$b"
  grep 'time budget' "$dir.log" | sed 's/^/    /'
  rm -f "$dir/checkpoint.ckpt" "$dir/model.ply"
done
