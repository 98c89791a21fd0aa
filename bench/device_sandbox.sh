#!/usr/bin/env bash
# Issue 18's sandbox on the H200, in one device call, from the repository root:
#   1. bwrap from the carried Debian packages in .debs/ (the machine cannot download it), unpacked into a temporary
#      folder and put first on PATH; facts: whether user namespaces work as root and as an unprivileged user;
#   2. the gpu-marked sandbox test (every hostile sample through the CLI on the GPU, under the active protection);
#   3. `harness run 201 --mode benchmark`, unprotected and sandboxed, interleaved (off/sandbox/off/sandbox), and
#      the geometric mean of the per-shape ratio sandbox / off.
# Each step has its own time cap; logs under $OUT, a short table last.
# Usage: bash bench/device_sandbox.sh   (PAIRS=2, TEST_CAP=80, RUN_CAP=45 to choose)
# The packages: see bench/carried_bwrap.sh.
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=200
export HARNESS_RESULTS="$OUT/results"
facts="$OUT/facts.txt"

# 1. bwrap, carried (bench/carried_bwrap.sh), and the facts about user namespaces.
source bench/carried_bwrap.sh
{
    echo "user: $(id)"; uname -r; head -2 /etc/os-release
    echo "bwrap: $(bwrap --version 2>&1)"
    echo "max_user_namespaces: $(cat /proc/sys/user/max_user_namespaces 2>&1)"
    unshare -U -r true 2>&1; echo "unshare -U -r true as root: exit $?"
    unshare -U -r -p -f --mount-proc true 2>&1; echo "unshare -U -r -p -f --mount-proc as root: exit $?"
    setpriv --reuid=65534 --regid=65534 --clear-groups unshare -U -r true 2>&1
    echo "unshare -U -r true as uid 65534 (unprivileged): exit $?"
    setpriv --reuid=65534 --regid=65534 --clear-groups bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all \
        --die-with-parent true 2>&1
    echo "bwrap --unshare-all as uid 65534 (unprivileged): exit $?"
    python3 -m harness.sandbox.bwrap setup 2>&1
    python3 -c "from harness.cli import main; main()" doctor 2>&1 | grep -i "protection\|device"
} >>"$facts" 2>&1
cat "$facts"

# 2. The gpu-marked sandbox test (it copies the checkout through git: the device's copy has no .git, so make one).
[ -d .git ] || { git init -q && git add -A && git -c user.email=d@d -c user.name=d commit -qm "device copy"; } >/dev/null
start=$(date +%s)
timeout "${TEST_CAP:-80}" python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_sandbox.py >"$OUT/gpu_test.txt" 2>&1
echo "pytest -m gpu tests/test_sandbox.py: exit $? in $(( $(date +%s) - start )) s: $(tail -n 1 "$OUT/gpu_test.txt")" \
    | tee -a "$OUT/steps.txt"
grep "protection on this GPU machine" "$OUT/gpu_test.txt"

# 3. Timing, unprotected and sandboxed, interleaved.
for pair in $(seq "${PAIRS:-2}"); do
    for protection in off sandbox; do
        start=$(date +%s)
        timeout "${RUN_CAP:-45}" python3 -c "from harness.cli import main; main()" run 201 --mode benchmark \
            --protection "$protection" --json >"$OUT/bench_${pair}_$protection.json" 2>"$OUT/bench_${pair}_$protection.err"
        echo "run 201 --mode benchmark --protection $protection (pair $pair): exit $? in $(( $(date +%s) - start )) s" \
            | tee -a "$OUT/steps.txt"
    done
done
python3 - "$OUT" <<'PY'
import glob, json, math, sys

def means(path):
    try:
        record = json.load(open(path))[0]
    except (OSError, ValueError, IndexError):
        return None
    found = [case["stats"]["mean"] / 1e3 for case in record["results"] if case.get("stats")]
    return found if len(found) == len(record["results"]) and found else None

geo = lambda values: math.exp(sum(map(math.log, values)) / len(values))
runs = {path: means(path) for path in sorted(glob.glob(f"{sys.argv[1]}/bench_*.json"))}
for path, found in runs.items():
    print(f"{path.rsplit('/', 1)[1]:<28} geomean {geo(found):8.2f} us  " + " ".join(f"{m:.1f}" for m in found)
          if found else f"{path.rsplit('/', 1)[1]:<28} no complete timings")
off = [m for p, m in runs.items() if m and p.endswith("_off.json")]
on = [m for p, m in runs.items() if m and p.endswith("_sandbox.json")]
if off and on:
    shapes = range(len(off[0]))
    ratio = geo([geo([r[i] for r in on]) / geo([r[i] for r in off]) for i in shapes])
    print(f"geomean ratio sandbox / off over {len(on)}+{len(off)} runs: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%)")
PY
