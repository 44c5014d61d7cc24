#!/usr/bin/env bash
# Builds the CUDA configuration here and assembles .carry/ for the GPU machine: the binaries, the
# shared libraries it lacks, the golden vectors and data. Within the 64 MiB a device call can carry.
#   scripts/device_build.sh                   # binaries + golden + Lego device subset (100
#                                             # training views + every 4th test view)
#   scripts/device_build.sh --no-lego         # binaries + golden only
#   scripts/device_build.sh --scenes "fox figurine"   # binaries + golden + these ../shared/data scenes
#   scripts/device_build.sh --lego-rest       # binaries + golden + the 150 Lego test views the
#                                             # subset leaves out (scripts/device_lego_full.sh)
# SPLAT_CUDA_ARCHS (default 90, the H200) is CMAKE_CUDA_ARCHITECTURES; another value builds into
# build-cuda-<value> and carries its binaries in .carry/bin-<value>/ beside the default ones, e.g.
# SPLAT_CUDA_ARCHS=75-virtual: Turing's code path, which the H200 runs through the driver's JIT.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SPLAT_SHARED:-../shared}
archs=${SPLAT_CUDA_ARCHS:-90}
lego=1 scenes="" rest=0
while [ $# -gt 0 ]; do
  case $1 in
    --no-lego) lego=0 ;;
    --scenes) scenes=$2; lego=0; shift ;;
    --lego-rest) rest=1; lego=0 ;;
    *) echo "usage: $0 [--no-lego | --scenes \"NAME ...\" | --lego-rest]" >&2; exit 2 ;;
  esac
  shift
done
build=build-cuda bin=.carry/bin
[ "$archs" = 90 ] || { build=build-cuda-$archs; bin=.carry/bin-$archs; }
scripts/deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$archs" >/dev/null
cmake --build "$build" -j"$(nproc)" --target splat splat_gpu_tests splat_gpu_arch_tests

if [ "$archs" = 90 ]; then
  rm -rf .carry && mkdir -p .carry/lib .carry/shared/data
  # Libraries the device image (Ubuntu 24.04) does not have in these versions.
  for lib in libjpeg.so.62 libwebp.so.7 libtomlplusplus.so.3 libpng16.so.16 libcpp-httplib.so.0.11 \
             libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" .carry/lib/
  done
  # JSON compresses about 3x; device_run.sh unpacks it.
  tar -C "$shared" -cJf .carry/golden.tar.xz golden
fi
rm -rf "$bin" "$bin.tar.xz" && mkdir -p "$bin"
cp "$build/splat" "$build/splat_gpu_tests" "$build/splat_gpu_arch_tests" "$bin/"
strip "$bin"/*
# Binaries compress about 4x; scripts/device_env.sh unpacks them on the GPU machine.
tar -C .carry -cJf "$bin.tar.xz" "${bin#.carry/}" && rm -r "$bin"
if [ "$lego" = 1 ]; then
  lego=.carry/shared/data/lego
  mkdir -p "$lego/test"
  cp -r "$shared/data/lego/train" "$lego/"
  cp "$shared/data/lego/transforms_train.json" "$shared/data/lego/transforms_test.json" "$lego/"
  for i in $(seq 0 4 196); do cp "$shared/data/lego/test/r_$i.webp" "$lego/test/"; done
fi
if [ "$rest" = 1 ]; then
  # The test views that data.test_every=4 skips, as a dataset of their own: its training split is
  # one view (the loader wants one; evaluation never reads it, and NeRF-synthetic has no
  # normalization from the training cameras).
  rest=.carry/shared/data/lego_rest
  mkdir -p "$rest/train" "$rest/test"
  cp "$shared/data/lego/train/r_0.webp" "$rest/train/"
  python3 - "$shared/data/lego" "$rest" <<'PY'
import json, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
train = json.load(open(f"{src}/transforms_train.json"))
train["frames"] = train["frames"][:1]
json.dump(train, open(f"{dst}/transforms_train.json", "w"))
test = json.load(open(f"{src}/transforms_test.json"))
test["frames"] = [f for i, f in enumerate(test["frames"]) if i % 4 != 0]
for f in test["frames"]:
    shutil.copy(f"{src}/{f['file_path']}.webp", f"{dst}/test/")
json.dump(test, open(f"{dst}/transforms_test.json", "w"))
print(f"lego_rest: {len(test['frames'])} test views")
PY
fi
for scene in $scenes; do cp -r "$shared/data/$scene" .carry/shared/data/; done
du -sh .carry
size=$(du -sm .carry | cut -f1)
[ "$size" -lt 64 ] || { echo "error: .carry is ${size} MiB, over the 64 MiB a device call carries" >&2; exit 1; }
