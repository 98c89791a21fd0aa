#!/usr/bin/env bash
# Device call 1 of this session (issue 20, 2026-12-01 PM): one KV stage per program, so that three Gluon programs
# fit in an SM's shared memory (63.5 KB each instead of 100 KB), with and without refilling the stage as soon as
# its tile is consumed; against the default (2 stages, 2 programs per SM). From the repository root of the copy:
#   bash bench/device_stages.sh
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
V="s1=stages:1 s1l=stages:1,late_refill:1 s1l2=stages:1,late_refill:1,programs_per_cu:2"
timeout 200 bash bench/device_201.sh 170 "$V" --reps 20 --seeds "" --skip200 --leaderboard-calls 1 --peer none \
  > $OUT/bench_stdout.txt 2>&1
grep '^{' $OUT/bench_stdout.txt | cut -c1-400
grep -v "^ *$" $OUT/bench_stdout.txt | grep -v "fresh-input" | grep -v '^{' | tail -16 | cut -c1-220
