"""The calibration figures and fixed costs of data/mi355x_costs.json, and what an MLA decode kernel moves.

Every figure in the data file carries its source (the log: repository, path, commit, date) and the file that
was timed (repository, path, commit, sha256); this module only reads them. A row's `structure` (with
`by_shape` where the file's path changes with the shape) is turned into the launches the model prices
(`row_launches`), counted the way the recorder counts a submission's call, so the fit and an estimate see the
same things. `schedule` gives an asm launch its shape: workgroups per CU and the KV tokens the busiest CU
reads one after another.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from harness.results.floors import HEADS, KV_BYTES_PER_TOKEN, QK_DIM, V_DIM

DATA_FILE = Path(__file__).resolve().parent / "data" / "mi355x_costs.json"
CUS = 256                 # MI355X compute units (the data file's hardware entry)
SPLIT_OVERHEAD_ROWS = 84.1  # aiter get_meta_param's cost of a split, in KV rows (f3be04a12a)
FP8_MIN_BLOCK = 128       # aiter caps fp8 splits at kv / 128 for 16 heads
DEFAULT_PS_SPLITS = 32    # a persistent call whose recording gives no split count: the reference's


@dataclass(frozen=True)
class Launch:
    """One kind of thing a call does, `count` times: the unit the model prices."""
    kind: str              # python | asm | aiter | torch | gemm | triton | alloc | sync
    name: str
    count: int = 1
    bytes: float = 0.0     # bytes moved by all `count` of them (asm: KV + Q read, output written)
    variant: str | None = None  # asm kernels: "a8w8_ps", "a16w16_np", ...
    programs: int | None = None  # Triton kernels: programs in the grid of each launch (None when not known)
    kernel: str | None = None   # Triton kernels: the @triton.jit function's name (the kernel model's key)
    per_cu: float = 0.0    # asm: workgroups (work items) per CU
    serial_tokens: float = 0.0  # asm: KV tokens the busiest CU reads one after another
    effects: tuple = ()    # gemm/torch: "torch_compile", "tunableop" when the file turns them on
    splits: int = 0        # Triton kernels of a worked-out MI355X plan: the split count of the launch's call
    fit: object = None     # HIP kernels: their executed counts (executed.ExecutedFit) from this shape's calls
    unpriced: str = ""     # HIP kernels without a fit: why


@dataclass(frozen=True)
class Row:
    id: str
    file: str              # the timed file: the unit the leave-one-file-out drops
    what: str
    mode: str
    times_us: dict         # (batch, kv) -> us
    structure: dict
    source: dict
    timed_file: dict


@dataclass(frozen=True)
class Calibration:
    python_call_us: float
    torch_launch_us: float
    allocation_us: float
    aiter_kernel_us: dict  # "metadata" | "reduce" | "quant" -> us
    peak_bandwidth: float  # bytes/s
    compute_units: int
    ranked_offset_us: tuple  # (low, high) from the facts
    rows: tuple
    effects: dict = None   # "torch_compile" | "tunableop" -> (factor, marker in the source)


def parse_shape(text: str) -> tuple:
    batch, kv = text.lower().split("x")
    return int(batch), int(kv)


def _row(entry: dict) -> Row:
    return Row(id=entry["id"], file=entry.get("file", entry["id"]), what=entry["what"], mode=entry["mode"],
               times_us={parse_shape(k): float(v) for k, v in entry["times_us"].items()},
               structure=dict(entry["structure"]), source=dict(entry["source"]),
               timed_file=dict(entry.get("timed_file", {})))


def load(path: Path = DATA_FILE) -> Calibration:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    fixed = data["fixed_costs"]
    helpers = {name: float(entry["value"]) for name, entry in fixed["aiter_kernels_us"].items()
               if isinstance(entry, dict)}
    effects = {name: (float(entry["value"]), entry["marker"]) for name, entry in data.get("effects", {}).items()
               if isinstance(entry, dict)}
    ranked = data["ranked_offset_us"]
    return Calibration(python_call_us=float(fixed["python_call_us"]["value"]),
                       torch_launch_us=float(fixed["torch_launch_us"]["value"]),
                       allocation_us=float(fixed["allocation_us"]["value"]), aiter_kernel_us=helpers,
                       peak_bandwidth=float(data["hardware"]["peak_bandwidth_bytes_per_s"]),
                       compute_units=int(data["hardware"]["compute_units"]),
                       ranked_offset_us=(float(ranked["low"]), float(ranked["high"])),
                       rows=tuple(_row(entry) for entry in data["rows"]), effects=effects)


def element_bytes(dtype: str | None, default: float) -> float:
    """Bytes per element of a dtype as torch or aiter names it ('torch.float8_e4m3fn', 'fp8', 'bf16', 'fp4x2')."""
    text = str(dtype or "").lower()
    if "fp4" in text or "uint8" in text:
        return KV_BYTES_PER_TOKEN["mxfp4"] / QK_DIM
    if "float8" in text or "fp8" in text:
        return 1.0
    if "16" in text:
        return 2.0
    if "float32" in text or "fp32" in text:
        return 4.0
    return default


def variant_dtypes(variant: str | None) -> tuple:
    """(q bytes, kv bytes) per element that an asm variant name implies: a8w8 fp8/fp8, a16w8 bf16/fp8, a16w16 bf16."""
    q = 1.0 if str(variant).startswith("a8") else 2.0
    kv = 1.0 if str(variant).endswith("w8") else 2.0
    return q, kv


def kernel_bytes(total_q: int, total_kv: int, q_bytes: float, kv_bytes: float) -> float:
    """What an MLA decode kernel must move: every KV row and Q read once, the bf16 output written once.
    Split partials are left out on purpose: the fitted costs of each variant carry them."""
    return total_kv * QK_DIM * kv_bytes + total_q * HEADS * QK_DIM * q_bytes + total_q * HEADS * V_DIM * 2


def variant_key(variant: str | None, persistent: bool | None, splits: int | None = None) -> str:
    """'a8w8_ps', 'a16w16_np'; 'a8w8_np1' for fp8 Q at one split, where stage 1 writes the output itself (its
    figures run slower per token than the split launches: 121 us at 256 x 1k against 84 us at 32 x 8k)."""
    straight = not persistent and splits == 1 and str(variant).startswith("a8")
    return f"{variant or 'unknown'}_{'ps' if persistent else 'np1' if straight else 'np'}"


def aiter_splits(batch: int, kv: int, fp8_q: bool) -> int:
    """aiter get_meta_param's split count for a non-persistent call on 256 CUs (the runner's pin)."""
    score = [(batch * i / (-(-batch * i // CUS) * CUS) * kv / (kv + SPLIT_OVERHEAD_ROWS * i), i)
             for i in range(1, 17)]
    splits = max(score, key=lambda item: (item[0], -item[1]))[1]
    return min(splits, max(1, (kv + FP8_MIN_BLOCK - 1) // FP8_MIN_BLOCK)) if fp8_q else splits


def schedule(batch: int, kv: int, splits: int | None, persistent: bool) -> tuple:
    """(workgroups per CU, KV tokens the busiest CU reads in turn) of one asm launch on 256 CUs.
    Non-persistent: a workgroup per (sequence, split), in waves of 256. Persistent: the metadata spreads
    the KV over the CUs, each sequence cut into at most `splits` pieces."""
    if persistent:
        most = splits or DEFAULT_PS_SPLITS
        pieces = min(most, max(1, math.ceil(CUS / batch)))
        return batch * pieces / CUS, max(math.ceil(batch * kv / CUS), math.ceil(kv / most))
    splits = splits or 1
    return batch * splits / CUS, math.ceil(batch * splits / CUS) * math.ceil(kv / splits)


def _helpers(names: list) -> list[Launch]:
    """'reduce' -> one launch of the reduce; 'quant:3' -> the quantizer's three launches."""
    found = []
    for name in names:
        kind, _, count = str(name).partition(":")
        found.append(Launch("aiter", kind, count=int(count or 1)))
    return found


