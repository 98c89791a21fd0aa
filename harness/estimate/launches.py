"""A recorded call (harness/run/recording.py's dict) as the launches the model prices, and the scaling of a CPU
recording taken at short KV lengths up to an official shape.

On a CPU the official shapes are too large to run, so each is recorded at its own batch and one or two shorter KV
lengths; counts and bytes are extrapolated linearly in the KV length (exact for work that grows with the KV), and
the aiter calls' KV rows scaled to the official length. A submission that picks its path by size may take another
path at the official shape: the note says so when the two short recordings already differ.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.estimate.calibration import (Launch, element_bytes, kernel_bytes, schedule, variant_dtypes,
                                          variant_key)

# torch ops that run as rocBLAS / hipBLASLt GEMMs on the runner: priced by the fitted GEMM costs
GEMM_OPS = ("aten.mm", "aten.bmm", "aten.addmm", "aten.baddbmm", "aten._scaled_mm", "aten.matmul")

RECORDED_LENGTHS = "recorded_kv"  # a scaled call's KV lengths a sequence as recorded, shortest first


@dataclass(frozen=True)
class RecordedStage1:
    """What one recorded asm call says of its stage-1 launch
    (aiter_launches.py derives the official shape's from it)."""
    kernel: str            # the code object the stand-in picked
    variant: str | None    # a8w8 | a16w8 | a16w16
    persistent: bool
    splits: int | None     # the call's num_kv_splits
    lengths: tuple         # KV rows a sequence as recorded, shortest first (the last: this call's)


def _asm(call: dict, name: str) -> Launch:
    """An asm decode call with its schedule on 256 CUs (batch, KV per sequence, split count)."""
    batch = int(call.get("batch") or call.get("total_q") or 1)
    kv = int(call.get("total_kv") or 0) // max(batch, 1)
    splits = call.get("num_kv_splits")
    per_cu, tokens = schedule(batch, kv, splits, bool(call.get("persistent")))
    stage = RecordedStage1(name, call.get("variant"), bool(call.get("persistent")),
                           None if splits is None else int(splits), tuple(call.get(RECORDED_LENGTHS) or (kv,)))
    return Launch("asm", name, bytes=_asm_bytes(call), per_cu=per_cu, serial_tokens=tokens,
                  variant=variant_key(call["variant"], call.get("persistent"), splits), fit=stage)


def from_recording(recording: dict, effects: tuple = ()) -> list[Launch]:
    """The launches of one recorded call, the Python call first; `effects` ("torch_compile", "tunableop") are
    the options the file's source turns on, applied to its torch launches."""
    launches = [Launch("python", "custom_kernel call")]
    for call in recording.get("aiter", []):
        count = int(call.get("launches") or 0)
        name = str(call.get("kernel") or call.get("api") or "aiter call")
        if call.get("variant"):
            launches.append(_asm(call, name))
            launches += [Launch("aiter", f"mla reduce ({name})") for _ in range(count - 1)]
        elif count:
            launches.append(Launch("aiter", name, count=count))
    for name, op in sorted(recording.get("ops", {}).items()):
        kind = "gemm" if name in GEMM_OPS else "torch"
        launches.append(Launch(kind, name, count=int(op["count"]), bytes=float(op["bytes"]), effects=effects))
    triton: dict = {}
    for kernel in recording.get("triton", []):
        name = kernel["name"] + (f" grid {tuple(kernel['grid'])}" if kernel.get("grid") else "")
        count, nbytes, _, _ = triton.get(name, (0, 0.0, None, None))
        triton[name] = (count + 1, nbytes + float(kernel["bytes"]), kernel.get("programs"), kernel["name"])
    launches += [Launch("triton", name, count=count, bytes=nbytes, programs=programs, kernel=kernel)
                 for name, (count, nbytes, programs, kernel) in sorted(triton.items())]
    if recording.get("allocations"):
        launches.append(Launch("alloc", "torch.empty", count=int(recording["allocations"])))
    launches += [Launch("sync", what, count=int(n)) for what, n in sorted(recording.get("syncs", {}).items()) if n]
    return launches


def recorded_warnings(recording: dict) -> set[str]:
    """The stand-in's warnings on the recorded aiter calls (a kernel with a known ranked-mode risk)."""
    return {call["warning"] for call in recording.get("aiter", []) if call.get("warning")}


def _asm_bytes(call: dict) -> float:
    """The model's bytes for an asm decode call (KV + Q read, output written), from its shape and dtypes."""
    if call.get("total_kv") is None or call.get("total_q") is None:
        return float(call.get("bytes_read", 0)) + float(call.get("bytes_written", 0))
    q_default, kv_default = variant_dtypes(call["variant"])
    return kernel_bytes(int(call["total_q"]), int(call["total_kv"]), element_bytes(call.get("q_dtype"), q_default),
                        element_bytes(call.get("kv_dtype"), kv_default))


def _line(low: float, high: float, kv_low: int, kv_high: int, kv: int, count: bool = False) -> float:
    """Linear in the KV length through two recordings; from one, counts stay and bytes grow with the KV."""
    if kv_high == kv_low:
        return high if count else high * kv / kv_high
    return max(0.0, low + (high - low) * (kv - kv_low) / (kv_high - kv_low))


def _structure(recording: dict) -> tuple:
    return tuple((call.get("kernel"), call.get("variant"), call.get("persistent")) for call in recording["aiter"])


def _scaled_calls(calls: list, ratio: float, lengths: tuple) -> list:
    scaled = []
    for call in calls:
        call = dict(call, **{RECORDED_LENGTHS: lengths})
        for key in ("total_kv", "bytes_read", "bytes_written"):
            if call.get(key) is not None:
                call[key] = int(round(call[key] * ratio)) if key == "total_kv" else float(call[key]) * ratio
        scaled.append(call)
    return scaled


def scale(short: dict | None, long: dict, kv_short: int | None, kv_long: int, kv: int) -> tuple[dict, str]:
    """A recording at KV length `kv` from recordings at kv_short < kv_long (or kv_long alone), and a note."""
    if kv_long == kv:
        return long, ""
    note = f"recorded at kv {kv_short} and {kv_long}, extrapolated to {kv}"
    if short is None or _structure(short) != _structure(long) or set(short["ops"]) != set(long["ops"]):
        if short is not None:
            note = (f"the calls differ between kv {kv_short} and {kv_long}: scaled from kv {kv_long} alone; "
                    f"at kv {kv} the submission may take another path")
        else:
            note = f"recorded at kv {kv_long}, scaled to {kv}"
        short, kv_short = long, kv_long
    ops = {name: {"count": round(_line(short["ops"][name]["count"], op["count"], kv_short, kv_long, kv, True)),
                  "bytes": _line(short["ops"][name]["bytes"], op["bytes"], kv_short, kv_long, kv)}
           for name, op in long["ops"].items()}
    paired = [k["name"] for k in short["triton"]] == [k["name"] for k in long["triton"]]
    triton = [dict(k, bytes=_line(short["triton"][i]["bytes"] if paired else k["bytes"], k["bytes"],
                                  kv_short if paired else kv_long, kv_long, kv)) for i, k in enumerate(long["triton"])]
    syncs = {what: round(_line(short["syncs"].get(what, 0), n, kv_short, kv_long, kv, True))
             for what, n in long["syncs"].items()}
    allocations = round(_line(short["allocations"], long["allocations"], kv_short, kv_long, kv, True))
    lengths = tuple(sorted({kv_short, kv_long}))
    return ({"aiter": _scaled_calls(long["aiter"], kv / kv_long, lengths), "ops": ops,
             "allocations": allocations, "syncs": syncs, "triton": triton}, note)
