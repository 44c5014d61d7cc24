#!/usr/bin/env bash
# Builds the CUDA configuration here (sm_90) and assembles .carry/ for the GPU machine: the
# binaries, the shared libraries it lacks, the golden vectors and the Lego device subset
# (100 training views + every 4th test view). Within the 64 MiB a device call can carry.
#   scripts/device_build.sh            # binaries + golden + Lego subset
#   scripts/device_build.sh --no-lego  # binaries + golden only
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SPLAT_SHARED:-../shared}
scripts/deps.sh
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build-cuda -j"$(nproc)" --target splat splat_gpu_tests

rm -rf .carry && mkdir -p .carry/bin .carry/lib .carry/shared/data
cp build-cuda/splat build-cuda/splat_gpu_tests .carry/bin/
strip .carry/bin/*
# Libraries the device image (Ubuntu 24.04) does not have in these versions.
for lib in libjpeg.so.62 libwebp.so.7 libtomlplusplus.so.3 libpng16.so.16; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" .carry/lib/
done
# JSON compresses about 3x; device_run.sh unpacks it.
tar -C "$shared" -cJf .carry/golden.tar.xz golden
if [ "${1:-}" != "--no-lego" ]; then
  lego=.carry/shared/data/lego
  mkdir -p "$lego/test"
  cp -r "$shared/data/lego/train" "$lego/"
  cp "$shared/data/lego/transforms_train.json" "$shared/data/lego/transforms_test.json" "$lego/"
  for i in $(seq 0 4 196); do cp "$shared/data/lego/test/r_$i.webp" "$lego/test/"; done
fi
du -sh .carry
size=$(du -sm .carry | cut -f1)
[ "$size" -lt 64 ] || { echo "error: .carry is ${size} MiB, over the 64 MiB a device call carries" >&2; exit 1; }
