#!/usr/bin/env bash
# Device call 4 of this session (issue 20): where the time of each shape goes with vt_rows=0, lazy_sum, async_mma
# (CUDA trace of harness-timed calls; stream1 = one launch reading every fp8 KV byte once). From the copy's root:
#   bash bench/device_profile_vral.sh
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
timeout 150 python3 bench/profile_small.py --out $OUT --calls 8 \
  --shapes 4x1024,4x8192,32x1024,32x8192,64x1024,64x8192,256x1024,256x8192 \
  vral=vt_rows:0,lazy_sum:1,async_mma:1 > $OUT/profile.txt 2>&1
grep -Ev "Warn|warn" $OUT/profile.txt | cut -c1-220
