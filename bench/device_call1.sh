# Device call 1 of issue 20 (from the repository root of the device copy): the first variants on the 8 shapes,
# then the small-shape trace (bench/profile_small.py) of the default and three variants.
set -u
cd .wt-perf
export PYTHONPATH=$PWD OUT=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1; export PYTHONPATH=$PYTHONPATH:/tmp/site
V="a=async_mma:1 b=part_bf16:1 p=pdl:1 abp=async_mma:1,part_bf16:1,pdl:1 abpm=async_mma:1,part_bf16:1,pdl:1,merge_dims:128 abp16=async_mma:1,part_bf16:1,pdl:1,splits:16 abp4=async_mma:1,part_bf16:1,pdl:1,splits:4"
timeout 130 bash bench/device_201.sh 110 "$V" --reps 20 --seeds "" --skip200 --leaderboard-calls 1 --peer none > $OUT/bench_stdout.txt 2>&1
timeout 60 python3 bench/profile_small.py --out $OUT --calls 8 p=pdl:1 abp=async_mma:1,part_bf16:1,pdl:1 abpm=async_mma:1,part_bf16:1,pdl:1,merge_dims:128 > $OUT/profile.txt 2>&1
cat $OUT/profile.txt | cut -c1-230
grep -v "^ *$" $OUT/bench_stdout.txt | tail -22
