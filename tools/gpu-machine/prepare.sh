#!/usr/bin/env bash
# Runs on the GPU machine with the parts of build.sh (binaries) and pack_colmap.sh (COLMAP and the
# fox photos) staged: `splat train` with no config on fox as published (its transforms.json poses),
# then on the same photos with the poses thrown away (a folder of images: splat prepares it with
# COLMAP first, then trains), one after the other. Logs and metrics go to $out; each run's stage
# times are in its log (prepare's summary) and metrics.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
scene=${1:-fox}
if [ -f "$carry/colmap.tar.xz" ]; then
  rm -rf "$state/colmap" && tar -C "$state" -xJf "$carry/colmap.tar.xz" && rm "$carry/colmap.tar.xz"
  # COLMAP's own libraries for COLMAP alone: splat keeps the loader path env.sh set.
  mkdir -p "$state/colmap/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/colmap "$@"\n' "$state/colmap" "$state/colmap" \
    >"$state/colmap/bin/colmap"
  chmod +x "$state/colmap/bin/colmap"
fi
export PATH="$state/colmap/bin:$PATH"
colmap help 2>&1 | head -1
nproc
runs=$state/prepare_runs
rm -rf "$runs" && mkdir -p "$runs/photos"
cp "$carry/shared/data/$scene/images/"* "$runs/photos/"
rc=0
report() {
  python3 -c "import json; m = json.load(open('$runs/$1/metrics.json'));
print('$1', {k: m.get(k) for k in ('iterations', 'num_splats', 'train_seconds', 'psnr', 'ssim')});
print('  held out:', ' '.join(v['name'] for v in m.get('test_views', [])))"
  cp "$runs/$1/metrics.json" "$out/$1_metrics.json"
  # How far the splats reach (MCMC's noise may carry a few nearly transparent ones far away).
  python3 - "$runs/$1/model.ply" <<'PY'
import sys, numpy as np
f = open(sys.argv[1], "rb")
props, n = 0, 0
while (line := f.readline().decode().strip()) != "end_header":
    if line.startswith("element vertex"): n = int(line.split()[2])
    if line.startswith("property"): props += 1
xyz = np.frombuffer(f.read(), dtype="<f4").reshape(n, props)[:, :3]
r = np.abs(xyz).max(axis=1)
print(f"  model.ply: largest coordinate {r.max():.4g}; splats beyond 100 / 1e3 / 1e5: "
      f"{(r > 100).sum()} / {(r > 1e3).sum()} / {(r > 1e5).sum()}")
PY
}
# POSED=0 skips the posed run (its figure of an earlier call stands).
if [ "${POSED:-1}" = 1 ]; then
  start=$(date +%s)
  "$carry/bin/splat" train "$carry/shared/data/$scene" --out "$runs/posed" >"$out/posed.log" 2>&1 || rc=1
  echo "posed: $(($(date +%s) - start)) s wall"
  report posed
fi
start=$(date +%s)
"$carry/bin/splat" train "$runs/photos" --out "$runs/unposed" >"$out/unposed.log" 2>&1 || rc=1
echo "unposed (prepare + train): $(($(date +%s) - start)) s wall"
grep -iE "registered|stage|extract|match|map |write|points|reprojection|left out" "$out/unposed.log" | tail -20
report unposed
tail -40 "$runs/unposed/prepare.log" >"$out/colmap_tail.log" 2>/dev/null || true
exit "$rc"
