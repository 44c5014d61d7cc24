#!/usr/bin/env bash
# The CPU build under AddressSanitizer and UBSan (clang, into build-san/): the unit tests, then
# each parser's libFuzzer target for FUZZ_SECONDS (default 30) from its corpus in tests/fuzz/corpus.
# Any sanitizer report, crash, hang (an input taking over 10 s) or error other than a splat::Error
# fails it; the input that did it is left in build-san/fuzz-crashes/.
#   tools/dev/sanitize.sh [--fuzz-only]
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh --test
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPLAT_SANITIZE=ON \
  -DSPLAT_CUDA=OFF -DSPLAT_MPI=OFF >/dev/null
cmake --build build-san -j"$(nproc)" --target splat splat_tests splat_fuzz
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
if [ "${1:-}" != "--fuzz-only" ]; then
  echo "== unit tests under ASan + UBSan"
  ctest --test-dir build-san --output-on-failure -j"$(nproc)" -L unit
fi
mkdir -p build-san/fuzz-crashes
for target in build-san/fuzz_*; do
  name=$(basename "$target")
  corpus=build-san/fuzz-corpus/$name
  mkdir -p "$corpus"
  echo "== $name: ${FUZZ_SECONDS:-30} s"
  # libFuzzer stops at a corpus folder that does not exist: seeds only where some are committed.
  seeds=()
  [ -d tests/fuzz/corpus/"$name" ] && seeds=(tests/fuzz/corpus/"$name")
  # New inputs go to build-san's corpus; the committed seeds are only read.
  "$target" -max_total_time="${FUZZ_SECONDS:-30}" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix=build-san/fuzz-crashes/"$name"- "$corpus" "${seeds[@]}" 2>&1 | tail -n 12
done
