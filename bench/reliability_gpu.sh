#!/usr/bin/env bash
# GPU reliability checks, for the device machine (run from the repository root; writes under $OUT).
#   1. the GPU corpus (tests/samples/bad/gpu/: device out-of-memory, a device-side assert, an
#      out-of-bounds Triton store), each followed by a normal submission in the same harness run;
#   2. the cache cheat in leaderboard and benchmark mode, torch.empty in benchmark mode;
#   3. the CPU corpus again on the GPU (the hanging/sleeping files left out: the CPU run covers them);
#   4. if pytest is installed, the gpu-marked tests of tests/test_reliability.py (the same checks, asserted).
# Expected results: docs/RELIABILITY.md, section "On a GPU". About 5 minutes on an H200.
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HARNESS_LEDGER="$OUT/ledger.jsonl"
export COLUMNS=200
harness() { python -c "from harness.cli import main; main()" "$@"; }
log="$OUT/reliability_gpu.txt"

for bad in tests/samples/bad/gpu/*.py; do
    harness run "$bad" tests/samples/bad/wrong_shape.py --device cuda --cases small --timeout 120 >>"$log" 2>&1
    echo "== $bad: exit code $? (expected 1)" >>"$log"
done
harness run tests/samples/bad/caches_output.py --device cuda --cases small --mode leaderboard >>"$log" 2>&1
harness run tests/samples/bad/caches_output.py tests/samples/bad/uninitialised.py --device cuda \
    --cases small --mode benchmark >>"$log" 2>&1
files=$(ls tests/samples/bad/*.py | grep -v -e hangs.py -e sleeps.py)
# shellcheck disable=SC2086
harness run $files --device cuda --cases small --mode test --timeout 120 >>"$log" 2>&1
echo "== CPU corpus on the GPU: exit code $? (expected 1)" >>"$log"

if python -c "import pytest" 2>/dev/null; then
    python -m pytest -q -m gpu tests/test_reliability.py -p no:cacheprovider >"$OUT/pytest_gpu.log" 2>&1
    echo "gpu tests: exit code $? (expected 0); $(tail -n 1 "$OUT/pytest_gpu.log")"
else
    echo "gpu tests: pytest is not installed here; the harness runs above cover the same cases"
fi

grep "^== " "$log"
python - "$HARNESS_LEDGER" <<'PY'
import sys
from pathlib import Path

from harness.results import ledger

print(f"{'file':<26} {'mode':<12} {'status':<7} reason, else first warning")
for record in ledger.read(sys.argv[1]):
    name = Path(record["submission"]["path"]).name
    detail = record["reason"] or next(iter(record["warnings"]), "")
    print(f"{name:<26} {record['mode']:<12} {record['status']:<7} {detail[:110]}")
PY
