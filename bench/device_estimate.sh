#!/usr/bin/env bash
# Issue 21's GPU run on the H200, in one device call from the repository root: `harness estimate` on the official
# shapes (recorded on the GPU, aiter served by the stand-in), for 014 and 001 first, then the estimate samples while
# time is left. Each estimate has its own cap; a short table last (geomean and band, per-shape estimates) beside
# the official reference's calibration figures.
# Usage: bash bench/device_estimate.sh   (SUBS="014 001 ..." to choose; CAP=seconds per estimate; BUDGET=seconds in all)
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_RESULTS="$OUT/results" HARNESS_LEDGER="$OUT/ledger.jsonl"
python -c "import yaml" 2>/dev/null || python -m pip install -q --no-index .whl/pyyaml-*.whl >"$OUT/pip.txt" 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1
SAMPLES=tests/samples/aiter
SUBS=${SUBS:-"014 001 $SAMPLES/estimate_persistent_a8w8_item.py $SAMPLES/estimate_persistent_a8w8.py"}
started=$(date +%s)
for sub in $SUBS; do
    left=$(( ${BUDGET:-105} - ($(date +%s) - started) ))
    [ "$left" -lt 10 ] && { echo "$sub: not run (time spent)" >>"$OUT/steps.txt"; continue; }
    cap=$(( left < ${CAP:-45} ? left : ${CAP:-45} )) name=$(basename "$sub" .py) t0=$(date +%s)
    timeout "$cap" python -c "from harness.cli import main; main()" estimate "$sub" >"$OUT/estimate_$name.txt" 2>&1
    echo "estimate $sub exit $? (cap $cap s) in $(( $(date +%s) - t0 )) s" >>"$OUT/steps.txt"
done
cat "$OUT/steps.txt"
python - "$HARNESS_LEDGER" <<'PY'
import math
import sys

from harness.estimate import calibration
from harness.results import ledger


def geo(values):
    return math.exp(sum(map(math.log, values)) / len(values))


for row in calibration.load().rows:
    if row.id.startswith(("reference", "kernelsanders")):
        print(f"calibration {row.id}: geomean {geo(row.times_us.values()):.1f} us over {len(row.times_us)} shapes")
for r in ledger.read(sys.argv[1]):
    e = r.get("estimate") or {}
    g = e.get("geomean")
    name = r["submission"]["path"].rsplit("/", 1)[-1]
    if not g:
        print(f"{name}: no estimate: {r.get('reason', '')[:150]}")
        continue
    shapes = " ".join(f"{s['us']:.0f}" for s in e["shapes"])
    print(f"{name}: geomean {g['us']:.1f} us (band {g['low_us']:.1f}-{g['high_us']:.1f}), ranked {g['ranked_us']:.1f}"
          f" (band {g['ranked_low_us']:.1f}-{g['ranked_high_us']:.1f}); per shape: {shapes}; recorded on {e['recorded_on']}")
PY
