#!/usr/bin/env bash
# The final device call of issue 20 for the register-V default (2026-12-01 PM), from the repository root of the copy,
# with .whl (FlashInfer 0.7.2.post1, apache-tvm-ffi, PyYAML wheels) and .peer (the FlashMLA kit) carried:
#   bash bench/device_final_vreg.sh
# 1. bench/device_201.sh: 201 (default) and $VARIANTS, FlashInfer fa3 bf16 / fp8, FlashMLA (built in the background,
#    timed in a second process); then `harness run 201 --mode leaderboard` (ledger lines in $OUT/ledger.jsonl).
# 2. `harness run 201 --mode benchmark` (same ledger file). 3. pytest -m gpu tests/test_kernel_201.py.
# 4. `harness estimate 201` (the kernel model on this machine's recorded launches). VARIANTS: 201 variants to add.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
HARNESS_LB=90 timeout 330 bash bench/device_201.sh 190 "${VARIANTS:-}" \
  --peer flashinfer --skip200 --seeds "" --reps 20 --leaderboard-calls 1 >"$OUT/bench_stdout.txt" 2>&1
export PYTHONPATH="$PYTHONPATH:/tmp/site"
timeout 90 python3 -c "from harness.cli import main; main()" run 201 --mode benchmark >"$OUT/harness_benchmark.txt" 2>&1
echo "harness benchmark exit $?" >>"$OUT/harness_benchmark.txt"
timeout 120 python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider >"$OUT/pytest_gpu.txt" 2>&1
timeout 90 python3 -c "from harness.cli import main; main()" estimate 201 >"$OUT/estimate_201.txt" 2>&1
echo "harness estimate 201 exit $?" >>"$OUT/estimate_201.txt"
grep -v "^ *$" "$OUT/bench_stdout.txt" | grep -Ev "fresh-input|^ *File|Warn|^\{" | tail -34 | cut -c1-220
tail -4 "$OUT/harness_benchmark.txt" | cut -c1-200
tail -2 "$OUT/pytest_gpu.txt"
tail -30 "$OUT/estimate_201.txt" | cut -c1-200
