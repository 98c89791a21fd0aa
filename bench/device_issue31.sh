#!/usr/bin/env bash
# Issue 31, counting call: what the harness's dirty L2 costs 201, and 201's variants after a dirty and a
# clean flush (bench/tools/flush_probe_201.py), the per-program trace, and DRAM bytes by Nsight Compute. From the
# repository root of the copy, .whl (PyYAML) carried:   [V="name=key:value,..."] bash bench/device_issue31.sh
# $OUT: flush_probe.json, trace*.json, ncu_dram.csv, logs; the short tables are printed last.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
# Calls of issue 31 (bench/notes/2026-12-01-issue31.md):
# V="default= l2=l2_hint:1 x2=splitsx:2 l2x2=l2_hint:1,splitsx:2",
# V="default= g=guess_first:1 c=tma:0 g2=guess_first:1", V="default= a=l2_ahead:1 a2=l2_ahead:1" (the options
# l2_hint, guess_first and l2_ahead measured no gain; guess_first and l2_ahead are in commit 08b1383)
# 2026-12-02 (bench/notes/2026-12-02-issue31.md): FLUSHES=dirty,clean,codewarm adds the code-warm probe;
# NCU_V and TRACE_V name the variant that Nsight Compute and the extra traces take.
V=${V:-"default= c=tma:0"}
PIDS=()
for v in $V; do  # one compiling process per variant (Triton's cache is shared)
  timeout 240 python3 bench/tools/flush_probe_201.py --out "$OUT" --warm "$v" >"$OUT/warm_${v%%=*}.txt" 2>&1 &
  PIDS+=($!)
done
wait "${PIDS[@]}"
grep -h "FAIL\|Error" "$OUT"/warm_*.txt | head -8
timeout "${PROBE_TIMEOUT:-200}" python3 bench/tools/flush_probe_201.py --out "$OUT" --reps "${REPS:-20}" \
  --flushes "${FLUSHES:-dirty,clean}" $V 2>&1 | grep -vi warn \
  >"$OUT/probe.txt"
timeout 90 python3 bench/tools/trace_201.py --out "$OUT" 2>&1 | grep -vi warn >"$OUT/trace.txt"
for t in ${TRACE_V:-}; do  # more traces: key:value,... each
  mkdir -p "$OUT/trace_$t"
  timeout 90 python3 bench/tools/trace_201.py --out "$OUT/trace_$t" "$t" 2>&1 | grep -vi warn >>"$OUT/trace.txt"
done
[ -n "${PYTEST:-}" ] && timeout 200 python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider \
  >"$OUT/pytest_gpu.txt" 2>&1
: >"$OUT/ncu_dram.csv"
[ "${NCU:-1}" = 1 ] && timeout 150 ncu --cache-control none --clock-control none -k regex:mla_fp8_gluon --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  python3 bench/tools/flush_probe_201.py --out "$OUT" --ncu "${NCU_V:-default=}" >"$OUT/ncu_dram.csv" 2>"$OUT/ncu_err.txt"
python3 - "$OUT/ncu_dram.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit(0)
head, body = rows[0], rows[1:]
col = {n: head.index(n) for n in ("ID", "Metric Name", "Metric Value")}
launches = {}
for r in body:
    launches.setdefault(r[col["ID"]], {})[r[col["Metric Name"]]] = r[col["Metric Value"]]
shapes = ["4x1024", "4x8192", "32x1024", "32x8192", "64x1024", "64x8192", "256x1024", "256x8192"]
for i, m in enumerate(launches.values()):  # per shape: the checked call, then a dirty and a clean one
    if i % 3:
        print("ncu", shapes[i // 3], ["dirty", "clean"][i % 3 - 1], {n.split("__")[1]: v for n, v in m.items()})
EOF
cat "$OUT/trace.txt"; tail -3 "$OUT/pytest_gpu.txt" 2>/dev/null
tail -12 "$OUT/probe.txt"
