"""Every elementwise VALU opcode of harness/emulator/valu_ops.OPS, run on the emulator over 64
lanes of edge cases and random bits, against the independent oracles of oracles_valu.py.

Readings the tests rest on (where AMD's CDNA4 pseudocode does not settle a case):
- a NaN result matches any NaN (payloads are not compared);
- a 16-bit result is its low half (what the upper half holds is not compared);
- f32 denormals are kept (LLVM sets FloatMode 240 for compute kernels);
- transcendentals: within 1 ulp of the exactly rounded value (AMD's stated accuracy), normal
  inputs only (LLVM scales denormals around them), v_sin/v_cos on [-256, 256];
- signaling NaNs in v_min/v_max lose like quiet ones (the pseudocode's IEEE = 0 branch; see
  oracles_valu.IEEE_MODE: LLVM runs compute kernels with IEEE = 1, which the emulator does not model);
- VOP3 omod scales the rounded result and rounds again; clamp takes NaN to 0 (DX10_CLAMP).
Ops of gfx950 only: llvm-mc-22 assembles each line. One kernel holds BATCH opcodes (assembling
is the slow part); each opcode still fails on its own, with the lanes that differ."""
import functools
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest

from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel
from harness.emulator.valu_ops import OPS

from .kernels import assemble, memory_of, pack_args
from .oracles_valu import (BF16, F16, F32, F64, FORMATS, ORACLE, WIDTHS, add, encode, fma, is_nan,
                           maximum, mul, pack, sub, value)

NAMES = list(OPS)
BATCH = 25
WORDS = 8  # per opcode: three sources of two words, then the destination's two
LANES = 64
LITERAL = 0x3FC00001  # fmamk/fmaak's K: 1.5 plus one ulp
GARBAGE = 0xA5C3  # the upper half of every 16-bit source: an opcode must ignore it

F32_EDGES = [0x0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00123, 0x7F800001,
             0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000, 0xC0200000,
             0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x4F000000, 0xCF000000,
             0x4F800000, 0x4EFFFFFF, 0x477FE000, 0x477FF000, 0x3EFFFFFF, 0xB3800000, 0x33800000,
             0x387FC000, 0x38800000, 0x3E800000, 0xC1200000, 0x4B000001, 0xB0000000]
F64_EDGES = [0x0, 1 << 63, 0x7FF0 << 48, 0xFFF0 << 48, 0x7FF8 << 48, 0x7FF0000000000001,
             0x3FF0 << 48, 0xBFF0 << 48, 0x3FE0 << 48, 0xBFE0 << 48, 0x3FF8 << 48, 0x4004 << 48,
             0xC004 << 48, 0x1, 0x000FFFFFFFFFFFFF, 0x0010 << 48, 0x7FEFFFFFFFFFFFFF,
             0xFFEFFFFFFFFFFFFF, 0x41E0000000000000, 0xC1E0000000200000, 0x41F0000000000000,
             0x41EFFFFFFFF00000, 0x47EFFFFFF0000000, 0x47EFFFFFF8000000, 0x47EFFFFFE8000000,
             0x36A0000000000000, 0x36A8000000000000, 0x3CB0000000000000, 0xBE30000000000000]
F16_EDGES = [0x0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x3C00, 0xBC00, 0x3800, 0x3E00, 0x4100,
             0xC100, 0x1, 0x83FF, 0x400, 0x7BFF, 0xFBFF, 0x7800, 0xF800, 0x7A00, 0x5640, 0x3555]
INT_EDGES = {
    16: [0, 1, 2, 15, 16, 17, 31, 0xFF, 0x100, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF],
    32: [0, 1, 2, 31, 32, 33, 63, 64, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFF, 0x800000, 0xFFFFFF,
         0x1000000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF, 0x55555555,
         0xAAAAAAAA, 0x0C0D0A08, 0x12345678],
    64: [0, 1, 63, 64, 65, 2**32 - 1, 2**32, 2**63, 2**63 + 1, 2**64 - 1, 0x8000800080008000],
}
EDGES = {"f32": F32_EDGES, "f64": F64_EDGES, "f16": F16_EDGES}
PERIODIC = ("sin_f32", "cos_f32")  # AMD: valid for inputs in [-256, 256]


