"""Every compare of vcmp's tables (FLOAT_TESTS x f16/f32/f64, INT_TESTS x i16..u64, class) as
v_cmp_*_e32 (writes VCC) and v_cmpx_*_e64 (writes an SGPR pair and EXEC), against oracles on Python
floats and ints decoded from the lane bits (IEEE comparisons: NaN compares false, the n* tests
negate), the class bits per AMD's pseudocode, on edge values (signed zeros, denormals, infinities,
quiet and signalling NaNs) and random ones, under a partial EXEC. Lanes off EXEC read 0 in the mask
and stay off: our reading of VOPC (AMD writes D0 per active lane only)."""
import operator
import random
import struct

import numpy as np
import pytest

from harness.emulator import vcmp
from harness.emulator.wave import EXEC, VCC

from .decoded import bare_wave, executor_of

FLOAT_KINDS = {"f16": (16, "<e"), "f32": (32, "<f"), "f64": (64, "<d")}
INT_KINDS = {"i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64}
RANDOM = random.Random(61)
LANES = 64
COMPARE = {"lt": operator.lt, "eq": operator.eq, "le": operator.le, "gt": operator.gt,
           "ge": operator.ge, "ne": operator.ne, "lg": lambda a, b: a < b or a > b,
           "o": lambda a, b: a == a and b == b, "u": lambda a, b: a != a or b != b,
           "f": lambda a, b: False, "tru": lambda a, b: True, "t": lambda a, b: True}
for test in ("ge", "lg", "gt", "le", "eq", "lt"):
    COMPARE["n" + test] = lambda a, b, test=test: not COMPARE[test](a, b)


def float_edges(width: int) -> list[int]:
    exponent_bits = {16: 5, 32: 8, 64: 11}[width]
    mantissa_bits = width - 1 - exponent_bits
    sign, inf = 1 << (width - 1), ((1 << exponent_bits) - 1) << mantissa_bits
    one = ((1 << (exponent_bits - 1)) - 1) << mantissa_bits
    quiet = 1 << (mantissa_bits - 1)
    values = [0, 1, 2, quiet - 1, 1 << mantissa_bits, one, one + 1, inf - 1, inf, inf | quiet, inf | 1,
              inf | quiet | 5]
    return values + [v | sign for v in values]


def lane_values(kind: str, rounds: int) -> list[tuple[list[int], list[int]]]:
    """(a bits, b bits) per round: every edge against every edge, then random bits."""
    width = FLOAT_KINDS[kind][0] if kind in FLOAT_KINDS else INT_KINDS[kind]
    if kind in FLOAT_KINDS:
        edges = float_edges(width)
    else:
        top = 1 << (width - 1)
        edges = [0, 1, 2, top - 1, top, top + 1, (1 << width) - 1, (1 << width) - 2]
    pairs = [(a, b) for a in edges for b in edges]
    pairs += [(RANDOM.getrandbits(width), RANDOM.getrandbits(width)) for _ in range(rounds * LANES)]
    pairs += [(a, a) for a, _ in pairs[-LANES:]]
    pairs += [(0, 0)] * (-len(pairs) % LANES)
    return [([a for a, _ in pairs[k:k + LANES]], [b for _, b in pairs[k:k + LANES]])
            for k in range(0, len(pairs), LANES)]


def as_number(bits: int, kind: str):
    if kind in FLOAT_KINDS:
        width, code = FLOAT_KINDS[kind]
        return struct.unpack(code, bits.to_bytes(width // 8, "little"))[0]
    width = INT_KINDS[kind]
    return bits - (1 << width) if kind[0] == "i" and bits >> (width - 1) else bits


def float_class_bit(bits: int, width: int) -> int:
    """The class index AMD's v_cmp_class pseudocode tests in S1 (0 sNaN ... 9 +inf)."""
    exponent_bits = {16: 5, 32: 8, 64: 11}[width]
    mantissa_bits = width - 1 - exponent_bits
    negative = bits >> (width - 1)
    exponent = bits >> mantissa_bits & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    if exponent == (1 << exponent_bits) - 1 and mantissa:
        return 1 if mantissa >> (mantissa_bits - 1) else 0
    if exponent == (1 << exponent_bits) - 1:
        return 2 if negative else 9
    if exponent:
        return 3 if negative else 8
    if mantissa:
        return 4 if negative else 7
    return 5 if negative else 6


def entries():
    for kind in FLOAT_KINDS:
        yield from ((test, kind) for test in vcmp.FLOAT_TESTS)
        yield "class", kind
    for kind in INT_KINDS:
        yield from ((test, kind) for test in vcmp.INT_TESTS)


def sources(test: str, kind: str) -> str:
    wide = kind.endswith("64")
    second = "v12" if test == "class" else "v[12:13]" if wide else "v12"
    return f"{'v[10:11]' if wide else 'v10'}, {second}"


def lines_of(test: str, kind: str) -> tuple[str, str]:
    return (f"v_cmp_{test}_{kind}_e32 vcc, {sources(test, kind)}",
            f"v_cmpx_{test}_{kind}_e64 s[20:21], {sources(test, kind)}")


LINES = tuple(line for entry in entries() for line in lines_of(*entry))


def put(w, row: int, values: list[int], width: int) -> None:
    """Lane values into VGPRs (16-bit ones with junk in the high half, which must be ignored)."""
    if width == 64:
        w.v[row] = np.array([v & 0xFFFFFFFF for v in values], np.uint32)
        w.v[row + 1] = np.array([v >> 32 for v in values], np.uint32)
        return
    junk = [RANDOM.getrandbits(16) << 16 if width == 16 else 0 for _ in values]
    w.v[row] = np.array([v | j for v, j in zip(values, junk)], np.uint32)


def expected_mask(test: str, kind: str, a_bits, b_bits, exec_bits: int) -> int:
    if test == "class":
        hits = [b >> float_class_bit(a, FLOAT_KINDS[kind][0]) & 1 for a, b in zip(a_bits, b_bits)]
    else:
        hits = [COMPARE[test](as_number(a, kind), as_number(b, kind)) for a, b in zip(a_bits, b_bits)]
    return sum(1 << lane for lane, hit in enumerate(hits) if hit) & exec_bits


def test_every_table_test_has_an_oracle():
    assert set(vcmp.FLOAT_TESTS) | set(vcmp.INT_TESTS) <= set(COMPARE)
    assert len(LINES) == 2 * (3 * (len(vcmp.FLOAT_TESTS) + 1) + 6 * len(vcmp.INT_TESTS))


@pytest.mark.parametrize("test,kind", list(entries()))
def test_compare_writes_vcc_or_an_sgpr_pair_and_exec(test, kind):
    to_vcc, to_exec = (executor_of(LINES, line) for line in lines_of(test, kind))
    width = FLOAT_KINDS[kind][0] if kind in FLOAT_KINDS else INT_KINDS[kind]
    w = bare_wave()
    for round_number, (a_bits, b_bits) in enumerate(lane_values(kind, rounds=2)):
        if test == "class":
            b_bits = [RANDOM.getrandbits(10) for _ in b_bits]
        put(w, 10, a_bits, width)
        put(w, 12, b_bits, 32 if test == "class" else width)
        exec_bits = (1 << 64) - 1 if round_number % 2 else RANDOM.getrandbits(64)
        want = expected_mask(test, kind, a_bits, b_bits, exec_bits)
        w.exec_bits = exec_bits
        to_vcc(w)
        assert w.sgpr64(VCC) == want, (round_number, hex(want ^ w.sgpr64(VCC)))
        to_exec(w)
        assert (w.sgpr64(20), w.exec_bits) == (want, want), round_number
        assert w.s[EXEC] == want & 0xFFFFFFFF
