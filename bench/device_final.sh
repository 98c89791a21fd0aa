#!/usr/bin/env bash
# The acceptance run of issues 10-12 on the H200, in one device call, from the repository root.
#   1. the gpu-marked tests (pytest -m gpu)                                  -> gpu_tests.txt
#   2. harness run SUBS --mode test, then --mode leaderboard (fresh inputs)  -> ledger.jsonl, run_*.txt
# Each step has its own time cap; a short table last (status, geomean, worst relative error x ref noise).
# Usage: bash bench/device_final.sh "13 119 200 201"   (SKIP_GPU_TESTS=1, STEPS="test:90 leaderboard:200" to choose)
set -u
SUBS=${1:-"13 119 200 201"}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
if [ -z "${SKIP_GPU_TESTS:-}" ]; then
    start=$(date +%s)
    timeout "${GPU_TESTS_CAP:-240}" python -m pytest -q -m gpu -p no:cacheprovider tests >"$OUT/gpu_tests.txt" 2>&1
    echo "pytest -m gpu exit $? in $(( $(date +%s) - start )) s: $(tail -n 1 "$OUT/gpu_tests.txt")" >>"$OUT/steps.txt"
fi
for step in ${STEPS:-test:90 leaderboard:200}; do
    mode=${step%:*} cap=${step#*:} start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "$cap" python -c "from harness.cli import main; main()" run $SUBS --mode "$mode" >"$OUT/run_$mode.txt" 2>&1
    echo "run --mode $mode exit $? (cap $cap s) in $(( $(date +%s) - start )) s" >>"$OUT/steps.txt"
done
cat "$OUT/steps.txt"
python - "$HARNESS_LEDGER" <<'PY'
import math
import sys

from harness.results import ledger

print(f"{'sub':>4} {'mode':<12} {'status':<6} {'geomean us':>10} {'worst err (x noise)':>20}  per-case us (or reason)")
for r in ledger.read(sys.argv[1]):
    means = [c["stats"]["mean"] / 1e3 for c in r["results"] if c.get("stats")]
    geo = math.exp(sum(map(math.log, means)) / len(means)) if means else float("nan")
    figures = [c["accuracy"] for c in r["results"] if c.get("accuracy")]
    worst = max(figures, key=lambda f: f["relative_error"], default=None)
    err = f"{worst['relative_error']:.4f} ({worst['noise_multiple']:.2f}x)" if worst else "-"
    detail = " ".join(f"{m:.1f}" for m in means) or r.get("reason", "")
    print(f"{r['submission']['number']:>4} {r['mode']:<12} {r['status']:<6} {geo:>10.1f} {err:>20}  {detail[:110]}")
PY
