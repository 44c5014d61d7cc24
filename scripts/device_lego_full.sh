#!/usr/bin/env bash
# Runs on the GPU machine: the Lego protocol scored on all 200 test views, in two calls of one warm
# lease (a call carries at most 64 MiB; the training views and 200 test views are 92 MiB):
#   1. with .carry/ from `scripts/device_build.sh` (the device subset: 100 training views, every
#      4th test view): `scripts/device_lego_full.sh train [--set K=V ...]` trains the protocol
#      (configs/lego.toml), scores the 50 views, and keeps the checkpoint and metrics under
#      /root/lego_full (outside the repository copy, which the next call replaces);
#   2. with .carry/ from `scripts/device_build.sh --lego-rest` (the other 150 test views):
#      `scripts/device_lego_full.sh eval` scores the kept checkpoint on them and prints the
#      200-view mean (per-view PSNRs averaged, as the 50-view figure is).
# `train` may run several times (RUNS=2: deterministic mode repeats the model to the bit, which the
# printed hashes of the models' splats show); eval scores the last run's checkpoint.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
keep=/root/lego_full
case ${1:-} in
  train)
    shift
    mkdir -p "$keep"
    for run in $(seq 1 "${RUNS:-1}"); do
      .carry/bin/splat train .carry/shared/data/lego --config configs/lego.toml \
        --set data.test_every=4 "$@" --out "$keep/run" --overwrite >"$out/train_$run.log" 2>&1 ||
        { tail -5 "$out/train_$run.log"; exit 1; }
      cp "$keep/run/metrics.json" "$out/metrics_50_$run.json"
      python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(f\"run {sys.argv[2]}: {m['train_seconds']:.2f} s, {m['ms_per_iter']:.3f} ms/iter, 50 views {m['psnr']:.3f} dB, {m['num_splats']} splats, peak {m['peak_memory_bytes'] / 2**20:.0f} MiB\")" \
        "$keep/run/metrics.json" "$run"
      # The splats' bytes (after the header, whose comment names the run): equal when the runs are.
      python3 -c "import hashlib,sys; d=open(sys.argv[1],'rb').read(); print('    model.ply splats sha256', hashlib.sha256(d[d.index(b'end_header\\n'):]).hexdigest()[:16])" \
        "$keep/run/model.ply"
    done ;;
  eval)
    [ -f "$keep/run/checkpoint.ckpt" ] || { echo "no $keep/run/checkpoint.ckpt: run 'train' first in this lease" >&2; exit 1; }
    .carry/bin/splat eval "$keep/run/checkpoint.ckpt" .carry/shared/data/lego_rest \
      --set data.test_every=1 --out "$out/rest" >"$out/eval_rest.log" 2>&1 || { tail -5 "$out/eval_rest.log"; exit 1; }
    cp "$keep/run/metrics.json" "$out/metrics_50.json"
    python3 - "$out/metrics_50.json" "$out/rest/metrics.json" <<'PY'
import json, sys
fifty = json.load(open(sys.argv[1]))["test_views"]
rest = json.load(open(sys.argv[2]))["test_views"]
views = fifty + rest
assert len(views) == 200 and len({v["name"] for v in views}) == 200, "expected 200 distinct test views"
mean = lambda key, vs: sum(v[key] for v in vs) / len(vs)
print(f"50 views {mean('psnr', fifty):.3f} dB, other 150 {mean('psnr', rest):.3f} dB, "
      f"all 200: PSNR {mean('psnr', views):.3f} dB, SSIM {mean('ssim', views):.4f}")
PY
    ;;
  *) echo "usage: $0 train [--set K=V ...] | eval" >&2; exit 2 ;;
esac
