"""Per-program timeline of 201's Gluon kernel on the device: when each program starts, when its first tile is in
shared memory, when it ends, and on which SM (the kernel's TRACE option, %globaltimer in ns).

    python bench/tools/trace_201.py --out $OUT [--shapes 4x1024,...] [key:value,...]

Each call is timed the harness way (fast flush, GPU sleep, events around the call); the trace of the last of 5
calls per shape is kept. Prints, per shape: programs, the spread of start times (launch ramp), the median and
worst time from start to first tile, the median and worst program duration, the spread of end times (tail), and
the kernel's span; writes OUT/trace.json with every program's record.

Since 2026-12-02 (issue 31) a program's record has 16 slots: start, first tile in, end, SM, then kv_indptr in, Q in
shared memory (the barrier before the loop), loop done, and with the fused merge the ticket back and the polls done
(0 otherwise). A second line per shape gives the median time of each phase: kv_indptr (start -> kv_indptr in), Q (start
-> Q in shared memory), first tile (start -> first tile in), loop (first tile -> loop done), epilogue (loop done ->
ticket back: normalization, partial stores, the release), polls (ticket -> polls done: waiting for the other splits),
merge (polls done -> end; without the fused merge, loop done -> end).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "tools"))

import reference  # noqa: E402
from bench_decode import load_submission  # noqa: E402
from harness.run import timing  # noqa: E402


def summarize(records: list[list[int]]) -> dict:
    """Microseconds from the first program's start: ramp, first-tile latency, durations, tail, span."""
    origin = min(r[0] for r in records)
    starts = [(r[0] - origin) / 1e3 for r in records]
    firsts = [(r[1] - r[0]) / 1e3 for r in records]
    ends = [(r[2] - origin) / 1e3 for r in records]
    durations = [(r[2] - r[0]) / 1e3 for r in records]
    per_sm: dict = {}
    for r in records:
        per_sm[r[3]] = per_sm.get(r[3], 0) + 1
    med = lambda a, b: statistics.median((r[b] - r[a]) / 1e3 for r in records)  # noqa: E731
    fused = all(r[7] for r in records)
    phases = {"kv_indptr": med(0, 4), "q": med(0, 5), "first_tile": med(0, 1), "loop": med(1, 6),
              "epilogue": med(6, 7) if fused else None, "polls": med(7, 8) if fused else None,
              "merge": med(8, 2) if fused else med(6, 2)}
    return {"programs": len(records), "sms": len(per_sm), "most_per_sm": max(per_sm.values()), "phases": phases,
            "start_spread": max(starts), "first_tile_median": statistics.median(firsts), "first_tile_max": max(firsts),
            "duration_median": statistics.median(durations), "duration_max": max(durations),
            "end_median": statistics.median(ends), "end_max": max(ends), "span": max(ends)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default="4x1024,4x8192,32x1024,32x8192,64x1024,64x8192,256x1024,256x8192")
    parser.add_argument("tuning", nargs="?", default="")
    args = parser.parse_args()
    tuning = {k: int(v) for k, _, v in (p.partition(":") for p in filter(None, args.tuning.split(",")))}
    module = load_submission(201)
    result = {}
    for shape in args.shapes.split(","):
        batch, kv_len = map(int, shape.split("x"))
        data = reference.generate_input(batch, 1, kv_len, 4217, device="cuda")
        module.mla_decode(data, **tuning)  # the plan (split count) for this shape
        plan = next(p for k, p in module._PLAN_CACHE.items() if k[1] == batch and k[2] == batch * kv_len)
        trace = torch.zeros((batch * plan["splits"] * 16,), dtype=torch.int64, device="cuda")
        for _ in range(5):
            _, ns = timing.time_call(lambda: module.mla_decode(data, trace=trace, **tuning), "cuda", "fast")
        torch.cuda.synchronize()
        records = trace.view(-1, 16).tolist()
        result[shape] = {"splits": plan["splits"], "event_us": ns / 1e3, **summarize(records), "records": records}
        s = result[shape]
        print(f"{shape:>9} splits {s['splits']:>2} programs {s['programs']:>4} on {s['sms']:>3} SMs (<= {s['most_per_sm']})"
              f" event {s['event_us']:6.1f} span {s['span']:6.1f} | start spread {s['start_spread']:5.1f} | first tile"
              f" {s['first_tile_median']:4.1f} / {s['first_tile_max']:4.1f} | duration {s['duration_median']:6.1f} /"
              f" {s['duration_max']:6.1f} | end {s['end_median']:6.1f} / {s['end_max']:6.1f}", flush=True)
        print(f"{'':>9} phase medians us: " + " ".join(f"{k} {'-' if v is None else f'{v:.2f}'}"
                                                       for k, v in s["phases"].items()), flush=True)
    Path(args.out, "trace.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
