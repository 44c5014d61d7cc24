#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh staged and the candidates of
# tools/gpu-machine/build_candidates.sh: a carried carry-v/ replaces the candidates staged in
# $state/bins/NAME/. The GPU tests of every candidate, then a gate (splat bench ab, gate.sh, no
# --timing runs) of each candidate whose tests pass against BASE.
#   tools/gpu-machine/candidates.sh BASE [PAIRS]        # e.g. base, 2 pairs: about 150 s per gate
# GATES="a b" gates only those candidates (GATES=none: tests only, e.g. before screen.sh);
# TESTED=1 skips the GPU tests (round.sh ran them already on this machine).
# Test logs and the gates' reports go to $out.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
base=$1 pairs=${2:-2}
if [ -d tools/gpu-machine/carry-v ]; then
  rm -rf "$state/bins"
  for dir in tools/gpu-machine/carry-v/*/; do
    name=$(basename "$dir")
    mkdir -p "$state/bins/$name"
    for b in splat splat_gpu_tests; do xz -dc "$dir/$b.xz" > "$state/bins/$name/$b"; done
    chmod +x "$state/bins/$name"/*
  done
  rm -rf tools/gpu-machine/carry-v
fi
with_nccl
passed=()
for dir in "$state"/bins/*/; do
  name=$(basename "$dir")
  [ -n "${TESTED:-}" ] && { passed+=("$name"); continue; }
  echo "== GPU tests, $name: $("$dir/splat" --version)"
  # A time limit (a hung test would take the call's whole budget) and line-buffered output (a
  # killed run still leaves its log).
  SPLAT_BIN="$dir/splat" timeout 300 stdbuf -oL "$dir/splat_gpu_tests" --gtest_brief=1 > "$out/tests_$name.log" 2>&1
  rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$out/tests_$name.log" | head -20
  [ $rc = 0 ] && passed+=("$name") || echo "$name: GPU tests failed (rc $rc), no gate"
done
for name in "${passed[@]}"; do
  [ "$name" = "$base" ] && continue
  [ -n "${GATES:-}" ] && [[ " $GATES " != *" $name "* ]] && continue
  echo "== gate $name against $base, $pairs pairs"
  OUT="$out/gate_$name" NO_TIMING=1 GATE_B="$state/bins/$name/splat" \
    bash tools/gpu-machine/gate.sh "$state/bins/$base/splat" "$pairs" | grep -E "verdict|median|sigma|threshold"
  # Keep the report, not the runs' outputs (too many files to bring back).
  cp "$out/gate_$name/ab/report.md" "$out/gate_${name}.md" && rm -rf "$out/gate_$name"
done
