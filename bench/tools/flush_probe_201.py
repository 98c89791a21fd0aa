"""What the harness's cache flush costs 201, and its variants timed after two kinds of flush (issue 31).

    python bench/tools/flush_probe_201.py --out $OUT [--reps 20] [--warm] [--ncu] [name=key:value,...]

The harness's fast flush writes 4x the L2 (zero_), so L2 starts full of dirty lines: every line the kernel
brings in evicts one, and its write-back shares DRAM with the kernel's reads. The probe times each variant
after that "dirty" flush and after a "clean" one (the same buffer read, not written: L2 full of clean lines),
both followed by the harness's 3 ms GPU sleep, with events around the call. The difference is what the
write-back costs. Medians of --reps calls, rotated over variants and flushes.

Variant keys are 201's mla_decode options; splitsx:N / splitsd:N multiply / divide the default split count
of each shape. --warm: one checked call per shape and variant, no timing (fills Triton's cache; run one
process per variant in parallel). --ncu: one dirty and one clean call per shape of the first variant, for
Nsight Compute's DRAM byte counters (`git show 66ad16a:bench/device_issue31.sh`). Writes OUT/flush_probe.json.

--flushes dirty,clean,codewarm (2026-12-02): "codewarm" is the dirty flush and its sleep, then, before the
start event, one untimed call of the same compiled variant on a small input of its own (batch min(batch, 4),
splits x 64 tokens per sequence, so each program has one tile): the kernel's instructions are then in L2 while
the timed call's data is not. Dirty minus codewarm bounds what fetching the kernel's code cold costs.
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
from harness.run import cases, timing  # noqa: E402

FLUSHES = ("dirty", "clean")


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, options = text.partition("=")
    pairs = (pair.partition(":") for pair in filter(None, options.split(",")))
    return name, {key: int(value) for key, _, value in pairs}


def tuning_for(module, data, tuning: dict) -> dict:
    """The variant's options for this shape: splitsx / splitsd scale the default plan's split count."""
    scale = {k: tuning[k] for k in ("splitsx", "splitsd") if k in tuning}
    rest = {k: v for k, v in tuning.items() if k not in scale}
    if not scale:
        return rest
    batch = data[4]["batch_size"]
    module.mla_decode(data, **rest)
    plan = next(p for k, p in module._PLAN_CACHE.items()
                if k[1] == batch and k[2] == data[1]["fp8"][0].shape[0] and dict(k[4]) == rest)
    splits = plan["splits"] * scale.get("splitsx", 1) // scale.get("splitsd", 1)
    return dict(rest, splits=max(1, splits))


def flush(kind: str, buffer: torch.Tensor, sleep_cycles: int) -> None:
    """The harness's fast flush (kind dirty), or the same buffer read instead of written (kind clean)."""
    if kind == "dirty":
        buffer.zero_()
    else:
        buffer.view(torch.int32).max()
    torch.cuda._sleep(sleep_cycles)


def flush_state(device: int) -> tuple[torch.Tensor, int]:
    """The harness's fast-flush buffer and its sleep, in GPU cycles, for this device."""
    return timing._fast_flush_buffer(device), timing._sleep_cycles(device, timing.FAST_FLUSH_SLEEP_MS)


def official_inputs():
    """(batch, kv length, seed, input) of every official benchmark case, made on the GPU as the harness does."""
    for spec in cases.load("official", "benchmark"):
        batch, kv_len, seed = spec["batchsize"], spec["kvseqlen"], spec["seed"]
        yield batch, kv_len, seed, reference.generate_input(batch, 1, kv_len, seed, device="cuda")


def timed(fn, kind: str, buffer: torch.Tensor, sleep_cycles: int, warm=None) -> float:
    torch.cuda.synchronize()
    flush("dirty" if kind == "codewarm" else kind, buffer, sleep_cycles)
    if kind == "codewarm":
        warm()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--ncu", action="store_true")
    parser.add_argument("--flushes", default="dirty,clean")
    parser.add_argument("variants", nargs="*", default=["default="])
    args = parser.parse_args()
    global FLUSHES
    FLUSHES = tuple(args.flushes.split(","))
    module = load_submission(201)
    variants = dict(parse_variant(v) for v in args.variants)
    buffer, sleep_cycles = flush_state(torch.cuda.current_device())
    rows = []
    for batch, kv_len, seed, data in official_inputs():
        row = {"shape": f"{batch}x{kv_len}", "results": {}}
        calls, warms = {}, {}
        for name, tuning in variants.items():
            options = tuning_for(module, data, tuning)
            ok, message = reference.check_implementation(data, module.mla_decode(data, **options))
            row["results"][name] = {"options": options, "ok": bool(ok), "message": message.splitlines()[0][:160]}
            if ok:
                calls[name] = lambda o=options: module.mla_decode(data, **o)
            if ok and "codewarm" in FLUSHES:  # the same compiled kernel (same split count) on a small input
                total_kv = data[1]["fp8"][0].shape[0]
                plan = next(p for k, p in module._PLAN_CACHE.items()
                            if k[3] == batch and k[2] == total_kv and dict(k[4]) == options)
                splits = plan["splits"]
                small = reference.generate_input(min(batch, 4), 1, splits * 64, seed + 1, device="cuda")
                small_options = dict(options, splits=splits)
                warms[name] = lambda o=small_options, d=small: module.mla_decode(d, **o)
                warms[name]()
        if args.ncu:  # profiled launches: the first variant after each kind of flush
            name = next(iter(calls))
            for kind in FLUSHES:
                timed(calls[name], kind, buffer, sleep_cycles)
            continue
        if not args.warm:
            times = {(name, kind): [] for name in calls for kind in FLUSHES}
            for fn in calls.values():
                fn()
            for _ in range(args.reps):
                for name, fn in calls.items():
                    for kind in FLUSHES:
                        times[(name, kind)].append(timed(fn, kind, buffer, sleep_cycles, warms.get(name)))
            for (name, kind), values in times.items():
                row["results"][name][kind] = statistics.median(values)
        rows.append(row)
        cells = " ".join(f"{n} " + "/".join(f"{r.get(k, 0):.1f}" for k in FLUSHES) + ("" if r["ok"] else " FAIL")
                         for n, r in row["results"].items())
        print(f"{row['shape']:>9} splits {[r['options'].get('splits', '-') for r in row['results'].values()]}"
              f" {'/'.join(FLUSHES)} us: {cells}", flush=True)
    if args.warm or args.ncu:
        return 0
    Path(args.out, "flush_probe.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{'variant':>14} " + " ".join(f"{r['shape']:>9}" for r in rows) + f"  geomean ({', '.join(FLUSHES)})")
    for name in variants:
        for kind in FLUSHES:
            values = [r["results"][name].get(kind) for r in rows]
            mean = statistics.geometric_mean(values) if all(values) else float("nan")
            cells = " ".join(f"{v or float('nan'):9.1f}" for v in values)
            print(f"{name + ' ' + kind:>14} {cells}  {mean:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
