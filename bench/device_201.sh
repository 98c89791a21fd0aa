#!/usr/bin/env bash
# One device call for issue 12 (submission 201), from the repository root:
#   bash bench/device_201.sh SECONDS "name=k:v,... name2=..." [bench_decode.py arguments...]
# 1. GPU, clocks, versions. Optional FlashInfer wheels (.whl, carried) are installed to /tmp/site.
# 2. Every 201 variant (and the default, "default=") is checked alone in its own process, all in parallel
#    (bench/smoke_201.py): a variant that crashes cannot take the others down; this also fills Triton's cache.
# 3. bench/bench_decode.py, under a time limit, with the variants that passed plus the given arguments (200,
#    119, peers): every output checked against reference.py, harness timing (L2 flush + GPU sleep before each
#    call), fresh-input checks of 200 and 201. Full log and JSON land in $OUT; the short table is printed last.
set -u
LIMIT=${1:-240}
VARIANTS=${2:-}
shift 2 || true
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
SMOKE="$OUT/smoke.jsonl"
: >"$SMOKE"
for v in default= $VARIANTS; do
  (timeout 150 python3 bench/smoke_201.py "${v%%=*}" "${v#*=}" 2>>"$OUT/smoke_err.log" | tail -1 >>"$SMOKE") &
done
wait
cat "$SMOKE"
ARGS=()
DEFAULT_OK=0
for v in default= $VARIANTS; do
  name=${v%%=*}
  if grep -q "\"name\": \"$name\",.*\"ok\": true" "$SMOKE"; then
    if [ "$name" = default ]; then DEFAULT_OK=1; else ARGS+=(--variant201 "$v"); fi
  fi
done
[ "$DEFAULT_OK" = 1 ] || ARGS+=(--skip201default)
set -o pipefail
timeout "$LIMIT" python3 bench/bench_decode.py --out "$OUT" "${ARGS[@]}" "$@" 2>&1 | tee "$OUT/bench.log" \
  | grep -v "^ *File\|Warning\|warn\|^ *\^\|Search for\|CUDA kernel errors\|For debugging\|Compile with"
echo "bench exit $?"
