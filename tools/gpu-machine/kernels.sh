#!/usr/bin/env bash
# Runs on the GPU machine after tools/gpu-machine/screen.sh (its checkpoint, the binaries in
# $state/bins/NAME/): every kernel of a few replayed steps under Nsight Compute with one metric,
# its duration, so the step's time splits by kernel (the --timing table splits it by stage).
# Chained submission (a graph hides its kernels from ncu); clocks left alone (--clock-control none,
# docs/benchmarks.md, "Method").
#   tools/gpu-machine/kernels.sh NAME...      # CKPT defaults to the screen's checkpoint
# FACTOR=F profiles a coarse-to-fine step instead (the views at 1/F size, bench replay --factor).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
ckpt=${CKPT:-$state/screen_train/checkpoint.ckpt} data=${DATA:-$carry/shared/data/lego} steps=4
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
[ -n "$ncu" ] || { echo "error: ncu not found on this machine" >&2; exit 1; }
for name in "$@"; do
  "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --print-kernel-base function "$state/bins/$name/splat" bench replay --checkpoint "$ckpt" "$data" \
    --iters $((steps - 1)) --warmup 1 --factor "${FACTOR:-1}" --set backend.submission=chained --set backend.pipelining=off \
    > "$out/kernels_$name.csv" 2> "$out/kernels_$name.err" || { tail -5 "$out/kernels_$name.err"; continue; }
  python3 - "$out/kernels_$name.csv" "$name" "$steps" <<'PY'
import csv, collections, sys
path, name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
k, v = head.index("Kernel Name"), head.index("Metric Value")
total, count = collections.defaultdict(float), collections.Counter()
for r in rows:
    total[r[k]] += float(r[v].replace(",", "")) / 1000.0  # ns -> us
    count[r[k]] += 1
print(f"\n| kernel ({name}) | launches | us per launch | us per step (/{steps}) |")
print("|---|---|---|---|")
for kern in sorted(total, key=total.get, reverse=True):
    print(f"| {kern[:60]} | {count[kern]} | {total[kern] / count[kern]:.1f} | {total[kern] / steps:.1f} |")
print(f"| all | {sum(count.values())} | | {sum(total.values()) / steps:.1f} |")
PY
done
