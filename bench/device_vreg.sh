#!/usr/bin/env bash
# Device call 2 of this session (issue 20, 2026-12-01 PM): V^T as the register operand of the P.V wgmma (vt_rows 0:
# no V^T written to shared memory), softmax denominators summed once at the end (lazy_sum), and the async overlap
# of V's shared loads with the wgmmas (async_mma); against the default. From the repository root of the copy:
#   bash bench/device_vreg.sh
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
V="${V:-vr=vt_rows:0 vrl=vt_rows:0,lazy_sum:1 vral=vt_rows:0,lazy_sum:1,async_mma:1 dl=lazy_sum:1}"
timeout 200 bash bench/device_201.sh 170 "$V" --reps 20 --seeds "" --skip200 --leaderboard-calls 1 --peer none \
  > $OUT/bench_stdout.txt 2>&1
grep '^{' $OUT/bench_stdout.txt | cut -c1-300
grep -v "^ *$" $OUT/bench_stdout.txt | grep -v "fresh-input" | grep -v '^{' | tail -14 | cut -c1-220
