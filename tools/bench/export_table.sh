#!/usr/bin/env bash
# The export table of docs/benchmarks.md: file size and test-view PSNR of a model in every format
# splat writes, against the float .ply, printed as a markdown table.
#   tools/bench/export_table.sh MODEL DATA [OUT_DIR] [-- extra splat eval arguments, e.g. --set backend.type=cpu]
# MODEL is a .ply or a checkpoint (a checkpoint's data settings apply, as for splat eval).
# SPLAT names the binary (default: build/splat, else build-cpu/splat).
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,6p "$0" >&2; exit 2; }
model=$1 data=$2
shift 2
out=out/export_table
if [ $# -gt 0 ] && [ "$1" != "--" ]; then out=$1; shift; fi
[ "${1:-}" = "--" ] && shift
extra=("$@")
splat=${SPLAT:-}
if [ -z "$splat" ]; then
  for b in build/splat build-cpu/splat; do [ -x "$b" ] && { splat=$b; break; }; done
fi
[ -x "$splat" ] || { echo "no splat binary (build it, or set SPLAT)" >&2; exit 1; }
mkdir -p "$out"

# PSNR of one model file on DATA's test views, from splat eval's summary line.
psnr_of() {
  "$splat" eval "$1" "$data" "${extra[@]}" | sed -n 's/^mean over .* views: PSNR \([0-9.]*\) dB.*/\1/p'
}

echo "splat $("$splat" --version | head -1), model $model, data $data, $(date -u +%Y-%m-%d)" >&2
files=()
for f in ply compressed-ply spz splat; do
  case $f in
    ply) name=model.ply ;;
    compressed-ply) name=model.compressed.ply ;;
    *) name=model.$f ;;
  esac
  "$splat" export "$model" --format "$f" --out "$out/$name" >&2
  files+=("$f:$out/$name")
done
ply_bytes=$(stat -c %s "$out/model.ply")
ply_psnr=$(psnr_of "$out/model.ply")
echo "| format | SH degree | bytes | size vs .ply | test PSNR (dB) | PSNR loss (dB) |"
echo "|---|---|---|---|---|---|"
for entry in "${files[@]}"; do
  f=${entry%%:*} file=${entry#*:}
  bytes=$(stat -c %s "$file")
  psnr=$(psnr_of "$file")
  degree=$("$splat" export "$file" --format ply --out "$out/.probe.ply" | sed -n 's/.*SH degree \([0-9]\).*/\1/p')
  awk -v f="$f" -v d="$degree" -v b="$bytes" -v pb="$ply_bytes" -v p="$psnr" -v pp="$ply_psnr" \
    'BEGIN { printf "| %s | %s | %d | %.1f%% | %.3f | %.3f |\n", f, d, b, 100 * b / pb, p, pp - p }'
done
rm -f "$out/.probe.ply"
