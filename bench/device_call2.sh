# Device call 2 of issue 20 (from the repository root of the device copy): PDL baseline and the epilogue /
# refill / bf16-partial variants on the 8 shapes, then the small-shape trace of the best candidates.
set -u
cd .wt-perf
export PYTHONPATH=$PWD OUT=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1; export PYTHONPATH=$PYTHONPATH:/tmp/site
B=pdl:1,vec_epilogue:1,late_refill:1,part_bf16:1
V="p=pdl:1 pv=pdl:1,vec_epilogue:1 pvb=pdl:1,vec_epilogue:1,part_bf16:1 pvl=pdl:1,vec_epilogue:1,late_refill:1 pvlb=$B pvlba=$B,async_mma:1 pvlbm=$B,merge_dims:128 s16=$B,splits:16 s8=$B,splits:8 s2=$B,splits:2"
timeout 150 bash bench/device_201.sh 130 "$V" --reps 20 --seeds "" --skip200 --leaderboard-calls 1 --peer none > $OUT/bench_stdout.txt 2>&1
timeout 60 python3 bench/profile_small.py --out $OUT --calls 8 p=pdl:1 pvlb=$B pvlbm=$B,merge_dims:128 > $OUT/profile.txt 2>&1
grep -v null $OUT/profile.txt | grep -v stream1 | grep -v -i warn | cut -c1-200
grep -v "^ *$" $OUT/bench_stdout.txt | grep -v "fresh-input" | tail -16
grep '"ok": false' $OUT/bench_stdout.txt | head
