"""The calibration figures and fixed costs of data/mi355x_costs.json, and the bytes an MLA decode kernel moves.

Every figure in the data file carries its source (repository, path, commit); this module only reads them. A row's
`structure` is turned into the launches the model prices (`row_launches`), counted the way the recorder counts a
submission's call, so the fit and an estimate see the same things.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.results.floors import HEADS, KV_BYTES_PER_TOKEN, QK_DIM, V_DIM

DATA_FILE = Path(__file__).resolve().parent / "data" / "mi355x_costs.json"


@dataclass(frozen=True)
class Launch:
    """One kind of thing a call does, `count` times: the unit the model prices."""
    kind: str              # "python" | "asm" | "aiter" | "torch" | "triton" | "alloc" | "sync"
    name: str
    count: int = 1
    bytes: float = 0.0     # bytes moved by all `count` of them (asm: KV + Q read, output written)
    variant: str | None = None  # asm kernels: "a8w8_ps", "a16w16_np", ...
    programs: int | None = None  # Triton kernels: programs in the grid of each launch (None when not known)
    kernel: str | None = None   # Triton kernels: the @triton.jit function's name (the kernel model's key)


@dataclass(frozen=True)
class Row:
    id: str
    what: str
    mode: str
    times_us: dict         # (batch, kv) -> us
    structure: dict
    source: dict


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


def parse_shape(text: str) -> tuple:
    batch, kv = text.lower().split("x")
    return int(batch), int(kv)


def load(path: Path = DATA_FILE) -> Calibration:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    fixed = data["fixed_costs"]
    helpers = {name: float(entry["value"]) for name, entry in fixed["aiter_kernels_us"].items() if isinstance(entry, dict)}
    rows = tuple(Row(id=row["id"], what=row["what"], mode=row["mode"],
                     times_us={parse_shape(k): float(v) for k, v in row["times_us"].items()},
                     structure=dict(row["structure"]), source=dict(row["source"])) for row in data["rows"])
    ranked = data["ranked_offset_us"]
    return Calibration(python_call_us=float(fixed["python_call_us"]["value"]),
                       torch_launch_us=float(fixed["torch_launch_us"]["value"]),
                       allocation_us=float(fixed["allocation_us"]["value"]), aiter_kernel_us=helpers,
                       peak_bandwidth=float(data["hardware"]["peak_bandwidth_bytes_per_s"]),
                       compute_units=int(data["hardware"]["compute_units"]),
                       ranked_offset_us=(float(ranked["low"]), float(ranked["high"])), rows=rows)


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
    Split partials are left out on purpose: the fitted per-byte cost of each variant carries them."""
    return total_kv * QK_DIM * kv_bytes + total_q * HEADS * QK_DIM * q_bytes + total_q * HEADS * V_DIM * 2


def variant_key(variant: str | None, persistent: bool | None) -> str:
    return f"{variant or 'unknown'}_{'ps' if persistent else 'np'}"


def row_launches(row: Row, shape: tuple) -> list[Launch]:
    """The launches of one calibration row at one shape, as the recorder would count that file's call."""
    batch, kv = shape
    s = row.structure
    q_bytes, kv_bytes = variant_dtypes(s["variant"])
    launches = [Launch("python", "custom_kernel call"),
                Launch("asm", f"mla {s['variant']}", bytes=kernel_bytes(batch, batch * kv, q_bytes, kv_bytes),
                       variant=variant_key(s["variant"], s["persistent"]))]
    launches += [Launch("aiter", name) for name in s["aiter_kernels"]]
    for kind, key in (("torch", "torch_launches"), ("alloc", "allocations"), ("sync", "syncs")):
        if s[key]:
            launches.append(Launch(kind, key, count=int(s[key])))
    return launches
