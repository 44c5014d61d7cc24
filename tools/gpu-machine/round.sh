#!/usr/bin/env bash
# Runs on the GPU machine with the parts of build.sh and build_candidates.sh staged: a whole round
# in one call (a fresh machine costs about a minute of the session's device time): the GPU tests
# of every candidate (candidates.sh), the screen (screen.sh), then the gate of the
# screen's fastest candidate against BASE if its tests passed and it screened at least MIN_GAIN
# percent faster (default 1, the gate's own floor). The screen only picks; the gate decides.
# GATEABLE="a b" limits the gate to those candidates (the others are screened only: a binary that
# mixes changes to several stages is read per stage from the --timing table, not gated).
#   tools/gpu-machine/round.sh BASE [PAIRS]        # about 100 s plus 170 s for a gate of 2 pairs
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/gpu-machine/env.sh
base=$1 pairs=${2:-2}
GATES=none bash tools/gpu-machine/candidates.sh "$base"
bash tools/gpu-machine/screen.sh "$base" "${ROUNDS:-3}"
best=$(python3 - "$out" "$base" "${MIN_GAIN:-1}" "${GATEABLE:-}" "$state/bins" <<'PY'
import glob, json, os, statistics, sys
out, base, min_gain, gateable, bins = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
def passed(name):
    try:
        log = open(f"{out}/tests_{name}.log").read()
    except OSError:
        return False
    return "[  PASSED  ]" in log and "[  FAILED  ]" not in log
def median(name):
    runs = [json.load(open(f))["median_ms"] for f in glob.glob(f"{out}/screen/{name}_r*.json")]
    return statistics.median(runs) if runs else None
names = sorted(os.path.basename(d.rstrip("/")) for d in glob.glob(f"{bins}/*/"))
names = [n for n in names if not gateable or n in gateable]
b = median(base)
ranked = sorted((m / b - 1, n) for n in names if n != base and passed(n) and (m := median(n)) is not None) if b else []
if ranked and ranked[0][0] * 100 <= -min_gain:
    print(ranked[0][1])
PY
)
if [ -z "$best" ]; then
  echo "== no candidate screened at least ${MIN_GAIN:-1}% faster with its tests passed: no gate"
  exit 0
fi
echo "== gate: $best (the screen's fastest)"
GATES="$best" TESTED=1 bash tools/gpu-machine/candidates.sh "$base" "$pairs"
