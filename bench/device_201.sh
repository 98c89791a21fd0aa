#!/usr/bin/env bash
# One device call for issue 12 (submission 201), from the repository root:
#   [HARNESS_LB=SECONDS] bash bench/device_201.sh SECONDS "name=k:v,... name2=..." [bench_decode.py arguments...]
# 1. GPU, clocks, versions. FlashInfer wheels (.whl, carried) are installed to /tmp/site when present.
# 2. FlashMLA (.peer/flashmla, a copy of ../shared/peers/flashmla, carried) builds in the background.
# 3. Every 201 variant (and the default, "default=") is checked alone in its own process, all in parallel
#    (bench/tools/smoke_201.py): a variant that crashes cannot take the others down; this also fills Triton's cache.
# 4. bench/tools/bench_decode.py under the time limit with the variants that passed and the given arguments (200,
#    119): every output checked against reference.py, harness timing (L2 flush + GPU sleep before each call),
#    fresh-input checks of 200 and every 201 contender. Then FlashMLA in a second bench run (its build done).
# 5. With HARNESS_LB set: `harness run 201 --mode leaderboard` (the acceptance command), right after step 4
#    (before waiting for the FlashMLA build).
# $OUT: bench_results.json, flashmla_results.json, logs.tgz (every log); short tables printed last.
set -u
LIMIT=${1:-240}
VARIANTS=${2:-}
shift 2 || true
OUT=${OUT:-$(mktemp -d)}
LOGS=$(mktemp -d)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$LOGS/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$LOGS/gpu.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
BUILD_PID=
if [ -f .peer/flashmla/run_flashmla.py ]; then
  (cd .peer/flashmla && timeout 240 python3 -c "import run_flashmla as r; r.build_extension('/tmp/flashmla_build')" \
     >"$LOGS/flashmla_build.log" 2>&1; echo "flashmla build exit $?" >>"$LOGS/flashmla_build.log") &
  BUILD_PID=$!
fi
SMOKE="$LOGS/smoke.jsonl"
: >"$SMOKE"
PIDS=()
for v in default= $VARIANTS; do
  (timeout 150 python3 bench/tools/smoke_201.py "${v%%=*}" "${v#*=}" 2>>"$LOGS/smoke_err.log" | tail -1 >>"$SMOKE") &
  PIDS+=($!)
done
wait "${PIDS[@]}"
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
FILTER='^ *File|Warning|warn|^ *\^|Search for|CUDA kernel errors|For debugging|Compile with'
timeout "$LIMIT" python3 bench/tools/bench_decode.py --out "$OUT" --peer none "${ARGS[@]}" "$@" 2>&1 \
  | tee "$LOGS/bench.log" | grep -Ev "$FILTER"
echo "bench exit ${PIPESTATUS[0]}"
if [ -n "${HARNESS_LB:-}" ]; then
  timeout "$HARNESS_LB" python3 -c "from harness.cli import main; main()" run 201 --mode leaderboard \
    >"$LOGS/harness_leaderboard.txt" 2>&1
  echo "harness leaderboard exit $?"; tail -22 "$LOGS/harness_leaderboard.txt"
fi
if [ -n "$BUILD_PID" ]; then
  wait "$BUILD_PID"; tail -2 "$LOGS/flashmla_build.log"
  mkdir -p "$LOGS/fm"
  timeout 120 python3 bench/tools/bench_decode.py --out "$LOGS/fm" --skip200 --skip201default --seeds "" --peer flashmla \
    --leaderboard-calls 0 --reps 20 2>&1 | tee "$LOGS/flashmla_bench.log" | grep -Ev "$FILTER" | tail -14
  cp "$LOGS/fm/bench_results.json" "$OUT/flashmla_results.json" 2>/dev/null
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
