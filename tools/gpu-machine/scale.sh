#!/usr/bin/env bash
# Runs on a GPU machine: `splat train DATA --config CONFIG --gpus G` with a global batch of B views
# per step, for each G:B in RUNS, in that order. Every run trains on the same number of views:
# iterations, refine start/interval/stop and the SH interval (the defaults' 500/100/25000/1000
# steps, which configs/lego.toml keeps) are divided by B. One row per run.
#   RUNS="1:2 2:2 2:2 1:2" tools/gpu-machine/scale.sh DATA CONFIG VIEWS [--set section.key=value ...]
#   tools/gpu-machine/scale.sh lego configs/lego.toml 12500
# DATA is a dataset directory, or the name of a staged one.
# SPLAT_BIN picks the binary (default the staged bin/splat). Logs and metrics go to $out/scale/.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
[ $# -ge 3 ] || { echo "usage: RUNS='G:B ...' $0 DATA CONFIG VIEWS [--set k=v ...]" >&2; exit 2; }
data=$1 config=$2 views=$3
shift 3
[ -d "$data" ] || data=$carry/shared/data/$data
bin=${SPLAT_BIN:-$carry/bin/splat}
out=$out/scale
mkdir -p "$out"
# NVLink multicast stays off (README.md,
# "Multi-process training": every launch path that may start GPU collectives sets these).
with_nccl
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
echo "# $("$bin" --version), $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
echo "| run | GPUs | batch | steps | train s | ms per step | ms per view | PSNR | SSIM | splats |"
echo "|---|---|---|---|---|---|---|---|---|---|"
i=0
for run in ${RUNS:-1:1 1:2 1:4}; do
  g=${run%%:*} b=${run#*:}
  i=$((i + 1))
  name="r${i}_g${g}_b${b}"
  if ! "$bin" train "$data" --gpus "$g" --config "$config" --set train.batch_size="$b" \
      --set train.iterations=$((views / b)) --set densify.refine_start=$((500 / b)) \
      --set densify.refine_every=$((100 / b)) --set densify.refine_stop=$((25000 / b)) \
      --set train.sh_increase_every=$((1000 / b)) --set output.save_renders=false "$@" \
      --out "$out/$name" > "$out/$name.log" 2>&1; then
    echo "| $i | $g | $b | failed: $(tail -1 "$out/$name.log") |"
    continue
  fi
  python3 - "$out/$name/metrics.json" "$i" "$g" "$b" "$views" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
i, g, b, views = sys.argv[2:]
t = m["train_seconds"]
print(f"| {i} | {g} | {b} | {m['iterations']} | {t:.1f} | {t / m['iterations'] * 1e3:.3f} | "
      f"{t / int(views) * 1e3:.3f} | {m['psnr']:.3f} | {m['ssim']:.4f} | {m['num_splats']} |")
PY
  rm -f "$out/$name/checkpoint.ckpt" "$out/$name/model.ply"
done
