#!/usr/bin/env bash
# Runs on the GPU machine: stages the parts this call carried (env.sh) and lists what the machine
# holds: the binaries, and per dataset the views it has of those its transforms files name (a
# dataset larger than one call arrives in parts; a run needs them all).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
for dir in "$carry"/bin*/; do
  [ -x "$dir/splat" ] && echo "${dir#"$state"/}: $("$dir/splat" --version 2>&1 | head -1)"
done
python3 - "$carry/shared/data" <<'PY'
import glob, json, os, sys
for scene in sorted(glob.glob(f"{sys.argv[1]}/*/")):
    counts = []
    for t in sorted(glob.glob(f"{scene}transforms*.json")):
        frames = json.load(open(t))["frames"]
        paths = [os.path.join(scene, f["file_path"]) for f in frames]
        have = sum(1 for p in paths if os.path.exists(p) or glob.glob(glob.escape(p) + ".*"))
        counts.append(f"{os.path.basename(t)} {have}/{len(frames)}")
    print(f"{os.path.basename(scene.rstrip('/'))}: {', '.join(counts) or 'no transforms file'}")
PY
