#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh (--scenes ...) and of
# tools/peer/pack_gsplat.sh staged: the peer trainer gsplat v1.5.3 (MCMC, simple_trainer.py's
# settings) trained by tools/peer/gsplat_mcmc.py on exactly the training views splat trains on
# (exported by `splat bench views`), then evaluated by `splat eval` on splat's held-out views; one row.
#   tools/gpu-machine/peer.sh --build-only            # build gsplat's CUDA extension only (minutes)
#   tools/gpu-machine/peer.sh SCENE [--config C] [--set k=v ...] [driver args ...]
#   tools/gpu-machine/peer.sh figurine --set data.downscale=2 --steps 30000 --cap 1000000
#   tools/gpu-machine/peer.sh lego --config configs/lego.toml --cube 100000 1.3 [--strategy default]
#   tools/gpu-machine/peer.sh lego --config configs/lego.toml --cube 100000 1.3 --mode same --steps 12500 --cap 400000
# SCENE is a dataset directory, or the name of a staged one. --config and --set go to both
# `splat bench views` and `splat eval`, so the views trained on and evaluated on are splat's own;
# every other argument goes to gsplat_mcmc.py (--strategy, --mode, --steps, --cap, --cube, ...).
# The model is scored by gsplat's own renderer (gsplat_mcmc.py) and by `splat eval` twice: with
# splat's alpha clamp (0.99) and with gsplat's (--alpha-max 0.999).
# gsplat is unpacked to $state/peer/gsplat and its extension built once per warm machine (JIT
# through its gsplat/cuda/_backend.py into $state/peer/torch_extensions; setup.py build_ext
# --inplace if that fails); later calls reuse it. Outputs in $state/peer/: views-NAME,
# peer-NAME.{ply,json}, peer-NAME-eval/metrics.json; the training log (as it runs), the JSONs and
# the other logs in $out/peer/.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
splat=$carry/bin/splat
peer=$state/peer
gs=$peer/gsplat shims=$peer/shims
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16}
export TORCH_EXTENSIONS_DIR=$peer/torch_extensions
fs=$peer/fused-ssim
export PYTHONPATH="$gs:$fs:$shims${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out/peer" "$peer"

# gsplat's package imports rich and packaging at import time (gsplat/cuda/_backend.py); where the
# machine lacks them, minimal stand-ins (messages only / torch's vendored packaging) are used.
write_shims() {
  mkdir -p "$shims"
  if ! python3 -c 'import rich.console' 2>/dev/null; then
    mkdir -p "$shims/rich"
    : >"$shims/rich/__init__.py"
    cat >"$shims/rich/console.py" <<'EOF'
# Stand-in for rich.console (peer.sh): gsplat only prints messages through it.
import contextlib
import re
import sys


class Console:
    def print(self, *args, **kwargs):
        print(*(re.sub(r"\[/?[a-z ]+\]", "", str(a)) for a in args), file=sys.stderr, flush=True)

    def status(self, message, **kwargs):
        self.print(message)
        return contextlib.nullcontext()
EOF
    echo "gsplat: using a rich.console stand-in" >&2
  fi
  if ! python3 -c 'import packaging.version' 2>/dev/null; then
    mkdir -p "$shims/packaging"
    : >"$shims/packaging/__init__.py"
    cat >"$shims/packaging/version.py" <<'EOF'
# Stand-in for packaging.version (peer.sh): gsplat compares torch versions with it.
try:
    from torch._vendor.packaging.version import *  # noqa: F401,F403
    from torch._vendor.packaging.version import parse  # noqa: F401
except ImportError:
    import re

    def parse(v):
        return tuple(int(x) for x in re.findall(r"\d+", str(v).split("+")[0])[:3])
EOF
    echo "gsplat: using a packaging.version stand-in" >&2
  fi
}

