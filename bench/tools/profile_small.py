"""Where the time of one timed call goes: a CUDA-side trace of 201 (and variants) on chosen shapes.

    python bench/tools/profile_small.py --out $OUT [--shapes 4x1024,4x8192,...] [--calls 8] [name=key:value,...]

Each call is timed the harness way (synchronize, fast flush: 4x L2 write + GPU sleep, events around the
call) inside torch.profiler with CUDA activity, so the trace holds the flush, the sleep and the call's
kernels with GPU timestamps. Per call: the gap from the end of the sleep to the first kernel, each kernel's
duration, the gaps between kernels, and the end of the last kernel (all from the sleep's end), against the
event-timed duration. Yardsticks timed the same way: `null1` one launch of a kernel that writes the output
(launch and event overhead), `null2` two such launches, `stream1` one launch of 2 x SMs programs that read
every fp8 KV byte once (the one-launch floor with real bytes). Medians over --calls calls, per shape.
Writes OUT/profile.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
import triton
import triton.language as tl

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "tools"))

import reference  # noqa: E402
from bench_decode import load_submission  # noqa: E402
from harness.run import timing  # noqa: E402


@triton.jit
def _write_output(out_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offs, tl.zeros((N,), tl.bfloat16))


@triton.jit
def _read_every_byte(src_ptr, sink_ptr, words, per_program, BLOCK: tl.constexpr):
    start = tl.program_id(0) * per_program
    acc = tl.zeros((BLOCK,), tl.int32)
    for first in range(start, tl.minimum(start + per_program, words), BLOCK):
        offs = first + tl.arange(0, BLOCK)
        acc ^= tl.load(src_ptr + offs, mask=offs < words, other=0)
    tl.store(sink_ptr + tl.program_id(0), tl.sum(acc, 0))


def yardsticks() -> dict:
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def null(launches):
        def call(data):
            out = torch.empty((data[0].shape[0], 16, 512), dtype=torch.bfloat16, device=data[0].device)
            for _ in range(launches):
                _write_output[(out.numel() // 8192,)](out, N=8192)
            return out
        return call

    def stream1(data):
        kv = data[1]["fp8"][0].view(torch.int32).reshape(-1)
        programs = 2 * sms
        per_program = -(-kv.numel() // programs // 4096) * 4096
        sink = torch.empty(programs, dtype=torch.int32, device=kv.device)
        _read_every_byte[(programs,)](kv, sink, kv.numel(), per_program, BLOCK=4096, num_warps=8)
        return sink

    return {"null1": null(1), "null2": null(2), "stream1": stream1}


def kernels_of_calls(trace: dict) -> list[list[dict]]:
    """The kernels after each sleep kernel, up to the next flush, as (name, start, end) from the sleep's end."""
    events = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    calls, current, sleep_end = [], None, None
    for event in events:
        name = event["name"]
        lowered = name.lower()
        if "spin" in lowered or "sleep" in lowered:
            sleep_end = event["ts"] + event["dur"]
            current = []
            calls.append(current)
        elif "fill" in lowered:
            current = None  # the next call's flush
        elif current is not None:
            current.append({"name": name[:60], "start": event["ts"] - sleep_end,
                            "end": event["ts"] + event["dur"] - sleep_end, "dur": event["dur"]})
    return [c for c in calls if c]


def profile(call, data, calls: int) -> dict:
    for _ in range(3):
        call(data)
    torch.cuda.synchronize()
    durations = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            _, ns = timing.time_call(lambda: call(data), "cuda", "fast")
            durations.append(ns / 1e3)
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        prof.export_chrome_trace(handle.name)
        trace = json.loads(Path(handle.name).read_text())
    per_call = kernels_of_calls(trace)
    summary = {"event_us": statistics.median(durations), "calls": len(per_call)}
    if per_call:
        count = statistics.mode(len(c) for c in per_call)
        same = [c for c in per_call if len(c) == count]
        summary["kernels"] = [{"name": same[0][k]["name"],
                               "start_us": statistics.median(c[k]["start"] for c in same),
                               "dur_us": statistics.median(c[k]["dur"] for c in same)} for k in range(count)]
        summary["last_end_us"] = statistics.median(c[-1]["end"] for c in same)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default="4x1024,4x8192,32x1024,64x1024,256x1024")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("variants", nargs="*")
    args = parser.parse_args()
    sub = load_submission("201")
    contenders = {"201": sub.custom_kernel}
    for text in args.variants:
        name, _, options = text.partition("=")
        tuning = {k: int(v) for k, _, v in (p.partition(":") for p in filter(None, options.split(",")))}
        contenders[f"201/{name}"] = lambda data, t=tuning: sub.mla_decode(data, **t)
    contenders.update(yardsticks())
    results = {}
    for shape in args.shapes.split(","):
        batch, kv_len = map(int, shape.split("x"))
        data = reference.generate_input(batch, 1, kv_len, 4217, device="cuda")
        for name, call in contenders.items():
            try:
                results[f"{shape} {name}"] = profile(call, data, args.calls)
            except Exception as error:  # one failing contender is a result, not the end of the run
                results[f"{shape} {name}"] = {"error": f"{type(error).__name__}: {error}"[:300]}
            r = results[f"{shape} {name}"]
            parts = " | ".join(f"{k['name'][:28]} @{k['start_us']:.1f} {k['dur_us']:.1f}" for k in r.get("kernels", []))
            print(f"{shape:>8} {name:<14} event {r.get('event_us', float('nan')):6.1f} us, last kernel ends "
                  f"{r.get('last_end_us', float('nan')):6.1f}: {parts or r.get('error', '')}", flush=True)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "profile.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
