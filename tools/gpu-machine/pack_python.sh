#!/usr/bin/env bash
# Builds the Python module splat._splat with CUDA (sm_90) for the GPU machine's Python 3.12 and
# packs the package (python/splat/ and the module) into the part tools/gpu-machine/carry-python/
# for python.sh, with the `splat` command of the same build (the same compiled libraries), which
# python.sh times the Python-driven training against. The machine's image has no headers to build against, so the module is built here
# against a local CPython 3.12 (PY312, default pyenv's) with the same CMake build as setup.py's.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PY312:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1)}
[ -x "$py" ] || { echo "error: no Python 3.12 here (set PY312)" >&2; exit 1; }
build=build-pycuda
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPLAT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPLAT_PYTHON=ON -DSPLAT_TESTS=OFF -DPython3_EXECUTABLE="$py" >/dev/null
cmake --build "$build" --target _splat splat -j"$(nproc)"
module=$(ls "$build"/_splat.cpython-312-*.so)
p=tools/gpu-machine/carry-python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/splat" && cp python/splat/*.py python/splat/*.pyi "$module" "$tmp/splat/"
rm -rf "$p" && mkdir -p "$p"
strip -o "$tmp/splat_cli" "$build/splat"
tar -C "$tmp" -cJf "$p/python.tar.xz" splat splat_cli
echo "$module -> $p"
du -sh "$p"/*
