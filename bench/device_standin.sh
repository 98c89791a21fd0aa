#!/usr/bin/env bash
# Issue 19 on the H200, in one device call, from the repository root (the aiter stand-in: correctness only).
#   0. PyYAML from a carried wheel (.whl/pyyaml-*.whl) when the machine lacks it
#   1. bench/tools/standin_noise.py cuda: the reference through the stand-in on every official shape  -> noise.txt
#   2. harness run 14 --mode test (official cases + the stress warnings), then --mode leaderboard -> run_*.txt
#   3. the gpu-marked stand-in tests (samples on official shapes: CUDA-graph replay, page size 8) -> gpu_tests.txt
# Each step has its own time cap (STEPS / caps below); a short table last.
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if ! python -c "import yaml" 2>/dev/null && ls .whl/pyyaml-*.whl >/dev/null 2>&1; then
    python -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/pyyaml-*.whl >"$OUT/pip.txt" 2>&1
fi
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
export HARNESS_RESULTS="$OUT/results"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1
step() {  # name cap command...
    local name=$1 cap=$2 start
    shift 2
    start=$(date +%s)
    timeout "$cap" "$@" >"$OUT/$name.txt" 2>&1
    echo "$name exit $? (cap $cap s) in $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.txt"
}
step noise "${NOISE_CAP:-25}" python bench/tools/standin_noise.py cuda
step run_test "${TEST_CAP:-38}" python -c "from harness.cli import main; main()" run 14 --mode test --timeout 30
step run_leaderboard "${LB_CAP:-40}" python -c "from harness.cli import main; main()" run 14 --mode leaderboard \
    --timeout 32
step gpu_tests "${GPU_TESTS_CAP:-40}" python -m pytest -q -m gpu -p no:cacheprovider tests/test_standin_samples.py \
    tests/test_aiter_standin.py
tail -n 12 "$OUT/noise.txt"
python - "$HARNESS_RESULTS/ledger.jsonl" <<'PY'
import math
import sys

from harness.results import ledger

for r in ledger.read(sys.argv[1]):
    means = [c["stats"]["mean"] / 1e3 for c in r["results"] if c.get("stats")]
    figures = [c["accuracy"] for c in r["results"] if c.get("accuracy")]
    worst = max(figures, key=lambda f: f["relative_error"], default=None)
    err = f"{worst['relative_error']:.4f} ({worst['noise_multiple']:.2f}x)" if worst else "-"
    print(f"{r['submission']['number']} {r['mode']:<11} {r['status']:<5} standin={r.get('standin')} "
          f"worst err {err}; cases {[c['status'] for c in r['results']]}")
PY
tail -n 3 "$OUT/gpu_tests.txt"
