#!/usr/bin/env bash
# GPU reliability checks, for the device machine (run from the repository root; writes under $OUT).
#   1. the gpu-marked tests of tests/test_reliability.py: device out-of-memory, a device-side assert, an
#      out-of-bounds Triton store (each followed by a normal submission in the same harness run), and
#      the cache cheat in leaderboard mode plus torch.empty in benchmark mode;
#   2. the CPU corpus again on the GPU (hanging/sleeping files left out: the CPU run covers them).
# Expected results: docs/RELIABILITY.md, section "On a GPU". Takes about 5 minutes on an H200.
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HARNESS_LEDGER="$OUT/ledger.jsonl"
export COLUMNS=200
harness() { python -c "from harness.cli import main; main()" "$@"; }

python -m pytest -q -m gpu tests/test_reliability.py -p no:cacheprovider >"$OUT/pytest_gpu.log" 2>&1
echo "gpu tests exit code: $?" | tee -a "$OUT/pytest_gpu.log"

files=$(ls tests/bad_submissions/*.py | grep -v -e hangs.py -e sleeps.py)
# shellcheck disable=SC2086
harness run $files --device cuda --cases small --mode test --timeout 120 >"$OUT/corpus_gpu.txt" 2>&1
echo "corpus run exit code: $? (expected 1)" | tee -a "$OUT/corpus_gpu.txt"
harness run tests/bad_submissions/caches_output.py --device cuda --cases small --mode leaderboard \
    >>"$OUT/corpus_gpu.txt" 2>&1

tail -n 5 "$OUT/pytest_gpu.log"
python - "$HARNESS_LEDGER" <<'PY'
import sys
from pathlib import Path

from harness import ledger

print(f"{'file':<24} {'mode':<12} {'status':<7} reason / first warning")
for record in ledger.read(sys.argv[1]):
    name = Path(record["submission"]["path"]).name
    detail = record["reason"] or next(iter(record["warnings"]), "")
    print(f"{name:<24} {record['mode']:<12} {record['status']:<7} {detail[:110]}")
PY
