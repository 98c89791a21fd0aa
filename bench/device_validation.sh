#!/usr/bin/env bash
# The GPU acceptance run, in one device call, from the repository root. Full logs under $OUT; a short
# table last. Steps (each with its own time cap so one slow step cannot eat the call):
#   1. reference speed on (256, 1, 8192)                        -> reference_speed.json
#   2. harness run SUBS --mode test        (official tests)      -> ledger
#   3. harness run SUBS --mode leaderboard (fresh input per call) -> ledger
#   4. harness run SUBS --mode benchmark   (fast flush)          -> ledger
#   5. harness scoreboard on that ledger                         -> scoreboard.md, scoreboard.png
# Usage: bash bench/device_validation.sh "1 119 200"
set -u
SUBS=${1:-"1 119 200"}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
export HARNESS_LEDGER="$OUT/ledger.jsonl"
harness() { python -c "from harness.cli import main; main()" "$@"; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
timeout 120 python bench/tools/reference_speed.py >"$OUT/reference_speed.log" 2>&1
echo "reference_speed exit $?" >>"$OUT/steps.txt"
for step in test:100 leaderboard:200 benchmark:200; do
    mode=${step%:*} cap=${step#*:} start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "$cap" python -c "from harness.cli import main; main()" run $SUBS --mode "$mode" >"$OUT/run_$mode.txt" 2>&1
    echo "run --mode $mode exit $? (cap $cap s) in $(( $(date +%s) - start )) s" >>"$OUT/steps.txt"
done
harness scoreboard --ledger "$HARNESS_LEDGER" --output "$OUT/scoreboard.md" >"$OUT/scoreboard.log" 2>&1
cp results/scoreboard.png "$OUT/" 2>/dev/null

cat "$OUT/steps.txt"
tail -n 1 "$OUT/reference_speed.log"
python - "$HARNESS_LEDGER" <<'PY'
import math
import sys

from harness.results import ledger

print(f"{'sub':>4} {'mode':<12} {'status':<6} {'geomean us':>10}  per-case us (or reason)")
for r in ledger.read(sys.argv[1]):
    means = [c["stats"]["mean"] / 1e3 for c in r["results"] if c.get("stats")]
    geo = math.exp(sum(map(math.log, means)) / len(means)) if means else float("nan")
    detail = " ".join(f"{m:.1f}" for m in means) or r.get("reason", "")
    print(f"{r['submission']['number']:>4} {r['mode']:<12} {r['status']:<6} {geo:>10.1f}  {detail[:120]}")
PY
