#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh (--scenes ...) and of
# tools/peer/pack_fastgs.sh staged: FastGS (CVPR 2026, fastgs/FastGS) trained by its own train.py
# with its base settings (train_base.sh: --densification_interval 500 --optimizer_type default,
# 30k iterations, its other defaults) on exactly splat's views (`splat bench views`, written in the
# Blender or COLMAP layout by views_to_fastgs.py), scored by its own scorer (fastgs_score.py) and by
# `splat eval` on splat's held-out views; one row, and JSON in $out/peer/.
#   tools/peer/fastgs.sh --build-only             # unpack, patch (fastgs_patch.py), build (minutes)
#   tools/peer/fastgs.sh SCENE [--config C] [--set k=v ...] [--mode own|same] [--iterations N]
#                        [train.py args ...]
# --mode own (default): FastGS's base settings. --mode same --iterations N: splat's workload, N
# being splat's train.iterations (its metrics.json "iterations"): --iterations N, the position lr
# decayed over N (--position_lr_max_steps N) and densification until N/2 (its 15k of 30k).
# FastGS has no splat cap: its count is recorded, not set. --config and --set go to `splat bench
# views` and `splat eval`. Builds once per warm machine into $state/peer/fastgs.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
. tools/gpu-machine/env.sh
splat=$carry/bin/splat
peer=$state/peer
fg=$peer/fastgs
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16}
sub=$fg/submodules
export PYTHONPATH="$fg:$sub/diff-gaussian-rasterization_fastgs:$sub/simple-knn:$sub/fused-ssim:$repo/tools/peer/shim${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out/peer" "$peer"
log=$peer/fastgs-build.log

setup_fastgs() {
  if [ ! -f "$fg/.built" ]; then
    [ -f "$carry/fastgs.tar.xz" ] || { echo "error: fastgs.tar.xz not staged (tools/peer/pack_fastgs.sh)" >&2; return 1; }
    rm -rf "$fg" && tar -C "$peer" -xJf "$carry/fastgs.tar.xz" && python3 tools/peer/fastgs_patch.py "$fg" >"$log" 2>&1 ||
      { cat "$log" >&2; return 1; }
    setup_built || build_fastgs || return 1
    touch "$fg/.built"
  fi
  python3 -c 'import diff_gaussian_rasterization_fastgs, simple_knn._C, fused_ssim' >>"$log" 2>&1 ||
    { cp "$log" "$out/peer/"; tail -5 "$log" >&2; return 1; }
}

# The extensions of an earlier lease (the machine image is the same), when carried in
# carry-peer/fastgs-built.tar.xz and they import; else they are built.
setup_built() {
  [ -f "$carry/fastgs-built.tar.xz" ] && tar -C "$peer" -xJf "$carry/fastgs-built.tar.xz" &&
    python3 -c 'import diff_gaussian_rasterization_fastgs, simple_knn._C, fused_ssim' >>"$log" 2>&1 &&
    echo "FastGS: the extensions of fastgs-built.tar.xz import; not rebuilt" >&2
}

# Builds the three extensions and writes them to $OUT/peer/fastgs-built.tar.xz, to be carried in
# carry-peer/ by later leases.
build_fastgs() {
  command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] ||
    export PATH="/usr/local/cuda/bin:$PATH" CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  local t0=$SECONDS m failed=
  # The three extensions build at once (each is a few large CUDA files), each into its own log.
  for m in diff-gaussian-rasterization_fastgs simple-knn fused-ssim; do
    echo "FastGS: building $m (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST)" >&2
    (cd "$sub/$m" && python3 setup.py build_ext --inplace) >"$log.$m" 2>&1 &
  done
  for m in diff-gaussian-rasterization_fastgs simple-knn fused-ssim; do
    wait -n || failed=1
  done
  for m in diff-gaussian-rasterization_fastgs simple-knn fused-ssim; do cat "$log.$m" >>"$log"; done
  [ -z "$failed" ] || { cp "$log" "$out/peer/"; grep -m5 -i "error" "$log" >&2; tail -5 "$log" >&2; return 1; }
  echo "FastGS: built in $((SECONDS - t0)) s" >&2
  (cd "$peer" && find fastgs/submodules -name '*.so' -not -path '*/build/*' -print0 | tar --null -T - -cJf "$out/peer/fastgs-built.tar.xz")
}

if [ "${1:-}" = --build-only ]; then
  setup_fastgs
  exit
fi
[ $# -ge 1 ] || { echo "usage: $0 --build-only | SCENE [--config C] [--set k=v ...] [--mode own|same] [--iterations N] [train.py args]" >&2; exit 2; }
scene=$1
shift
[ -d "$scene" ] || [ ! -d "$carry/shared/data/$scene" ] || scene=$carry/shared/data/$scene
[ -d "$scene" ] || { echo "error: no dataset directory $scene" >&2; exit 2; }
name=$(basename "$scene")
load=() extra=() mode=own iters=
while [ $# -gt 0 ]; do
  case $1 in
    --set | --config) load+=("$1" "$2"); shift ;;
    --mode) mode=$2; shift ;;
    --iterations) iters=$2; shift ;;
    *) extra+=("$1") ;;
  esac
  shift
