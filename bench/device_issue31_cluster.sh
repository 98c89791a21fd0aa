#!/usr/bin/env bash
# Issue 31, third round: the cluster merge (option cluster_merge) in one short call, each step with a tight limit
# (a cluster barrier that never opens must not eat the lease). From the repository root of the copy, .whl carried:
#   bash bench/device_issue31_cluster.sh
# 1. one checked call per official shape with cluster_merge:1; 2. the flush probe, default against it;
# 3. its per-program trace; 4. pytest -m gpu tests/test_kernel_201.py. Short tables last; logs in $OUT.
set -u
export OUT=${OUT:-/tmp/out} PYTHONPATH=$PWD:$PWD/bench/tools PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:/tmp/site
timeout 50 python3 - >"$OUT/smoke.txt" 2>&1 <<'EOF'
import torch, reference
from bench_decode import load_submission
m = load_submission(201)
for batch, kv in ((4, 1024), (32, 1024), (64, 1024), (32, 8192), (64, 8192)):
    data = reference.generate_input(batch, 1, kv, 7, device="cuda")
    out = m.mla_decode(data, cluster_merge=1)
    torch.cuda.synchronize()
    ok, message = reference.check_implementation(data, out)
    plan = next(p for k, p in m._PLAN_CACHE.items() if k[3] == batch and k[2] == batch * kv)
    print(batch, kv, "splits", plan["splits"], "cluster", plan["cluster_merge_taken"], "ok", ok, message[:80], flush=True)
EOF
echo "smoke exit $?" >>"$OUT/smoke.txt"
if grep -q "ok True" "$OUT/smoke.txt" && ! grep -q "ok False" "$OUT/smoke.txt"; then
  timeout 70 python3 bench/tools/flush_probe_201.py --out "$OUT" --reps 20 --flushes dirty \
    default= cl=cluster_merge:1 2>&1 | grep -vi warn >"$OUT/probe.txt"
  timeout 25 python3 bench/tools/trace_201.py --out "$OUT" cluster_merge:1 2>&1 | grep -vi warn >"$OUT/trace.txt"
  timeout 45 python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider >"$OUT/pytest_gpu.txt" 2>&1
fi
cat "$OUT/smoke.txt" | grep -v Warn | tail -8
cat "$OUT/trace.txt" 2>/dev/null
tail -3 "$OUT/pytest_gpu.txt" 2>/dev/null
tail -7 "$OUT/probe.txt" 2>/dev/null
