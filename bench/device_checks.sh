#!/usr/bin/env bash
# The second GPU acceptance call, from the repository root (carry .peer/official): everything lands in
# $OUT/checks.tgz (the device tool returns at most 8 files); a short summary last.
#   1. ref_kernel's own peak memory on (256, 1, 8192)
#   2. bench/tools/protocol_agreement.py SUB: official eval.py vs harness --flush official vs --flush fast
#   3. every gpu-marked test
#   4. bench/reliability_gpu.sh: the GPU corpus through the harness
# Usage: bash bench/device_checks.sh 119
set -u
SUB=${1:-119}
OUT=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d)
mkdir -p "$WORK/agreement" "$WORK/reliability"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160

timeout 60 python - >"$WORK/reference_memory.txt" 2>&1 <<'PY'
import torch
import reference
data = reference.generate_input(256, 1, 8192, seed=9826)
reference.ref_kernel(data)
torch.cuda.synchronize()
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
reference.ref_kernel(data)
torch.cuda.synchronize()
print(f"ref_kernel peak above its inputs: {(torch.cuda.max_memory_allocated() - base) / 2**30:.2f} GiB;"
      f" inputs {base / 2**30:.2f} GiB")
PY
echo "reference memory exit $?" >>"$WORK/steps.txt"

start=$(date +%s)
OUT="$WORK/agreement" timeout 290 python bench/tools/protocol_agreement.py "$SUB" >"$WORK/agreement.txt" 2>&1
echo "protocol_agreement exit $? in $(( $(date +%s) - start )) s" >>"$WORK/steps.txt"

start=$(date +%s)
timeout 120 python -m pytest -q -m gpu -p no:cacheprovider --ignore tests/test_reliability.py >"$WORK/pytest_gpu.txt" 2>&1
echo "pytest -m gpu exit $? in $(( $(date +%s) - start )) s" >>"$WORK/steps.txt"

start=$(date +%s)
OUT="$WORK/reliability" timeout 150 bash bench/reliability_gpu.sh >"$WORK/reliability.txt" 2>&1
echo "reliability_gpu exit $? in $(( $(date +%s) - start )) s" >>"$WORK/steps.txt"

tar czf "$OUT/checks.tgz" -C "$WORK" .
cat "$WORK/steps.txt" "$WORK/reference_memory.txt"
tail -n 3 "$WORK/pytest_gpu.txt"
tail -n 30 "$WORK/reliability.txt"
tail -n 16 "$WORK/agreement.txt"
