#!/usr/bin/env bash
# Runs on the GPU machine with the parts of `tools/gpu-machine/build.sh --scenes "fox figurine"`
# staged (binaries, libraries, golden vectors, fox and figurine):
# the GPU tests, then `splat train` on fox and figurine with no config, as a user runs it, and at
# the fixed 30,000 steps and 1M-splat cap (issue 25's fox workload; the removed capture.toml's
# values). Metrics, logs and reports go to $OUT.
#   tools/gpu-machine/product.sh [--tests] [--downscale N] [--scenes "fox figurine"]
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
tests=0 downscale=1 scenes="fox figurine"
while [ $# -gt 0 ]; do
  case $1 in
    --tests) tests=1 ;;
    --downscale) downscale=$2; shift ;;
    --scenes) scenes=$2; shift ;;
  esac
  shift
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# Binaries of the default (all-architecture) build travel xz-compressed: fatbins shrink ~10x.
for f in "$carry"/bin*/*.xz; do [ -f "$f" ] && xz -d -f "$f"; done
"$carry/bin/splat" --version
rc=0
if [ "$tests" = 1 ]; then
  for dir in "$carry"/bin "$carry"/bin-*; do
    [ -x "$dir/splat_gpu_tests" ] || continue
    echo "== GPU tests, $dir"
    "$dir/splat_gpu_tests" --gtest_brief=1 2>&1 | tee "$out/gpu_tests_${dir##*/}.log" | tail -15
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  done
  "$carry/bin/splat_gpu_arch_tests" 2>&1 | tail -4
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi
for scene in $scenes; do
  for cfg in auto 30k_1m; do
    name=${scene}_${cfg}_ds${downscale}
    args=()
    [ "$cfg" = 30k_1m ] && args=(--set train.iterations=30000 --set densify.cap_max=1000000)
    echo "== $name"
    start=$(date +%s)
    "$carry/bin/splat" train "$carry/shared/data/$scene" "${args[@]}" --downscale "$downscale" --out "$out/$name" \
      > "$out/$name.log" 2>&1
    echo "exit $? in $(( $(date +%s) - start )) s"
    grep -E "auto:|^done|^test:" "$out/$name.log"
    rm -f "$out/$name/checkpoint.ckpt" "$out/$name/model.ply"
    rm -rf "$out/$name/renders"
  done
done
exit "$rc"
