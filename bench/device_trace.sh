#!/usr/bin/env bash
# Per-program timeline of 201's Gluon kernel on 6 shapes (bench/tools/trace_201.py). From the copy's root:
#   bash bench/device_trace.sh [key:value,...]
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
timeout 150 python3 bench/tools/trace_201.py --out $OUT ${1:-} 2>&1 | grep -v -i warn
