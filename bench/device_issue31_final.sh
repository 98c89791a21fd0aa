#!/usr/bin/env bash
# Issue 31's final device call (2026-12-02), from the repository root of the copy, with .whl (PyYAML, cp312) and
# .peer (flashmla: a copy of ../shared/peers/flashmla; whl: FlashInfer 0.7.2.post1 without its non-MLA sources, and
# apache-tvm-ffi) carried:   [VARIANTS="name=key:value,..."] bash bench/device_issue31_final.sh
# 1. bench/device_201.sh: 201's default and $VARIANTS, FlashInfer fa3 bf16 / fp8 in the same process, FlashMLA (built
#    in the background, timed in a second process), then `harness run 201 --mode leaderboard`.
# 2. `harness run 201 --mode benchmark`. 3. pytest -m gpu tests/test_kernel_201.py.
# Ledger records go to $OUT/ledger.jsonl (HARNESS_LEDGER); the short tables are printed last.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .peer/whl/*.whl \
  >"$OUT/pip.txt" 2>&1 || echo "peer wheels not installed (pip.txt)"
export PYTHONPATH="$PYTHONPATH:/tmp/site"
HARNESS_LB=90 timeout 330 bash bench/device_201.sh 190 "${VARIANTS:-}" \
  --peer flashinfer --skip200 --seeds "" --reps 20 --leaderboard-calls 1 >"$OUT/bench_stdout.txt" 2>&1
timeout 90 python3 -c "from harness.cli import main; main()" run 201 --mode benchmark >"$OUT/harness_benchmark.txt" 2>&1
echo "harness benchmark exit $?" >>"$OUT/harness_benchmark.txt"
timeout 150 python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider >"$OUT/pytest_gpu.txt" 2>&1
grep -v "^ *$" "$OUT/bench_stdout.txt" | grep -Ev "fresh-input|^ *File|Warn|^\{" | tail -40 | cut -c1-220
tail -4 "$OUT/harness_benchmark.txt" | cut -c1-200
tail -2 "$OUT/pytest_gpu.txt"