setup_gsplat() {
  if [ ! -f "$gs/.unpacked" ]; then
    [ -f "$carry/gsplat.tar.xz" ] && [ -f "$carry/glm.tar.xz" ] ||
      { echo "error: gsplat.tar.xz or glm.tar.xz not staged (tools/peer/pack_gsplat.sh)" >&2; return 1; }
    rm -rf "$gs" && tar -C "$peer" -xJf "$carry/gsplat.tar.xz" || return 1
    # _backend.py and setup.py include gsplat/cuda/csrc/third_party/glm (the submodule's root).
    mkdir -p "$gs/gsplat/cuda/csrc/third_party/glm" &&
      tar -C "$gs/gsplat/cuda/csrc/third_party/glm" -xJf "$carry/glm.tar.xz" && touch "$gs/.unpacked" || return 1
  fi
  write_shims
  local check='from gsplat.cuda._backend import _C; import gsplat; assert _C is not None, "no _C"; print("gsplat", gsplat.__version__, "ready")'
  # The JIT build folder of an earlier machine (the image is the same): its objects are newer than
  # the sources, so the JIT's ninja finds nothing to do; where it does, it builds.
  if [ -f "$carry/gsplat-built.tar.xz" ] && [ ! -d "$TORCH_EXTENSIONS_DIR/gsplat_cuda" ]; then
    tar -C "$peer" -xJf "$carry/gsplat-built.tar.xz" torch_extensions &&
      echo "gsplat: the extension of gsplat-built.tar.xz unpacked" >&2
  fi
  # Importing gsplat.cuda._backend builds the extension when it is not there yet, so look first.
  if compgen -G "$TORCH_EXTENSIONS_DIR/gsplat_cuda/gsplat_cuda*.so" >/dev/null ||
    compgen -G "$gs/gsplat/csrc*.so" >/dev/null; then
    python3 -c "$check" 2>/dev/null && return 0
  fi
  command -v nvcc >/dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] ||
    export PATH="/usr/local/cuda/bin:$PATH" CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  echo "gsplat: building the CUDA extension (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST, MAX_JOBS=$MAX_JOBS)" >&2
  local t0=$SECONDS
  if ! VERBOSE=1 python3 -c "$check" >"$peer/gsplat-build.log" 2>&1; then
    echo "gsplat: JIT build failed ($(tail -1 "$peer/gsplat-build.log")); trying setup.py build_ext --inplace" >&2
    (cd "$gs" && python3 setup.py build_ext --inplace) >>"$peer/gsplat-build.log" 2>&1 &&
      python3 -c "$check" >>"$peer/gsplat-build.log" 2>&1 ||
      { cp "$peer/gsplat-build.log" "$out/peer/"; tail -30 "$peer/gsplat-build.log" >&2; return 1; }
  fi
  echo "gsplat: built in $((SECONDS - t0)) s" >&2
  built=1
  cp "$peer/gsplat-build.log" "$out/peer/"
  tail -1 "$peer/gsplat-build.log"
}

# fused-ssim (simple_trainer's SSIM loss), built in place from the staged sources once per machine.
setup_fused_ssim() {
  python3 -c 'import fused_ssim' 2>/dev/null && return 0
  [ -f "$carry/fused-ssim.tar.xz" ] ||
    { echo "error: fused-ssim.tar.xz not staged (tools/peer/pack_gsplat.sh ... FUSED_SSIM_GIT_DIR)" >&2; return 1; }
  rm -rf "$fs" && tar -C "$peer" -xJf "$carry/fused-ssim.tar.xz" || return 1
  if [ -f "$carry/gsplat-built.tar.xz" ] && tar -C "$peer" -xJf "$carry/gsplat-built.tar.xz" fused-ssim &&
    python3 -c 'import fused_ssim' 2>/dev/null; then
    echo "fused-ssim: the extension of gsplat-built.tar.xz imports; not rebuilt" >&2
    return 0
  fi
  echo "fused-ssim: building (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST)" >&2
  (cd "$fs" && CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-90} python3 setup.py build_ext --inplace) >"$peer/fused-ssim-build.log" 2>&1 &&
    python3 -c 'import fused_ssim' >>"$peer/fused-ssim-build.log" 2>&1 ||
    { cp "$peer/fused-ssim-build.log" "$out/peer/"; tail -20 "$peer/fused-ssim-build.log" >&2; return 1; }
  built=1
}

