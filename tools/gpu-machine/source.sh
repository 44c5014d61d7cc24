#!/usr/bin/env bash
# Runs on the GPU machine after tools/gpu-machine/screen.sh (its checkpoint, the binaries in
# $state/bins/NAME/): Nsight Compute's source counters (warp stall samples and executed
# instructions; the kernels carry -lineinfo) of the kernels matching REGEX, one launch each, written per SASS
# instruction to $OUT/source_NAME_TAG.csv, and the hottest instructions printed.
#   tools/gpu-machine/source.sh NAME [REGEX [TAG]]   # default: rasterize_fwd_kernel, tag fwd
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
name=$1 regex=${2:-rasterize_fwd_kernel} tag=${3:-fwd}
ckpt=${CKPT:-$state/screen_train/checkpoint.ckpt} data=${DATA:-$carry/shared/data/lego}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
[ -n "$ncu" ] || { echo "error: ncu not found on this machine" >&2; exit 1; }
mkdir -p "$state/ncu"
rep=$state/ncu/source_${name}_$tag
"$ncu" --clock-control none --kernel-name "regex:$regex" --launch-skip 5 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source yes -f -o "$rep" \
  "$state/bins/$name/splat" bench replay --checkpoint "$ckpt" "$data" --iters 8 --warmup 2 \
  --set backend.submission=chained --set backend.pipelining=off > "$out/source_${name}_$tag.log" 2>&1 ||
  { tail -5 "$out/source_${name}_$tag.log"; exit 1; }
# Per SASS instruction (the CUDA-source page carries no metrics in CSV), then the hottest ones.
"$ncu" --import "$rep.ncu-rep" --page source --csv --print-source sass > "$out/source_${name}_$tag.csv" 2>&1
python3 - "$out/source_${name}_$tag.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next((r for r in rows if any("Source" == c or "Address" in c for c in r)), None)
if head is None:
    print("no header found; first lines:"); [print(r[:8]) for r in rows[:5]]; sys.exit()
print("columns:", head)
num = lambda v: float(v.replace(",", "")) if v.replace(",", "").replace(".", "", 1).isdigit() else 0.0
samp = next((i for i, c in enumerate(head) if "Sampling" in c and "All" in c), None) or \
       next((i for i, c in enumerate(head) if "Samples" in c or "Stall" in c), None)
src = next((i for i, c in enumerate(head) if c == "Source"), 1)
body = [r for r in rows if len(r) == len(head) and r is not head]
total = sum(num(r[samp]) for r in body) or 1
print(f"samples column: {head[samp]}, total {total:.0f}")
for r in sorted(body, key=lambda r: -num(r[samp]))[:45]:
    print(f"{100 * num(r[samp]) / total:5.1f}%  {r[src][:110]}")
PY
