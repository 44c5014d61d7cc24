#!/usr/bin/env bash
# Runs on the GPU machine with the parts of build.sh (binaries, the Lego protocol's data) and
# pack_python.sh (the package for the machine's Python, and the CLI of the same build) staged: the
# package's tests (against that CLI; the GPU test hands a model's device arrays to PyTorch through DLPack), then the
# Lego protocol trained by the CLI and from Python, alternating, PAIRS pairs (default 3). Train
# seconds from each run's metrics.json and the process's wall time; logs to $out.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
pairs=${1:-3}
if [ -f "$carry/python.tar.xz" ]; then
  rm -rf "$state/python" && mkdir -p "$state/python" &&
    tar -C "$state/python" -xJf "$carry/python.tar.xz" && rm "$carry/python.tar.xz"
fi
export PYTHONPATH="$state/python" SPLAT_BINARY="$state/python/splat_cli"
timeout 60 python3 -c "import sys, splat, torch; print(sys.version.split()[0], splat.__file__, 'torch', torch.__version__)" ||
  { echo "error: import splat failed or hung"; exit 1; }
rc=0
# Each step is bounded, so that a hang costs one step, not the call.
tests() {
  timeout "$1" python3 -m pytest -q tests/python -p no:cacheprovider "${@:2}" 2>&1 | tee -a "$out/pytest.log" | tail -4
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
}
tests 120 -k gpu_arrays -rs
lego=$carry/shared/data/lego
runs=$state/python_runs
rm -rf "$runs" && mkdir -p "$runs"
one() {  # one Lego run: cli|python and its index
  local t0 t1
  t0=$(date +%s.%N)
  if [ "$1" = cli ]; then
    timeout 120 "$SPLAT_BINARY" train "$lego" --config configs/lego.toml --out "$runs/$1_$2" >"$runs/$1_$2.log" 2>&1
  else
    timeout 120 python3 -c "import splat, sys
seen = []
splat.train(sys.argv[1], config='configs/lego.toml', out=sys.argv[2], progress=seen.append)
print(len(seen), 'progress calls')" "$lego" "$runs/$1_$2" >"$runs/$1_$2.log" 2>&1
  fi || { rc=1; tail -5 "$runs/$1_$2.log"; }
  t1=$(date +%s.%N)
  python3 -c "import json, sys; m = json.load(open(sys.argv[1]));
print(f\"{sys.argv[2]:>8} {sys.argv[3]}: train {m['train_seconds']:.3f} s, wall {float(sys.argv[5]) - float(sys.argv[4]):.2f} s, PSNR {m['psnr']:.3f} dB, {m['num_splats']} splats\")" \
    "$runs/$1_$2/metrics.json" "$1" "$2" "$t0" "$t1" | tee -a "$out/lego_cli_python.txt"
}
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then one cli "$i"; one python "$i"; else one python "$i"; one cli "$i"; fi
done
tests 150 -k "not gpu_arrays"
exit "$rc"