# After a build on this machine: both extensions (gsplat's JIT build folder, fused-ssim's module)
# to $OUT/peer/gsplat-built.tar.xz, to be carried in carry-peer/ by later machines.
save_built() {
  [ -n "$built" ] || return 0
  (cd "$peer" && tar -cJf "$out/peer/gsplat-built.tar.xz" torch_extensions/gsplat_cuda fused-ssim/*.so)
}

built=

if [ "${1:-}" = --build-only ]; then
  setup_gsplat && setup_fused_ssim && save_built
  exit
fi
[ $# -ge 1 ] || { echo "usage: $0 --build-only | SCENE [--config C] [--set k=v ...] [driver args]" >&2; exit 2; }
scene=$1
shift
[ -d "$scene" ] || [ ! -d "$carry/shared/data/$scene" ] || scene=$carry/shared/data/$scene
[ -d "$scene" ] || { echo "error: no dataset directory $scene" >&2; exit 2; }
name=$(basename "$scene")
load=() driver=()
while [ $# -gt 0 ]; do
  case $1 in
    --set | --config) load+=("$1" "$2"); shift ;;
    *) driver+=("$1") ;;
  esac
  shift
done
row() { echo "| $name | $* |"; }
echo "| scene | gsplat train s | splats | held-out PSNR dB |"
echo "|---|---|---|---|"
setup_gsplat >/dev/null || { row "failed: gsplat build (see $out/peer/gsplat-build.log)"; exit 1; }
setup_fused_ssim || { row "failed: fused-ssim build (see $out/peer/fused-ssim-build.log)"; exit 1; }
save_built

views=$peer/views-$name model=$peer/peer-$name.ply
rm -rf "$views"
"$splat" bench views "$scene" --out "$views" "${load[@]}" >"$out/peer/$name-views.log" 2>&1 ||
  { row "failed: bench views: $(tail -1 "$out/peer/$name-views.log")"; exit 1; }
# The log goes to $out as it is written: a call cut at its time limit still brings back how far
# the training got.
PYTHONUNBUFFERED=1 python3 tools/peer/gsplat_mcmc.py "$views" --out "$model" --json "$peer/peer-$name.json" \
  "${driver[@]}" >"$out/peer/peer-$name.log" 2>&1
rc=$?
[ $rc = 0 ] || { row "failed: gsplat_mcmc.py: $(tail -1 "$out/peer/peer-$name.log")"; exit 1; }
cp "$peer/peer-$name.json" "$out/peer/"
for a in 0.99 0.999; do
  "$splat" eval "$model" "$scene" --out "$peer/peer-$name-eval-$a" --alpha-max "$a" "${load[@]}" \
    >"$out/peer/$name-eval-$a.log" 2>&1 || { row "failed: eval: $(tail -1 "$out/peer/$name-eval-$a.log")"; exit 1; }
done
python3 - "$peer/peer-$name.json" "$peer/peer-$name-eval-0.99/metrics.json" \
  "$peer/peer-$name-eval-0.999/metrics.json" "$name" <<'PY'
import json, sys
r, e99, e999 = (json.load(open(p)) for p in sys.argv[1:4])
o = r.get("own_metrics") or {}
f = lambda x, d: "-" if x is None else f"{x:.{d}f}"
print(f"| {sys.argv[4]} | {r['train_seconds']:.2f} | {r['num_splats']} | {e99['psnr']:.3f} |")
print(f"    gsplat {r['gsplat_version']} {r['strategy']} ({r['mode']} mode), {r['steps']} steps, cap "
      f"{r['settings']['cap']}, {r['train_views']} train views, init {r['init_note']} "
      f"({r['init_splats']}), ssim {r['ssim']}, peak {r['peak_memory_mib']:.0f} MiB")
print(f"    PSNR/SSIM: splat eval (alpha 0.99) {e99['psnr']:.3f}/{e99['ssim']:.4f}; splat eval "
      f"(alpha 0.999, gsplat's) {e999['psnr']:.3f}/{e999['ssim']:.4f}; gsplat's own "
      f"{f(o.get('psnr'), 3)}/{f(o.get('ssim'), 4)}, LPIPS {o.get('lpips')}")
r["splat_eval"] = {"alpha_0.99": {k: e99[k] for k in ("psnr", "ssim")},
                   "alpha_0.999": {k: e999[k] for k in ("psnr", "ssim")}}
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
cp "$peer/peer-$name.json" "$out/peer/"