def subnormal(bits: int, kind: str) -> bool:
    fmt = FORMATS[kind]
    x = value(bits, fmt)
    return x != 0 and abs(x) < 2.0 ** fmt.emin


def random_lanes(rng, kind: str, count: int, moderate: float) -> list[int]:
    """Half raw bit patterns, half moderate values (so sums cancel and casts stay in range)."""
    width = WIDTHS[kind]
    raw = [int.from_bytes(rng.bytes(width // 8), "little") for _ in range(count - count // 2)]
    if kind not in FORMATS:
        small = rng.integers(-300, 300, count // 2)
        return raw + [int(x) & ((1 << width) - 1) for x in small]
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[width]
    values = rng.uniform(-moderate, moderate, count // 2).astype(dtype)
    return raw + [pack(float(x), FORMATS[kind]) for x in values]


def within_turns(bits: int, kind: str) -> bool:
    """Inside v_sin/v_cos's documented input range (inf and NaN kept as edge cases)."""
    x = value(bits, FORMATS[kind])
    return not math.isfinite(x) or abs(x) <= 256


def source_lanes(name: str, at: int, kind: str) -> list[int]:
    """One source's 64 lane values: the kind's edge cases, then random ones, shuffled apart
    from source 0 so that edge cases meet each other."""
    case = ORACLE.get(name)
    if case and case.literal == at:
        return [LITERAL] * LANES
    rng = np.random.default_rng(zlib.crc32(f"{name}/{at}".encode()))
    edges = EDGES.get(kind, INT_EDGES[WIDTHS[kind]])
    lanes = edges + random_lanes(rng, kind, LANES - len(edges), 256.0 if name in PERIODIC else 1000.0)
    one = pack(1.0, FORMATS[kind]) if kind in FORMATS else 1
    if name in PERIODIC:
        lanes = [x if within_turns(x, kind) else one for x in lanes]
    if case and case.ulps:  # transcendentals: normal inputs only
        lanes = [one if subnormal(x, kind) else x for x in lanes]
    order = rng.permutation(LANES) if at else np.arange(LANES)
    return [lanes[i] for i in order]


def meet_signed_zeros(case, inputs) -> None:
    """Where the first two sources are floats: the last lanes pair +0/-0, -0/+0, x/-x and x/x."""
    kind = case.sources[0]
    if kind not in FORMATS or case.sources[1:2] != (kind,) or case.literal is not None:
        return
    sign = 1 << (WIDTHS[kind] - 1)
    first, second = inputs[0], inputs[1]
    first[-4:-2], second[-4:-2] = [0, sign], [sign, 0]
    second[-2:] = [first[-2] ^ sign, first[-1]]


def register(kind: str, first: int) -> str:
    return f"v[{first}:{first + 1}]" if WIDTHS[kind] == 64 else f"v{first}"


def instruction(name: str) -> str:
    case = ORACLE[name]
    sources = [register(kind, 10 + 2 * at) for at, kind in enumerate(case.sources)]
    if case.literal is not None:
        sources[case.literal] = hex(LITERAL)
    if case.accumulate:
        sources = sources[:-1]
    return f"  v_{name} {register(case.result, 20)}, " + ", ".join(sources)


def block(k: int, text: str) -> list[str]:
    """Load block k's sources (v10..v15) and destination (v20:21) from its region, run, store."""
    loads = [f"  global_load_dword v{10 + w}, v1, s[8:9] offset:{256 * w}" for w in range(6)]
    loads += [f"  global_load_dword v{14 + w}, v1, s[8:9] offset:{256 * w}" for w in range(6, 8)]
    stores = [f"  global_store_dword v1, v{14 + w}, s[8:9] offset:{256 * w}" for w in range(6, 8)]
    return [f"  s_add_u32 s8, s4, {k * WORDS * 4 * LANES}", "  s_addc_u32 s9, s5, 0", *loads,
            "  s_waitcnt vmcnt(0)", text, *stores]


def words(kind: str, lanes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    low = [x & 0xFFFFFFFF for x in lanes]
    if WIDTHS[kind] == 16:
        low = [x | GARBAGE << 16 for x in low]
    high = [x >> 32 for x in lanes]
    return np.array(low, np.uint32), np.array(high, np.uint32)


def run_blocks(texts, sources, accumulate) -> list[list[int]]:
    """One kernel of blocks; block k reads sources[k] ([(kind, lanes)]) and starts its
    destination as its third source (accumulate[k]) or 0xDEADBEEF. Returns each result's lanes."""
    buffer = np.zeros(len(texts) * WORDS * LANES, np.uint32)
    region = buffer.reshape(len(texts), WORDS, LANES)
    for k, block_sources in enumerate(sources):
        for at, (kind, lanes) in enumerate(block_sources):
            region[k, 2 * at], region[k, 2 * at + 1] = words(kind, lanes)
        region[k, 6:8] = region[k, 4:6] if accumulate[k] else 0xDEADBEEF
    text = "\n".join(["  s_load_dwordx2 s[4:5], s[0:1], 0x0", "  v_and_b32 v0, 63, v0",
                      "  v_lshlrev_b32 v1, 2, v0", "  s_waitcnt lgkmcnt(0)",
                      *[line for k, text in enumerate(texts) for line in block(k, text)],
                      "  s_waitcnt vmcnt(0)", "  s_endpgm", ""])
    code = load_code_object(assemble(text, pointers=1))
    run_kernel(code, "k", (1, 1, 1), (LANES, 1, 1), pack_args(buffer), memory=memory_of(buffer))
    return [[int(lo) | int(hi) << 32 for lo, hi in zip(region[k, 6], region[k, 7])]
            for k in range(len(texts))]


def opcode_inputs(name: str) -> list[list[int]]:
    case = ORACLE[name]
    inputs = [source_lanes(name, at, kind) for at, kind in enumerate(case.sources)]
    meet_signed_zeros(case, inputs)
    return inputs


@functools.cache
def batch_results(index: int) -> dict:
    """name -> (source lanes, result lanes) for one kernel of BATCH opcodes."""
    names = [n for n in NAMES[index * BATCH:(index + 1) * BATCH] if n in ORACLE]
    inputs = {name: opcode_inputs(name) for name in names}
    results = run_blocks([instruction(n) for n in names],
                         [list(zip(ORACLE[n].sources, inputs[n])) for n in names],
                         [ORACLE[n].accumulate for n in names])
    return {name: (inputs[name], lanes) for name, lanes in zip(names, results)}


def ordered(bits: int, width: int) -> int:
    """Float bits as an integer that counts ulps across zero (+0 and -0 both 0)."""
    sign = 1 << (width - 1)
    return -(bits & ~sign) if bits & sign else bits


HALVES = {"pk_f16": (F16, F16), "pk_bf16": (BF16, BF16), "hi_f16": (None, F16)}


def float_agrees(fmt, got: int, want: int, ulps: int) -> bool:
    """Bit for bit, any NaN for a NaN; within `ulps` for the transcendentals."""
    got, want = got & (1 << fmt.width) - 1, want & (1 << fmt.width) - 1
    if is_nan(want, fmt) or is_nan(got, fmt):
        return is_nan(want, fmt) and is_nan(got, fmt)
    if not ulps:
        return got == want
    return abs(ordered(got, fmt.width) - ordered(want, fmt.width)) <= ulps


def agrees(kind: str, got: int, want: int, ulps: int) -> bool:
    if kind in HALVES:  # two 16-bit halves, each its own format (None: exact bits)
        return all(float_agrees(fmt, got >> s, want >> s, 0) if fmt else (got >> s ^ want >> s) & 0xFFFF == 0
                   for fmt, s in zip(HALVES[kind], (0, 16)))
    if kind in FORMATS:
        return float_agrees(FORMATS[kind], got, want, ulps)
    return got & (1 << WIDTHS[kind]) - 1 == want


def lane_report(text: str, inputs, got, want_of, kind: str, ulps: int = 0) -> None:
    wrong = []
    for lane in range(LANES):
        sources = [lanes[lane] for lanes in inputs]
        want = want_of(*sources)
        if not agrees(kind, got[lane], want, ulps):
            wrong.append(f"lane {lane}: sources {[hex(s) for s in sources]} got {got[lane]:#x} want {want:#x}")
    assert not wrong, f"{text.strip()}: {len(wrong)} lanes differ\n" + "\n".join(wrong[:8])


def test_every_opcode_has_an_oracle():
    assert set(ORACLE) == set(OPS)


@pytest.mark.parametrize("name", NAMES)
def test_opcode_matches_its_oracle(name):
    assert name in ORACLE, f"{name} has no oracle in oracles_valu.py"
    case = ORACLE[name]
    inputs, got = batch_results(NAMES.index(name) // BATCH)[name]
    lane_report(instruction(name), inputs, got, case.oracle, case.result, case.ulps)


def neg(bits: int) -> int:
    return bits ^ 0x80000000


def absolute(bits: int) -> int:
    return bits & 0x7FFFFFFF


def output(bits: int, factor: float = 1.0, clamp: bool = False) -> int:
    """omod then clamp on an f32 result. Our reading: omod scales the rounded result and rounds
    again; clamp is to [0, 1] with NaN to 0 (DX10_CLAMP, on for compute kernels: LLVM's
    AMDGPUUsage, 'clamp NaN to zero')."""
    x = value(bits, F32)
    if factor != 1.0:
        bits = encode(Fraction(x) * Fraction(factor), F32) if math.isfinite(x) and x else pack(x * factor, F32)
        x = value(bits, F32)
    if clamp:
        bits = pack(0.0, F32) if math.isnan(x) or x < 0 else pack(1.0, F32) if x > 1 else bits
    return bits


MODIFIED = [  # VOP3 source and output modifiers; op_sel on the 16-bit opcodes that take it on gfx950
    ("v_add_f32_e64 v20, -v10, |v12|", "f32 f32", "f32", lambda a, b: add(F32)(neg(a), absolute(b))),
    ("v_mul_f32_e64 v20, v10, v12 mul:2", "f32 f32", "f32", lambda a, b: output(mul(F32)(a, b), 2.0)),
    ("v_fma_f32 v20, -|v10|, v12, -v14 div:2", "f32 f32 f32", "f32",
     lambda a, b, c: output(fma(F32)(neg(absolute(a)), b, neg(c)), 0.5)),
    ("v_max_f32_e64 v20, |v10|, -v12 clamp", "f32 f32", "f32",
     lambda a, b: output(maximum(F32)(absolute(a), neg(b)), clamp=True)),
    ("v_sub_f32_e64 v20, v10, v12 clamp mul:4", "f32 f32", "f32",
     lambda a, b: output(sub(F32)(a, b), 4.0, clamp=True)),
    ("v_fma_f64 v[20:21], -v[10:11], |v[12:13]|, v[14:15]", "f64 f64 f64", "f64",
     lambda a, b, c: fma(F64)(a ^ 1 << 63, b & ~(1 << 63), c)),
    ("v_fma_f16 v20, v10, v12, v14 op_sel:[1,0,1,1]", "u32 u32 u32", "hi_f16",  # low half kept
     lambda a, b, c: 0xBEEF | fma(F16)(a >> 16, b & 0xFFFF, c >> 16) << 16),
    ("v_pack_b32_f16 v20, v10, v12 op_sel:[1,1,0]", "u32 u32", "u32", lambda a, b: a >> 16 | (b >> 16) << 16),
]


@functools.cache
def modified_results() -> list:
    inputs = [[source_lanes(f"modified/{k}", at, kind) for at, kind in enumerate(kinds.split())]
              for k, (_, kinds, _, _) in enumerate(MODIFIED)]
    results = run_blocks(["  " + text for text, *_ in MODIFIED],
                         [list(zip(kinds.split(), lanes)) for (_, kinds, _, _), lanes in zip(MODIFIED, inputs)],
                         [False] * len(MODIFIED))
    return list(zip(inputs, results))


@pytest.mark.parametrize("at", range(len(MODIFIED)), ids=[text.split()[0] for text, *_ in MODIFIED])
def test_modifiers_match_the_oracle(at):
    text, _, kind, oracle = MODIFIED[at]
    inputs, got = modified_results()[at]
    lane_report(text, inputs, got, oracle, kind)
