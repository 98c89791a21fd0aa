#!/usr/bin/env bash
# The final device call of issue 20, from the root of the worktree's device copy (.wt-perf), with .whl (FlashInfer,
# apache-tvm-ffi, PyYAML wheels) and .peer (the FlashMLA kit) carried beside it:
#   bash bench/device_perf.sh
# 1. bench/device_201.sh: every contender in one call - 201 (default), 201/old (the default before issue 20: no PDL),
#    201/mx (the MXFP4 path, Triton's dot_scaled emulation on Hopper), 200, 119, FlashInfer fa3 bf16 / fp8, and
#    FlashMLA (built in the background, timed in a second process); then `harness run 201 --mode leaderboard`.
# 2. `harness run 201 --mode benchmark` (ledger lines in $OUT/ledger.jsonl, as the leaderboard run's).
# 3. bench/mxfp4_error.py: the MXFP4 path's error on the official cases, several seeds each.
# 4. bench/profile_small.py: where the time of the small shapes goes, with the final default.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for d in .whl .peer; do [ -e "$d" ] || ln -s "../$d" "$d"; done
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 COLUMNS=200 HARNESS_LEDGER="$OUT/ledger.jsonl"
HARNESS_LB=${HARNESS_LB:-90} timeout 330 bash bench/device_201.sh 190 "old=pdl:0 mx=mxfp4:1" --peer flashinfer \
  --seeds 119 --reps 20 --leaderboard-calls 1 >"$OUT/bench_stdout.txt" 2>&1
export PYTHONPATH="$PYTHONPATH:/tmp/site"
timeout 90 python3 -c "from harness.cli import main; main()" run 201 --mode benchmark >"$OUT/harness_benchmark.txt" 2>&1
echo "harness benchmark exit $?" >>"$OUT/harness_benchmark.txt"
timeout 75 python3 bench/mxfp4_error.py --out "$OUT" --seeds 3 >"$OUT/mxfp4_error.txt" 2>&1
timeout 40 python3 bench/profile_small.py --out "$OUT" --calls 8 >"$OUT/profile.txt" 2>&1
grep -v "^ *$" "$OUT/bench_stdout.txt" | grep -Ev "fresh-input|^ *File|Warn" | tail -40 | cut -c1-220
tail -4 "$OUT/harness_benchmark.txt" | cut -c1-200
tail -2 "$OUT/mxfp4_error.txt" | cut -c1-250
grep -Ev "null|stream1|Warn|warn" "$OUT/profile.txt" | cut -c1-200