def _asm_launch(s: dict, batch: int, kv: int) -> list[Launch]:
    q_bytes, kv_bytes = variant_dtypes(s["variant"])
    splits = s.get("splits")
    if splits == "aiter":
        splits = aiter_splits(batch, kv, fp8_q=s["variant"].startswith("a8"))
    above_one = bool(s.get("persistent_above_one"))  # one split: non-persistent; more: persistent + reduce
    persistent = splits > 1 if above_one else bool(s.get("persistent"))
    per_cu, tokens = schedule(batch, kv, splits, persistent)
    helpers = list(s["aiter_kernels"]) + ["reduce"] * (above_one and persistent)
    if not persistent and splits == 1 and s["variant"].startswith("a8"):
        helpers = [name for name in helpers if name != "reduce"]  # fp8, one split: stage 1 writes the output
    return [Launch("asm", f"mla {s['variant']}", bytes=kernel_bytes(batch, batch * kv, q_bytes, kv_bytes),
                   variant=variant_key(s["variant"], persistent, splits), per_cu=per_cu, serial_tokens=tokens)] \
        + _helpers(helpers)


def gemm_path_bytes(batch: int, kv: int) -> tuple:
    """(GEMM bytes, elementwise bytes) of the bf16 torch path: Q.K^T and P.V, and the ops on the scores."""
    scores = batch * HEADS * kv
    gemms = batch * kv * (QK_DIM + V_DIM) * 2 + batch * HEADS * (QK_DIM + V_DIM) * 2 + 2 * scores * 2
    return gemms, scores * (2 + 4) + scores * (4 + 2)


def _gemm_launches(s: dict, batch: int, kv: int) -> list[Launch]:
    gemm_bytes, other_bytes = gemm_path_bytes(batch, kv)
    effects = tuple(s.get("effects", ()))  # torch.compile / TunableOp, when the file turns them on
    found = [Launch("gemm", "torch GEMM", count=int(s["gemms"]), bytes=gemm_bytes, effects=effects)]
    return found + [Launch("torch", "torch elementwise", count=int(s["torch_launches"]), bytes=other_bytes,
                           effects=effects)]


def shape_structure(row: Row, shape: tuple) -> dict:
    base = {k: v for k, v in row.structure.items() if k not in ("by_shape", "counted")}
    return dict(base, **row.structure.get("by_shape", {}).get(f"{shape[0]}x{shape[1]}", {}))


def row_launches(row: Row, shape: tuple) -> list[Launch]:
    """The launches of one calibration row at one shape, as the recorder would count that file's call."""
    batch, kv = shape
    s = shape_structure(row, shape)
    launches = [Launch("python", "custom_kernel call")]
    if s.get("path", "asm") == "gemm":
        launches += _gemm_launches(s, batch, kv)
    else:
        launches += _asm_launch(s, batch, kv)
        if s.get("torch_launches"):
            launches.append(Launch("torch", "torch_launches", count=int(s["torch_launches"])))
    for kind, key in (("alloc", "allocations"), ("sync", "syncs")):
        if s.get(key):
            launches.append(Launch(kind, key, count=int(s[key])))
    return launches
