#!/usr/bin/env bash
# The acceptance run of issues 17-21 on the merged harness, on the H200, in one device call, from the repository root:
#   1. bwrap from .debs/ (bench/carried_bwrap.sh), PyYAML from .whl/ where missing; which protection is active;
#   2. every gpu-marked test (pytest -m gpu): the moved child, the sandbox, the stand-in samples, the kernels;
#   3. harness run 014 201 --mode test on the official cases (014 on the aiter stand-in), under the active protection;
#   4. harness estimate 201: its breakdown must name the gfx950 plan's kernels, never the sm90 Gluon kernel;
#   5. harness compile 201 --target sm90 in its worker: the gfx950-only variants said, no compiler flood.
# Each step has its own time cap; logs under $OUT, a short table last.
# Usage: bash bench/device_acceptance.sh   (GPU_TESTS_CAP=420, RUN_CAP=90 to choose)
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
facts="$OUT/facts.txt"
harness() { python3 -c "from harness.cli import main; main()" "$@"; }

# 1. Carried tools.
source bench/carried_bwrap.sh
if ! python3 -c "import yaml" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/pyyaml-*.whl >>"$facts" 2>&1
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >>"$facts" 2>&1
harness doctor 2>&1 | grep -i "protection\|device" >>"$facts"
# The sandbox's gpu test copies the checkout through git: the device's copy has no .git, so make one.
[ -d .git ] || { git init -q && git add -A && git -c user.email=d@d -c user.name=d commit -qm "device copy"; } >/dev/null
cat "$facts"

# 2. Every gpu-marked test.
start=$(date +%s)
timeout "${GPU_TESTS_CAP:-420}" python3 -m pytest -q -m gpu -p no:cacheprovider tests >"$OUT/gpu_tests.txt" 2>&1
echo "pytest -m gpu: exit $? in $(( $(date +%s) - start )) s: $(tail -n 1 "$OUT/gpu_tests.txt")" | tee -a "$OUT/steps.txt"

# 3. 014 (aiter stand-in) and 201 on the official test cases, under the active protection.
start=$(date +%s)
timeout "${RUN_CAP:-90}" python3 -c "from harness.cli import main; main()" run 014 201 --mode test >"$OUT/run_test.txt" 2>&1
echo "run 014 201 --mode test: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.txt"
grep -i "protection\|stand-in\|pass\|fail" "$OUT/run_test.txt" | head -30

# 4. The MI355X estimate of 201 recorded on this GPU.
start=$(date +%s)
timeout "${ESTIMATE_CAP:-240}" python3 -c "from harness.cli import main; main()" estimate 201 >"$OUT/estimate_201.txt" 2>&1
echo "estimate 201: exit $? in $(( $(date +%s) - start )) s; gluon named: $(grep -c gluon "$OUT/estimate_201.txt"); \
gfx950 plan named: $(grep -c 'gfx950 plan' "$OUT/estimate_201.txt")" | tee -a "$OUT/steps.txt"

# 5. The sm90 compile of 201, in its worker.
start=$(date +%s)
timeout "${COMPILE_CAP:-240}" python3 -c "from harness.cli import main; main()" compile 201 --target sm90 \
    >"$OUT/compile_sm90.txt" 2>&1
echo "compile 201 --target sm90: exit $? in $(( $(date +%s) - start )) s, $(wc -l <"$OUT/compile_sm90.txt") lines" \
    | tee -a "$OUT/steps.txt"
python3 - "$HARNESS_LEDGER" <<'PY'
import sys

from harness.results import ledger

for r in ledger.read(sys.argv[1]):
    print(f"{r['submission']['number']:>4} {r['mode']:<6} {r['status']:<5} protection={r.get('protection')} "
          f"standin={r.get('standin')} cases={[c['status'] for c in r['results']]}")
PY
echo "--- steps"; cat "$OUT/steps.txt"
