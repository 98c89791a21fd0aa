#!/usr/bin/env bash
# 201 as it is committed, on the device: its GPU tests, then `harness run 201` in leaderboard and benchmark mode
# with the records in $OUT/ledger.jsonl (HARNESS_LEDGER), to be appended to results/ledger.jsonl here.
# From the repository root of the copy, .whl (PyYAML) carried:   bash bench/device_201_record.sh
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
timeout 200 python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider >"$OUT/pytest_gpu.txt" 2>&1
echo "pytest gpu exit $?"
for mode in leaderboard benchmark; do
  timeout 150 python3 -c "from harness.cli import main; main()" run 201 --mode $mode >"$OUT/harness_$mode.txt" 2>&1
  echo "harness $mode exit $?"
done
tail -3 "$OUT/pytest_gpu.txt"
for mode in leaderboard benchmark; do tail -16 "$OUT/harness_$mode.txt" | cut -c1-200; done
