#!/usr/bin/env bash
# Runs on the GPU machine with the parts of `tools/gpu-machine/build.sh --scenes "fox fox_colmap"`
# staged: the GPU tests, then `splat train` (no config) on the fox photos twice: through
# transforms.json and through fox_colmap's COLMAP model (an OPENCV camera with distortion). Extra
# arguments go to both trainings, e.g. --set model.init=random. Logs and metrics go to $out.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
# fox_colmap/images links to fox/images; a copy may hold the link as a file naming its target.
ln -sfn ../fox/images "$carry/shared/data/fox_colmap/images"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$carry/bin/splat" --version
rc=0
"$carry/bin/splat_gpu_tests" --gtest_brief=1 2>&1 | tee "$out/gpu_tests.log" | tail -4
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
for scene in fox fox_colmap; do
  "$carry/bin/splat" train "$carry/shared/data/$scene" --out "$out/$scene" "$@" > "$out/$scene.log" 2>&1 || rc=1
  grep -i "undistort" "$out/$scene.log" | head -2
  python3 -c "import json; m = json.load(open('$out/$scene/metrics.json'));
print('$scene', {k: m[k] for k in ('iterations', 'num_splats', 'train_seconds', 'psnr', 'ssim')})"
done
exit "$rc"
