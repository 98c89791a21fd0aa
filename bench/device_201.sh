#!/usr/bin/env bash
# One device call for issue 12 (submission 201), from the repository root:
#   bash bench/device_201.sh SECONDS [bench_decode.py arguments...]
# Prints the GPU and its clocks, optionally sets up the FlashMLA kit (.peer/flashmla, carried) and the
# FlashInfer wheels (.whl, carried), then runs bench/bench_decode.py under a time limit with the given
# arguments (201 variants, 200, 119, peers): every output checked against reference.py, timed with the
# harness timing (L2 flush + GPU sleep before each call), fresh-input checks of 200 and 201. Full log and
# JSON land in $OUT; the short table is printed last.
set -u
LIMIT=${1:-240}
shift || true
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
set -o pipefail
timeout "$LIMIT" python3 bench/bench_decode.py --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log" | grep -v "^ *File\|Warning\|warn" 
echo "bench exit $?"
