#!/usr/bin/env bash
# Nsight Compute on the device: 201's Gluon kernel on one shape (the third launch), full set with SASS-level
# stall sampling. From the copy's root:  bash bench/device_ncu.sh 32x8192 [key:value,...]
# $OUT: NAME.ncu-rep, NAME_details.txt (every section), NAME_source.csv (per SASS instruction: samples, stalls).
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
NAME=ncu_${1}${2:+_${2//[:,]/_}}
timeout 240 ncu --set full --import-source yes -k regex:mla_fp8_gluon --launch-skip 2 --launch-count 1 \
  -o "$OUT/$NAME" python3 bench/tools/ncu_201.py "$1" "${2:-}" > "$OUT/${NAME}_run.txt" 2>&1
tail -3 "$OUT/${NAME}_run.txt"
ncu -i "$OUT/$NAME.ncu-rep" --page details > "$OUT/${NAME}_details.txt" 2>&1
ncu -i "$OUT/$NAME.ncu-rep" --page source --csv --print-source sass > "$OUT/${NAME}_source.csv" 2>&1
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Active Warps Per|Warp Cycles Per Issued|Registers Per|Achieved Occupancy" \
  "$OUT/${NAME}_details.txt" | head -20
