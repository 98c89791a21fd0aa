"""Every special form of valu_forms.FORMS against an oracle sharing no code with the emulator (Python
ints, exact fractions, torch's float8 dtypes), on edge and random lanes under a partial EXEC: the
destination (lanes off EXEC kept), VCC or the carry SGPRs, SGPR results. Decoded from one assembled
kernel, built by the real dispatch. A FORMS entry without an oracle here fails."""
import random
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch

from harness.emulator import valu_forms
from harness.emulator.wave import M0, VCC

from .decoded import bare_wave, executor_of

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
RANDOM = random.Random(53)
LANE_BITS = range(64)
EDGES32 = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0x80000001, M32, M32 - 1]


def lanes(edges=EDGES32, width: int = 32) -> list[int]:
    picked = edges + [RANDOM.getrandbits(width) for _ in range(64 - len(edges))]
    RANDOM.shuffle(picked)
    return picked


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_of(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def rounded_f32(value: Fraction) -> int:
    """The float32 nearest an exact value, ties to even (through torch's float64 -> float32 only when
    float64 holds it exactly; otherwise by comparing the two neighbours exactly)."""
    near = torch.tensor(float(value), dtype=torch.float64).float().item()
    candidates = {near, float(np.nextafter(np.float32(near), np.float32(np.inf))),
                  float(np.nextafter(np.float32(near), np.float32(-np.inf)))}
    return f32_bits(min(candidates, key=lambda c: (abs(Fraction(c) - value), f32_bits(c) & 1)))


class Lanes:
    """A bare wave with rows and SGPRs set from Python ints, read back the same way."""

    def __init__(self, exec_bits: int):
        self.w = bare_wave()
        self.w.exec_bits = exec_bits
        self.exec = exec_bits

    def put(self, row: int, values, width: int = 32):
        for half in range(width // 32):
            self.w.v[row + half] = np.array([v >> 32 * half & M32 for v in values], np.uint32)

    def get(self, row: int, width: int = 32) -> list[int]:
        rows = [self.w.v[row + half].astype(object) for half in range(width // 32)]
        return [sum(int(r[lane]) << 32 * half for half, r in enumerate(rows)) for lane in LANE_BITS]

    def active(self, lane: int) -> bool:
        return bool(self.exec >> lane & 1)

    def mask_of(self, hits) -> int:
        return sum(1 << lane for lane in LANE_BITS if hits[lane] and self.active(lane))

    def expect_row(self, row: int, want, old, width: int = 32, nan_part: int = 0):
        """`nan_part`: the float width whose NaNs compare equal whatever their sign and payload
        (which NaN the hardware makes is not in AMD's text: our reading leaves it open)."""
        kept = [want[k] if self.active(k) else old[k] for k in LANE_BITS]
        got = self.get(row, width)
        if nan_part:
            kept, got = any_nan(kept, width, nan_part), any_nan(got, width, nan_part)
        assert got == kept, [(k, hex(g), hex(e)) for k, (g, e) in enumerate(zip(got, kept)) if g != e][:4]


def any_nan(values, width: int, part: int) -> list[int]:
    """Each `part`-bit float NaN in the values replaced by one marker pattern."""
    exponent = {32: 0x7F800000, 64: 0x7FF0000000000000}[part]
    mantissa = {32: 0x7FFFFF, 64: (1 << 52) - 1}[part]
    out = []
    for value in values:
        chunks = [value >> shift & ((1 << part) - 1) for shift in range(0, width, part)]
        chunks = [exponent | mantissa if c & exponent == exponent and c & mantissa else c for c in chunks]
        out.append(sum(c << (k * part) for k, c in enumerate(chunks)))
    return out


def rounds():
    """Lanes objects: EXEC all on, then part on."""
    return [Lanes(M64), Lanes(RANDOM.getrandbits(64) | 1)]


def carry_case(kind: str, carry_in: bool):
    def oracle(a, b, c):
        if kind == "subrev":
            a, b = b, a
        total = a + b + c if kind == "add" else a - b - c
        return total & M32, int(total > M32) if kind == "add" else int(b + c > a)

    def check(run):
        for lanes_ in rounds():
            a, b, old = lanes(), lanes(), lanes()
            carry = RANDOM.getrandbits(64) if carry_in else 0
            lanes_.put(10, a), lanes_.put(11, b), lanes_.put(20, old)
            lanes_.w.set_sgpr64(32, carry)
            run(lanes_.w)
            results = [oracle(a[k], b[k], carry >> k & 1) for k in LANE_BITS]
            lanes_.expect_row(20, [d for d, _ in results], old)
            assert lanes_.w.sgpr64(30) == lanes_.mask_of([c for _, c in results])
    name = {"add": "add", "sub": "sub", "subrev": "subrev"}[kind]
    mnemonic = f"v_{name}{'c' if carry_in and kind == 'add' else 'b' if carry_in else ''}_co_u32_e64"
    if carry_in and kind == "subrev":
        mnemonic = "v_subbrev_co_u32_e64"
    return (f"{mnemonic} v20, s[30:31], v10, v11" + (", s[32:33]" if carry_in else ""),), check


def mad_case(is_signed: bool):
    def check(run):
        for lanes_ in rounds():
            a, b = lanes(), lanes()
            c, old = lanes(EDGES32 + [M64, 1 << 63, (1 << 63) - 1], 64), lanes(width=64)
            lanes_.put(10, a), lanes_.put(11, b), lanes_.put(12, c, 64), lanes_.put(20, old, 64)
            run(lanes_.w)
            if is_signed:  # AMD: { D1.i1, D0.i64 } = 65'B(65'I(S0.i32) * 65'I(S1.i32) + 65'I(S2.i64))
                sign32, sign64 = (lambda x: x - (x >> 31 << 32)), (lambda x: x - (x >> 63 << 64))
                totals = [sign32(a[k]) * sign32(b[k]) + sign64(c[k]) for k in LANE_BITS]
            else:
                totals = [a[k] * b[k] + c[k] for k in LANE_BITS]
            lanes_.expect_row(20, [t & M64 for t in totals], old, 64)
            assert lanes_.w.sgpr64(30) == lanes_.mask_of([t >> 64 & 1 for t in totals])
    operands = "v[20:21], s[30:31], v10, v11, v[12:13]"
    return (f"v_mad_{'i64_i32' if is_signed else 'u64_u32'} {operands}",), check


def check_cndmask(run):
    for lanes_ in rounds():
        a, b, old, select = lanes(), lanes(), lanes(), RANDOM.getrandbits(64)
        lanes_.put(10, a), lanes_.put(11, b), lanes_.put(20, old)
        lanes_.w.set_sgpr64(VCC, select)
        run(lanes_.w)
        lanes_.expect_row(20, [b[k] if select >> k & 1 else a[k] for k in LANE_BITS], old)


def check_readlane(run):
    for lanes_ in rounds():
        values, pick = lanes(), RANDOM.getrandbits(32)
        lanes_.put(10, values)
        lanes_.w.s[31] = pick
        run(lanes_.w)
        assert lanes_.w.s[30] == values[pick & 63]


def check_readfirstlane(run):
    for exec_bits in (M64, 1 << 37 | 1 << 50, 0):
        lanes_ = Lanes(exec_bits)
        values = lanes()
        lanes_.put(10, values)
        run(lanes_.w)  # AMD: the lowest active lane; lane 0 when EXEC is 0
        first = next((k for k in LANE_BITS if exec_bits >> k & 1), 0)
        assert lanes_.w.s[30] == values[first]


def check_writelane(run):
    for lanes_ in rounds():
        old, value, pick = lanes(), RANDOM.getrandbits(32), RANDOM.getrandbits(32)
        lanes_.put(20, old)
        lanes_.w.s[30], lanes_.w.s[M0] = value, pick
        run(lanes_.w)  # one lane, whatever EXEC
        assert lanes_.get(20) == [value if k == pick & 63 else old[k] for k in LANE_BITS]


def mbcnt_case(high: bool):
    def check(run):
        for lanes_ in rounds():
            masks, base, old = lanes(), lanes(), lanes()
            lanes_.put(10, masks), lanes_.put(11, base), lanes_.put(20, old)
            run(lanes_.w)
            below = [((1 << k) - 1) >> (32 if high else 0) & M32 for k in LANE_BITS]
            want = [bin(masks[k] & below[k]).count("1") + base[k] & M32 for k in LANE_BITS]
            lanes_.expect_row(20, want, old)
    return (f"v_mbcnt_{'hi' if high else 'lo'}_u32_b32 v20, v10, v11",), check


def normal_f32s() -> list[int]:
    """Random normal float32 bits, exponents within 2^-20..2^20: no case of v_div_scale applies."""
    return [f32_bits(RANDOM.uniform(1, 2) * 2.0 ** RANDOM.randint(-20, 20) * RANDOM.choice((1, -1)))
            for _ in LANE_BITS]


def div_scale_case(width: int):
    def check(run):
        """Off AMD's special cases D = S0 and VCC = 0 (the scaling cases are not modelled: the
        emulator's v_div_fixup returns the rounded quotient, see test_division_sequence...)."""
        for lanes_ in rounds():
            den, num = normal_f32s(), normal_f32s()
            if width == 64:
                den = [f64_bits(f32_of(x)) for x in den]
                num = [f64_bits(f32_of(x)) for x in num]
            source = [den[k] if k % 2 else num[k] for k in LANE_BITS]
            old = lanes(width=width)
            lanes_.put(10, source, width), lanes_.put(12, den, width), lanes_.put(14, num, width)
            lanes_.put(20, old, width)
            lanes_.w.set_sgpr64(VCC, M64)
            run(lanes_.w)
            lanes_.expect_row(20, source, old, width)
            assert lanes_.w.sgpr64(VCC) == 0
    if width == 32:
        return ("v_div_scale_f32 v20, vcc, v10, v12, v14",), check
    return ("v_div_scale_f64 v[20:21], vcc, v[10:11], v[12:13], v[14:15]",), check


def check_div_fmas(run):
    """VCC = 0 lanes: fma rounded once (exact fractions). VCC = 1 lanes scale by 2^32: our reading,
    not checked here."""
    for lanes_ in rounds():
        a, b, c, old = normal_f32s(), normal_f32s(), normal_f32s(), lanes()
        for row, values in ((10, a), (11, b), (12, c), (20, old)):
            lanes_.put(row, values)
        lanes_.w.set_sgpr64(VCC, 0)
        run(lanes_.w)
        exact = [Fraction(f32_of(a[k])) * Fraction(f32_of(b[k])) + Fraction(f32_of(c[k])) for k in LANE_BITS]
        lanes_.expect_row(20, [rounded_f32(x) for x in exact], old)


def div_fixup_case(width: int):
    def check(run):
        """S0 the rounded quotient S2 / S1 (as the division sequence leaves it): D = S0; x / 0 is a
        signed infinity and 0 / 0 NaN (AMD's special cases)."""
        for lanes_ in rounds():
            den, num = normal_f32s(), normal_f32s()
            den[:4], num[:4] = [0, 0, 0x80000000, 0x3F800000], [f32_bits(2.5), 0, f32_bits(-1.0), 0]
            if width == 32:
                quotient = [rounded_f32(Fraction(f32_of(n)) / Fraction(f32_of(d))) if f32_of(d) else None
                            for n, d in zip(num, den)]
            else:
                den, num = [f64_bits(f32_of(x)) for x in den], [f64_bits(f32_of(x)) for x in num]
                quotient = [f64_bits(float(Fraction(struct.unpack("<d", struct.pack("<Q", n))[0]) /
                                           Fraction(struct.unpack("<d", struct.pack("<Q", d))[0])))
                            if d & ((1 << 63) - 1) else None for n, d in zip(num, den)]
            special = {32: (0x7F800000, 0x7FC00000), 64: (0x7FF0000000000000, 0x7FF8000000000000)}[width]
            sign = 1 << (width - 1)
            for k in range(4):
                if not den[k] & (sign - 1):  # x / +-0: a signed infinity, 0 / 0 a NaN
                    quotient[k] = special[1] if not num[k] & (sign - 1) else \
                        special[0] | ((num[k] ^ den[k]) & sign)
            old = lanes(width=width)
            stride = width // 32
            lanes_.put(10, quotient, width), lanes_.put(10 + stride, den, width)
            lanes_.put(10 + 2 * stride, num, width), lanes_.put(20, old, width)
            run(lanes_.w)
            lanes_.expect_row(20, quotient, old, width, nan_part=width)
    if width == 32:
        return ("v_div_fixup_f32 v20, v10, v11, v12",), check
    return ("v_div_fixup_f64 v[20:21], v[10:11], v[12:13], v[14:15]",), check


BITOP3_TABLES = (0x96, 0xE8, 0x01, 0x80, 0x5A, 0x3C)


def bitop3_case(width: int):
    lines = tuple(f"v_bitop3_b{width} v20, v10, v11, v12 bitop3:0x{t:x}" for t in BITOP3_TABLES)

    def check(runs):
        for run, table in zip(runs, BITOP3_TABLES):
            for lanes_ in rounds():
                a, b, c, old = lanes(), lanes(), lanes(), lanes()
                for row, values in ((10, a), (11, b), (12, c), (20, old)):
                    lanes_.put(row, values)
                run(lanes_.w)
                want = [sum((table >> ((a[k] >> i & 1) << 2 | (b[k] >> i & 1) << 1 | c[k] >> i & 1) & 1) << i
                            for i in range(width)) for k in LANE_BITS]
                got = [x & ((1 << width) - 1) for x in lanes_.get(20)]  # b16: the low half (our reading)
                assert got == [w if lanes_.active(k) else old[k] & ((1 << width) - 1)
                               for k, w in enumerate(want)], hex(table)
    return lines, check


def check_swap(run):
    for lanes_ in rounds():
        x, y = lanes(), lanes()
        lanes_.put(20, x), lanes_.put(21, y)
        run(lanes_.w)
        lanes_.expect_row(20, y, x)
        lanes_.expect_row(21, x, y)


def check_nop(run):
    lanes_ = rounds()[1]
    lanes_.put(20, lanes())
    before_v, before_s = lanes_.w.v.copy(), list(lanes_.w.s)
    run(lanes_.w)
    assert np.array_equal(lanes_.w.v, before_v) and lanes_.w.s == before_s


FP8_DTYPES = {"fp8": torch.float8_e4m3fn, "bf8": torch.float8_e5m2}
FP8_MAX = {"fp8": 448.0, "bf8": 57344.0}


def fp8_code(x: float, kind: str) -> int:
    return torch.tensor([x], dtype=torch.float32).to(FP8_DTYPES[kind]).view(torch.uint8).item()


def in_range_f32s(kind: str) -> list[int]:
    """Finite values the format holds without overflow (overflow itself: test_valu, our reading),
    with signed zeros, tiny values, the largest finite and exact midpoints between codes."""
    top = FP8_MAX[kind]
    edges = [0.0, -0.0, top, -top, 1.0, 1.0625 if kind == "fp8" else 1.125, 2.0 ** -9, -(2.0 ** -17), 0.3]
    picked = edges + [RANDOM.uniform(-top, top) * RANDOM.choice((1, 1e-2, 1e-4)) for _ in range(64 - len(edges))]
    return [f32_bits(x) for x in picked]


def pack_case(kind: str):
    lines = (f"v_cvt_pk_{kind}_f32 v20, v10, v11", f"v_cvt_pk_{kind}_f32 v20, v10, v11 op_sel:[0,0,1]")

    def check(runs):
        for run, high in zip(runs, (False, True)):
            for lanes_ in rounds():
                a, b, old = in_range_f32s(kind), in_range_f32s(kind), lanes()
                lanes_.put(10, a), lanes_.put(11, b), lanes_.put(20, old)
                run(lanes_.w)
                pair = [fp8_code(f32_of(a[k]), kind) | fp8_code(f32_of(b[k]), kind) << 8 for k in LANE_BITS]
                want = [old[k] & 0xFFFF | pair[k] << 16 if high else old[k] & 0xFFFF0000 | pair[k]
                        for k in LANE_BITS]
                lanes_.expect_row(20, want, old)
    return lines, check


def decode_case(kind: str, packed: bool):
    # aiter's MLA code objects name both words of the packed form
    selects = ("WORD_0", "WORD_1") if packed else ("BYTE_1", "BYTE_2", "BYTE_3")
    stem = f"v_cvt_{'pk_f32' if packed else 'f32'}_{kind}"
    destination = "v[20:21]" if packed else "v20"
    lines = (f"{stem}_e32 {destination}, v10",) + tuple(
        f"{stem}_sdwa {destination}, v10 src0_sel:{select}" for select in selects)
    first_bytes = (0, 0, 2) if packed else (0, 1, 2, 3)

    def check(runs):
        for run, first in zip(runs, first_bytes):
            for lanes_ in rounds():
                words, old = lanes(), lanes(width=64)
                words[:4] = [0x7F7F7F7F, 0x80808080, 0xFFFFFFFF, 0x01010101]
                lanes_.put(10, words), lanes_.put(20, old, 64)
                run(lanes_.w)
                decode = lambda code: f32_bits(torch.tensor([code], dtype=torch.uint8)
                                               .view(FP8_DTYPES[kind]).float().item())
                codes = [[w >> 8 * (first + k) & 0xFF for k in range(2 if packed else 1)] for w in words]
                want = [decode(c[0]) | (decode(c[1]) << 32 if packed else 0) for c in codes]
                if packed:
                    lanes_.expect_row(20, want, old, 64, nan_part=32)
                else:
                    lanes_.expect_row(20, want, [o & M32 for o in old], nan_part=32)
    return lines, check


CASES = {
    "cndmask_b32": (("v_cndmask_b32_e32 v20, v10, v11, vcc",), check_cndmask),
    "add_co_u32": carry_case("add", False), "addc_co_u32": carry_case("add", True),
    "sub_co_u32": carry_case("sub", False), "subb_co_u32": carry_case("sub", True),
    "subrev_co_u32": carry_case("subrev", False), "subbrev_co_u32": carry_case("subrev", True),
    "mad_u64_u32": mad_case(False), "mad_i64_i32": mad_case(True),
    "readlane_b32": (("v_readlane_b32 s30, v10, s31",), check_readlane),
    "readfirstlane_b32": (("v_readfirstlane_b32 s30, v10",), check_readfirstlane),
    "writelane_b32": (("v_writelane_b32 v20, s30, m0",), check_writelane),
    "mbcnt_lo_u32_b32": mbcnt_case(False), "mbcnt_hi_u32_b32": mbcnt_case(True),
    "div_scale_f32": div_scale_case(32), "div_scale_f64": div_scale_case(64),
    "div_fmas_f32": (("v_div_fmas_f32 v20, v10, v11, v12",), check_div_fmas),
    "div_fixup_f32": div_fixup_case(32), "div_fixup_f64": div_fixup_case(64),
    "bitop3_b32": bitop3_case(32), "bitop3_b16": bitop3_case(16),
    "swap_b32": (("v_swap_b32 v20, v21",), check_swap), "nop": (("v_nop",), check_nop),
    "cvt_pk_fp8_f32": pack_case("fp8"), "cvt_pk_bf8_f32": pack_case("bf8"),
    "cvt_f32_fp8": decode_case("fp8", False), "cvt_f32_bf8": decode_case("bf8", False),
    "cvt_pk_f32_fp8": decode_case("fp8", True), "cvt_pk_f32_bf8": decode_case("bf8", True),
}
LINES = tuple(line for lines, _ in CASES.values() for line in lines)
SEVERAL = {"bitop3_b32", "bitop3_b16", "cvt_pk_fp8_f32", "cvt_pk_bf8_f32", "cvt_f32_fp8", "cvt_f32_bf8",
           "cvt_pk_f32_fp8", "cvt_pk_f32_bf8"}  # checkers that take one executor per line


def test_every_form_has_an_oracle_and_no_more():
    assert set(CASES) == set(valu_forms.FORMS)


@pytest.mark.parametrize("name", sorted(valu_forms.FORMS))
def test_form(name):
    lines, check = CASES[name]
    runs = [executor_of(LINES, line) for line in lines]
    check(runs if name in SEVERAL else runs[0])
