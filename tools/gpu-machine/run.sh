#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh staged: the GPU tests, then
# (unless --tests-only) the Lego protocol (all 200 test views) with --timing. Prints a short table
# last. Logs and metrics go to $out.
#   tools/gpu-machine/run.sh [--tests-only | all [splat train arguments]]
# LEGO_CONFIG picks the config (default configs/lego.toml).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== GPU tests"
"$carry/bin/splat_gpu_tests" --gtest_brief=1 2>&1 | tee "$out/gpu_tests.log" | tail -40
tests_rc=${PIPESTATUS[0]}
"$carry/bin/splat_gpu_arch_tests" --gtest_brief=1 2>&1 | tail -5
[ "${PIPESTATUS[0]}" = 0 ] || tests_rc=1
# Binaries of other architectures (SPLAT_CUDA_ARCHS in build.sh), e.g. Turing's PTX.
for dir in "$carry"/bin-*; do
  [ -x "$dir/splat_gpu_tests" ] || continue
  echo "== GPU tests, ${dir##*/bin-}"
  "$dir/splat_gpu_tests" --gtest_brief=1 2>&1 | tee "$out/gpu_tests_${dir##*/bin-}.log" | tail -20
  [ "${PIPESTATUS[0]}" = 0 ] || tests_rc=1
done

if [ "${1:-}" != "--tests-only" ] && [ -d "$carry/shared/data/lego" ]; then
  echo "== Lego (${LEGO_CONFIG:-configs/lego.toml}, all 200 test views)"
  "$carry/bin/splat" train "$carry/shared/data/lego" --config "${LEGO_CONFIG:-configs/lego.toml}" \
    --timing --out "$out/lego" "${@:2}" 2>&1 | grep -v '^\[\|^[a-z_]* = \|^$\|^#' | tee "$out/lego.log" | tail -30
  python3 - "$out/lego/metrics.json" <<'PY' || true
import json, sys
m = json.load(open(sys.argv[1]))
print(f"| iterations | splats | train s | ms/iter | PSNR | SSIM | peak GPU MiB |")
print(f"| {m['iterations']} | {m['num_splats']} | {m['train_seconds']:.1f} | {m['ms_per_iter']:.3f} | "
      f"{m['psnr']:.2f} | {m['ssim']:.4f} | {m['peak_memory_bytes'] / 2**20:.0f} |")
PY
fi
exit "$tests_rc"
