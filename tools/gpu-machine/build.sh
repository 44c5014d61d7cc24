#!/usr/bin/env bash
# Builds the CUDA configuration here and packs what the GPU machine needs into parts of at most
# what one call carries (README.md): tools/gpu-machine/carry/ holds the binaries, the shared
# libraries the machine lacks, the golden vectors and the first data files; carry-2/, carry-3/
# the data that did not fit. Carry each part in a call of one warm machine; env.sh stages them.
#   tools/gpu-machine/build.sh                   # binaries + golden + the Lego protocol's dataset
#                                                # (100 training views, all 200 test views)
#   tools/gpu-machine/build.sh --no-lego         # binaries + golden only
#   tools/gpu-machine/build.sh --scenes "fox figurine"   # binaries + golden + these scenes
#                                                # (of ../shared/data, or SPLAT_SHARED/data)
# SPLAT_CUDA_ARCHS (default 90, the H200) is CMAKE_CUDA_ARCHITECTURES; another value builds into
# build-cuda-<value> and packs its binaries alone into carry-bin-<value>/, which stages beside the
# default ones, e.g. SPLAT_CUDA_ARCHS=75-virtual: Turing's code path, which the H200 runs through
# the driver's JIT.
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${SPLAT_SHARED:-../shared}
archs=${SPLAT_CUDA_ARCHS:-90}
scenes=lego
while [ $# -gt 0 ]; do
  case $1 in
    --no-lego) scenes="" ;;
    --scenes) scenes=$2; shift ;;
    *) echo "usage: $0 [--no-lego | --scenes \"NAME ...\"]" >&2; exit 2 ;;
  esac
  shift
done
here=tools/gpu-machine
build=build-cuda part=$here/carry bin=bin
[ "$archs" = 90 ] || { build=build-cuda-$archs part=$here/carry-bin-$archs bin=bin-$archs; }
scripts/deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$archs" >/dev/null
cmake --build "$build" -j"$(nproc)" --target splat splat_gpu_tests splat_gpu_arch_tests

if [ "$archs" = 90 ]; then
  rm -rf "$here"/carry "$here"/carry-[0-9]* && mkdir -p "$part/lib" "$part/shared/data"
  # Libraries the device image (Ubuntu 24.04) does not have in these versions.
  for lib in libjpeg.so.62 libwebp.so.7 libtomlplusplus.so.3 libpng16.so.16 libcpp-httplib.so.0.11 \
             libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" "$part/lib/"
  done
  # JSON compresses about 3x; env.sh unpacks it.
  tar -C "$shared" -cJf "$part/golden.tar.xz" golden
  for scene in $scenes; do cp -r "$shared/data/$scene" "$part/shared/data/"; done
else
  rm -rf "$part" && mkdir -p "$part"
fi
mkdir -p "$part/$bin"
cp "$build/splat" "$build/splat_gpu_tests" "$build/splat_gpu_arch_tests" "$part/$bin/"
strip "$part/$bin"/*
# Binaries compress about 4x; env.sh unpacks them on the GPU machine.
tar -C "$part" -cJf "$part/$bin.tar.xz" "$bin" && rm -r "${part:?}/$bin"

. tools/gpu-machine/carry_limit.sh
python3 - "$part" "$(part_budget)" <<'PY'
import os, shutil, sys
first, budget = sys.argv[1], int(sys.argv[2])
files = sorted(os.path.relpath(os.path.join(d, f), first) for d, _, fs in os.walk(first) for f in fs)
# The binaries, libraries and golden vectors first, then each data set's top files (transforms)
# before its images: every part but the first holds data only.
files.sort(key=lambda f: (f.startswith("shared/data/"), f.count("/")))
parts, size = [first], 0
for f in files:
    n = os.path.getsize(os.path.join(first, f))
    if n > budget:
        sys.exit(f"error: {f} ({n / 2**20:.1f} MiB) alone is over the {budget / 2**20:.1f} MiB a call carries")
    if size + n > budget:
        parts.append(f"{first}-{len(parts) + 1}")
        size = 0
    size += n
    if len(parts) > 1:
        dst = os.path.join(parts[-1], f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.move(os.path.join(first, f), dst)
for p in parts:
    mib = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs) / 2**20
    print(f"{p}/: {mib:.1f} MiB (at most {budget / 2**20:.1f} MiB besides the working tree)")
if len(parts) > 1:
    print("carry each part in its own call of one warm machine: " +
          ", then ".join(f'["{p}"]' for p in parts))
PY
