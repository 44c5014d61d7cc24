#!/usr/bin/env bash
# Runs on the GPU machine with .carry/ from scripts/device_build.sh: the Lego device subset with
# configs/lego.toml at batch sizes 1, 2 and 4 through `splat train --gpus 1`, the same number of
# views each (iterations, refine start/interval and SH steps divided by B).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/splat_out}
export LD_LIBRARY_PATH="$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "| batch | steps | train s | ms per view | PSNR | splats |"
for B in ${BATCHES:-1 2 4}; do
  .carry/bin/splat train .carry/shared/data/lego --gpus 1 --config configs/lego.toml --set data.test_every=4 \
    --set train.batch_size=$B --set train.iterations=$((12500 / B)) --set densify.refine_start=$((500 / B)) \
    --set densify.refine_every=$((100 / B)) --set train.sh_increase_every=$((1000 / B)) --out "$out/b$B" \
    > "$out/b$B.log" 2>&1 || { echo "B=$B failed"; tail -5 "$out/b$B.log"; continue; }
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])); B=int(sys.argv[2]); print(f\"| {B} | {m['iterations']} | {m['train_seconds']:.1f} | {m['train_seconds'] / 12500 * 1000:.3f} | {m['psnr']:.2f} | {m['num_splats']} |\")" "$out/b$B/metrics.json" $B
  rm -f "$out/b$B/checkpoint.ckpt" "$out/b$B/model.ply"
done
