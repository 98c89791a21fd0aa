#!/usr/bin/env bash
# Issue 31: the floors under the harness's timer (bench/tools/floor_probe.py), 201's default in the same process.
# From the repository root of the copy, .whl (PyYAML) carried:   bash bench/device_floor.sh
# $OUT: floor_probe.json, probe.txt, gpu.txt; the table is printed last.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
timeout "${PROBE_TIMEOUT:-400}" python3 bench/tools/floor_probe.py --out "$OUT" --reps "${REPS:-20}" >"$OUT/probe.txt" 2>&1
echo "floor_probe exit $?"
grep -v "^ *$" "$OUT/probe.txt" | grep -vi warn | tail -22 | cut -c1-220
