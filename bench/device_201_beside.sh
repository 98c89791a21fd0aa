#!/usr/bin/env bash
# Two versions of 201 beside each other on the H200, in one device call (issue 37: the same speed after the cut):
#   1. PyYAML from .whl/ (offline), the GPU's clocks, both files' sha256;
#   2. the new file's GPU tests (pytest -m gpu tests/test_kernel_201.py: they load submissions/201_*.py);
#   3. `harness run FILE --mode leaderboard` (the harness's timer, fast flush) interleaved: old, new, old, new;
#   4. a short table last: each run's geomean and per-shape means (us), then new / old per round.
# The records go to $OUT/ledger.jsonl (HARNESS_LEDGER), never to results/ledger.jsonl.
# From the repository root of the copy, .whl carried:
#   bash bench/device_201_beside.sh [OLD] [NEW]
#   (defaults bench/tmp/201_before.py, the untracked pre-cut copy, and submissions/201_triton_fp8kv.py)
# Caps: TEST_CAP=200, RUN_CAP=90 seconds (each step: 560 s at worst, under a device call's 600).
set -u
OLD=${1:-bench/tmp/201_before.py}
NEW=${2:-submissions/201_triton_fp8kv.py}
export OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_LEDGER="$OUT/ledger.jsonl"
for file in "$OLD" "$NEW"; do
    [ -f "$file" ] || { echo "no such file: $file" >&2; exit 2; }
done

# 1. Offline install, facts.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/pyyaml*.whl >/dev/null 2>&1
export PYTHONPATH="$PYTHONPATH:/tmp/site"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
sha256sum "$OLD" "$NEW" | tee "$OUT/files.txt"

# 2. GPU tests of the new file.
start=$(date +%s)
timeout "${TEST_CAP:-200}" python3 -m pytest -m gpu tests/test_kernel_201.py -q -p no:cacheprovider \
    >"$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu: exit $? in $(( $(date +%s) - start )) s: $(tail -n 1 "$OUT/pytest_gpu.txt")" \
    | tee "$OUT/steps.txt"

# 3. Leaderboard mode, interleaved.
for round in 1 2; do
    for side in old new; do
        if [ "$side" = old ]; then file=$OLD; else file=$NEW; fi
        start=$(date +%s)
        timeout "${RUN_CAP:-90}" python3 -c "from harness.cli import main; main()" run "$file" \
            --mode leaderboard >"$OUT/leaderboard_${round}_${side}.txt" 2>&1
        echo "round $round $side ($file): exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.txt"
    done
done

# 4. The table, from the ledger's records in the order they ran.
python3 - "$OLD" "$NEW" <<'EOF' | tee "$OUT/table.txt"
import hashlib, json, math, os, sys
digests = [hashlib.sha256(open(name, "rb").read()).hexdigest() for name in sys.argv[1:3]]
path = os.path.join(os.environ["OUT"], "ledger.jsonl")
records = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
runs = []
for index, record in enumerate(records):
    digest = record["submission"].get("sha256")
    # by content; two identical files: by the order they ran in (old first)
    side = "old" if digest == digests[0] else "new"
    if digests[0] == digests[1]:
        side = ("old", "new")[index % 2]
    means = [r["stats"]["mean"] / 1000 for r in record["results"] if r.get("stats")]
    shapes = [f'{r["spec"]["batchsize"]}x{r["spec"]["kvseqlen"]}' for r in record["results"] if r.get("stats")]
    ok = record["status"] == "pass" and len(means) == len(record["results"])
    geo = math.exp(sum(map(math.log, means)) / len(means)) if ok else float("nan")
    runs.append((side, record["status"], geo, means, shapes))
if not runs:
    sys.exit("no leaderboard records in " + path)
print("run  side status  geomean  " + "  ".join(f"{s:>8}" for s in runs[0][4]))
for index, (side, status, geo, means, _) in enumerate(runs, 1):
    print(f"{index:<4} {side:<4} {status:<6} {geo:8.1f}  " + "  ".join(f"{m:8.1f}" for m in means))
olds = [geo for side, _, geo, _, _ in runs if side == "old"]
news = [geo for side, _, geo, _, _ in runs if side == "new"]
for round_index, (a, b) in enumerate(zip(olds, news), 1):
    print(f"round {round_index}: new / old = {b / a:.3f}")
EOF
