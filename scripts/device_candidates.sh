#!/usr/bin/env bash
# Runs on the GPU machine with .carry/ (scripts/device_build.sh) and .carry-v/
# (scripts/build_candidates.sh): the GPU tests of every candidate, then a gate (splat bench ab,
# scripts/device_gate.sh, no --timing runs) of each candidate whose tests pass against BASE.
#   scripts/device_candidates.sh BASE [PAIRS]        # e.g. base, 2 pairs: about 150 s per gate
# GATES="a b" gates only those candidates (GATES=none: tests only, e.g. before device_screen.sh);
# TESTED=1 skips the GPU tests (scripts/device_round.sh ran them already in this lease).
# Test logs and the gates' reports go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
base=$1 pairs=${2:-2}
for dir in .carry-v/*/; do
  name=$(basename "$dir")
  mkdir -p "/tmp/bins/$name"
  for b in splat splat_gpu_tests; do xz -dc "$dir/$b.xz" > "/tmp/bins/$name/$b"; done
  chmod +x "/tmp/bins/$name"/*
done
# NCCL comes with PyTorch's wheels on that machine.
nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH="$PWD/.carry/lib${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
passed=()
for dir in /tmp/bins/*/; do
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
  OUT="$out/gate_$name" NO_TIMING=1 GATE_B="/tmp/bins/$name/splat" \
    bash scripts/device_gate.sh "/tmp/bins/$base/splat" "$pairs" | grep -E "verdict|median|sigma|threshold"
  # Keep the report, not the runs' outputs (too many files to bring back).
  cp "$out/gate_$name/ab/report.md" "$out/gate_${name}.md" && rm -rf "$out/gate_$name"
done