done
case $mode in
  own) [ -z "$iters" ] || { echo "error: --iterations belongs to --mode same" >&2; exit 2; } ;;
  same) [[ $iters =~ ^[1-9][0-9]*$ ]] || { echo "error: --mode same needs --iterations N (splat's train.iterations)" >&2; exit 2; } ;;
  *) echo "error: --mode must be own or same, got $mode" >&2; exit 2 ;;
esac
tag=fastgs-$name-$mode
row() { echo "| $name | $mode | $* |"; }
echo "| scene | mode | FastGS loop s (wall) | its Training time s | splats | PSNR own | SSIM own | PSNR splat eval | SSIM splat eval | peak GPU MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
setup_fastgs || { row "failed: FastGS build (see $out/peer/fastgs-build.log)"; exit 1; }

views=$peer/views-$name data=$peer/fastgs-data-$name model=$peer/$tag
rm -rf "$views" "$data" "$model"
"$splat" bench views "$scene" --out "$views" "${load[@]}" >"$out/peer/$name-views.log" 2>&1 ||
  { row "failed: bench views: $(tail -1 "$out/peer/$name-views.log")"; exit 1; }
python3 tools/peer/views_to_fastgs.py "$views" "$data" >>"$out/peer/$name-views.log" 2>&1 ||
  { row "failed: views_to_fastgs: $(tail -1 "$out/peer/$name-views.log")"; exit 1; }
white=()
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["white_background"] else 1)' \
  "$data/peer_layout.json" && white=(--white_background)
# train_base.sh's arguments for every scene (its per-scene thresholds are for its benchmark scenes).
args=(--eval --densification_interval 500 --optimizer_type default --test_iterations 30000)
if [ "$mode" = same ]; then
  args+=(--iterations "$iters" --position_lr_max_steps "$iters" --densify_until_iter "$((iters / 2))"
    --save_iterations "$iters" --test_iterations "$iters")
fi
(cd "$fg" && python3 train.py -s "$data" -m "$model" "${white[@]}" "${args[@]}" "${extra[@]}") \
  >"$peer/$tag.log" 2>&1
rc=$?
tr '\r' '\n' <"$peer/$tag.log" | grep -v "Training progress" >"$out/peer/$tag.log"
[ $rc = 0 ] || { row "failed: train.py: $(tail -1 "$out/peer/$tag.log")"; exit 1; }
ply=$(ls -d "$model"/point_cloud/iteration_*/point_cloud.ply 2>/dev/null | sort -V | tail -1)
[ -n "$ply" ] || { row "failed: no point_cloud.ply under $model"; exit 1; }
(cd "$fg" && python3 "$repo/tools/peer/fastgs_score.py" -m "$model" --json "$peer/$tag-own.json") \
  >>"$out/peer/$tag.log" 2>&1 || { row "failed: fastgs_score.py: $(tail -1 "$out/peer/$tag.log")"; exit 1; }
"$splat" eval "$ply" "$scene" --out "$peer/$tag-eval" "${load[@]}" >"$out/peer/$tag-eval.log" 2>&1 ||
  { row "failed: eval: $(tail -1 "$out/peer/$tag-eval.log")"; exit 1; }
python3 - "$out/peer/$tag.log" "$peer/$tag-own.json" "$peer/$tag-eval/metrics.json" "$data/peer_layout.json" \
  "$out/peer/$tag.json" "$name" "$mode" "${iters:-30000}" "$ply" <<'PY'
import json, re, sys
logf, ownf, evalf, layoutf, outf, name, mode, iters, ply = sys.argv[1:]
text = open(logf).read()
grab = lambda pat, f=float: (lambda m: f(m.group(1)) if m else None)(re.search(pat, text))
own, ev, layout = (json.load(open(p)) for p in (ownf, evalf, layoutf))
r = {"peer": "FastGS", "scene": name, "mode": mode, "iterations": int(iters),
     "settings": "train_base.sh: --densification_interval 500 --optimizer_type default"
                 + (f"; --iterations {iters} --position_lr_max_steps {iters} --densify_until_iter "
                    f"{int(iters) // 2}" if mode == "same" else "; 30k iterations"),
     "splat_cap": "none (FastGS has no cap)",
     "train_loop_seconds": grab(r"Train loop wall seconds: ([0-9.eE+-]+)"),
     "fastgs_training_time": grab(r"Training time: ([0-9.eE+-]+)"),
     "num_splats": grab(r"Gaussian number: (\d+)", int), "model": ply,
     "peak_memory_mib": grab(r"Peak GPU memory MiB: ([0-9.eE+-]+)"),
     "own_metrics": own, "splat_eval": {"psnr": ev["psnr"], "ssim": ev["ssim"], "alpha_max": 0.99},
     "layout": layout,
     "init": f"{layout['init']} ({layout['layout']} layout)"}
json.dump(r, open(outf, "w"), indent=2)
f = lambda x, d: "-" if x is None else f"{x:.{d}f}"
print(f"| {name} | {mode} | {f(r['train_loop_seconds'], 2)} | {f(r['fastgs_training_time'], 2)} | "
      f"{r['num_splats']} | {f(own['psnr'], 3)} | {f(own['ssim'], 4)} | {ev['psnr']:.3f} | {ev['ssim']:.4f} | "
      f"{f(r['peak_memory_mib'], 0)} |")
print(f"    init: {r['init']}; principal point off centre by up to "
      f"{layout['max_principal_point_offset_px']:.2f} px (FastGS renders it centred); LPIPS {own['lpips']} ({own['lpips_note']})")
PY
