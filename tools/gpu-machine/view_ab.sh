#!/usr/bin/env bash
# Runs on the GPU machine with the parts of tools/gpu-machine/build.sh staged (Lego): the training
# slowdown of `splat train --view` while a page watches. Alternating runs of the Lego
# protocol without and with --view; in the --view runs a poller does what the page does (GET /info
# each second, /model whenever the version advances, /metrics), so snapshots are taken every 2 s.
#   tools/gpu-machine/view_ab.sh [PAIRS]      (default 3)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
pairs=${1:-3}
lego=("$carry/shared/data/lego" --config configs/lego.toml)
for i in $(seq "$pairs"); do
  for mode in plain view; do
    dir=$out/view_ab/$mode-$i
    mkdir -p "$(dirname "$dir")"
    if [ $mode = plain ]; then
      "$carry/bin/splat" train "${lego[@]}" --out "$dir" >"$dir.log" 2>&1
    else
      "$carry/bin/splat" train "${lego[@]}" --out "$dir" --view 8090 >"$dir.log" 2>&1 &
      pid=$!
      python3 - "$dir/metrics.json" <<'PY'
import json, os, sys, time, urllib.request
done_file, url = sys.argv[1], "http://127.0.0.1:8090"
get = lambda p: urllib.request.urlopen(url + p, timeout=30).read()
version, models = -1, 0
while not os.path.exists(done_file):
    try:
        info = json.loads(get("/info"))
        if info["version"] != version:
            version = info["version"]
            get("/model"); models += 1
        get("/metrics")
    except OSError:
        pass  # not listening yet
    time.sleep(1)
print(f"poller: {models} models fetched")
PY
      sleep 2; kill -INT $pid; wait $pid
    fi
    python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]:5} {m['train_seconds']:.2f} s  {m['psnr']:.3f} dB\")" "$dir/metrics.json" $mode
  done
done
