#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh staged: one training per
# variant, a row each (train s, ms/iter, held-out PSNR, SSIM, splats, peak GPU memory and the
# model's and the renderer's scratch share of it). SCENE (default lego) picks the data: lego runs
# the Lego protocol (configs/lego.toml, all 200 test views), any other staged scene runs with no
# config, as a user runs it (pack it with build.sh --scenes); NO_CONFIG=1 runs lego so too.
# A variant is one or more --set assignments separated by commas; "default" is the run as is;
# config=FILE in a variant passes --config FILE (scenes other than lego, which has its own).
#   tools/gpu-machine/variants.sh default train.loss=l1 "model.antialiased=true,train.iterations=7000"
#   SCENE=figurine tools/gpu-machine/variants.sh default config=configs/fastgs.toml
#   SCENE=fox tools/gpu-machine/variants.sh default train.appearance=affine
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
mkdir -p "$out/variants"
scene=${SCENE:-lego}
protocol=()
[ "$scene" = lego ] && [ -z "${NO_CONFIG:-}" ] && protocol=(--config configs/lego.toml)
echo "| $scene variant | train s | ms/iter | held-out PSNR | SSIM | splats | peak GPU MiB | model MiB | render scratch MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A runs
for v in "$@"; do
  sets=()
  [ "$v" = default ] || { IFS=, read -ra kv <<<"$v"; for a in "${kv[@]}"; do
    case $a in config=*) sets+=(--config "${a#config=}") ;; *) sets+=(--set "$a") ;; esac
  done; }
  # Letters, digits, _ . - only: the device tool brings back no file with other characters. A
  # variant named again (alternating runs) gets its run's number, so every log comes back.
  dir=$state/variants/${scene}${NO_CONFIG:+_noconfig}_${v//[^a-zA-Z0-9_.-]/_}
  runs[$dir]=$((${runs[$dir]:-0} + 1))
  [ "${runs[$dir]}" = 1 ] || dir=${dir}_run${runs[$dir]}
  "$carry/bin/splat" train "$carry/shared/data/$scene" "${protocol[@]}" \
    "${sets[@]}" --out "$dir" --overwrite >"$out/variants/$(basename "$dir").log" 2>&1 ||
    { echo "| $v | failed: $(tail -1 "$out/variants/$(basename "$dir").log") |"; continue; }
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])); r=m.get('backend_report', {}); print(f\"| {sys.argv[2]} | {m['train_seconds']:.2f} | {m['ms_per_iter']:.3f} | {m['psnr']:.3f} | {m['ssim']:.4f} | {m['num_splats']} | {m['peak_memory_bytes'] / 2**20:.0f} | {r.get('memory.model_mib', 0):.0f} | {r.get('memory.render_scratch_mib', 0):.0f} |\")" \
    "$dir/metrics.json" "$v"
done
