#!/usr/bin/env bash
# One device call of issue 20's variant comparisons: 201's default against the variants in V (name=key:value,...),
# each checked alone first, on the 8 official shapes. From the repository root of the copy:
#   V="s1=stages:1 s1l=stages:1,late_refill:1" bash bench/device_vreg.sh
# Without V: the register-V variants of call 2 (vt_rows 0, lazy_sum, async_mma) and lazy_sum alone.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
V="${V:-vr=vt_rows:0 vrl=vt_rows:0,lazy_sum:1 vral=vt_rows:0,lazy_sum:1,async_mma:1 dl=lazy_sum:1}"
timeout 200 bash bench/device_201.sh 170 "$V" --reps 20 --seeds "" --skip200 --leaderboard-calls 1 --peer none \
  > $OUT/bench_stdout.txt 2>&1
grep '^{' $OUT/bench_stdout.txt | cut -c1-300
grep -v "^ *$" $OUT/bench_stdout.txt | grep -v "fresh-input" | grep -v '^{' | tail -14 | cut -c1-220
