"""Every SALU table entry (salu.SOP2, SOP1, SOPC, SAVEEXEC, SOPK) against an oracle in plain Python
ints written from AMD's CDNA pseudocode (the ISA guide's per-opcode text), on edge and random inputs:
the destination, SCC (or SCC kept), EXEC for saveexec, and every other SGPR untouched. Each entry is
decoded from one assembled kernel and built by the real dispatch. A table entry without an oracle
here fails; so does an oracle without an entry."""
import operator
import random

import pytest

from harness.emulator import salu
from harness.emulator.wave import EXEC

from .decoded import bare_wave, executor_of

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
A, B, D = 10, 12, 20  # SGPRs of the sources and the destination
RANDOM = random.Random(37)
BASE_SGPRS = [RANDOM.getrandbits(32) for _ in range(128)]


def i32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x & (1 << 31) else x


def i64(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x & (1 << 63) else x


def fits_i32(x: int) -> bool:
    return -(1 << 31) <= x < (1 << 31)


def signext_from(x: int, bits: int) -> int:
    """x's low `bits` bits as a signed number (AMD's signext_from_bit)."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if bits and x >> (bits - 1) & 1 else x


def field(value_signed: int, control: int, width: int, is_signed: bool) -> int:
    """s_bfe: (S0 >> offset) & mask, S0 shifted as its type (arithmetic for i32/i64)."""
    offset, size = control & (width - 1), control >> 16 & 0x7F
    taken = (value_signed >> offset) & ((1 << size) - 1)
    if is_signed and size < width:
        taken = signext_from(taken, size)
    return taken & (M32 if width == 32 else M64)


def scc_of(d: int):
    return d, int(d != 0)


# name -> (operand form, fn(a, b, scc) -> (d, scc or None for kept)); a/b read at the form's widths
SOP2 = {
    "add_u32": ("32", lambda a, b, c: (a + b & M32, int(a + b > M32))),
    "sub_u32": ("32", lambda a, b, c: (a - b & M32, int(b > a))),
    "addc_u32": ("32", lambda a, b, c: (a + b + c & M32, int(a + b + c > M32))),
    "subb_u32": ("32", lambda a, b, c: (a - b - c & M32, int(b + c > a))),
    "add_i32": ("32", lambda a, b, c: (a + b & M32, int(not fits_i32(i32(a) + i32(b))))),
    "sub_i32": ("32", lambda a, b, c: (a - b & M32, int(not fits_i32(i32(a) - i32(b))))),
    "mul_i32": ("32", lambda a, b, c: (i32(a) * i32(b) & M32, None)),
    "mul_hi_u32": ("32", lambda a, b, c: (a * b >> 32, None)),
    "mul_hi_i32": ("32", lambda a, b, c: (i32(a) * i32(b) >> 32 & M32, None)),
    "min_i32": ("32", lambda a, b, c: (a if i32(a) < i32(b) else b, int(i32(a) < i32(b)))),
    "min_u32": ("32", lambda a, b, c: (min(a, b), int(a < b))),
    "max_i32": ("32", lambda a, b, c: (a if i32(a) >= i32(b) else b, int(i32(a) >= i32(b)))),
    "max_u32": ("32", lambda a, b, c: (max(a, b), int(a >= b))),
    "cselect_b32": ("32", lambda a, b, c: (a if c else b, None)),
    "cselect_b64": ("64", lambda a, b, c: (a if c else b, None)),
    "lshl_b32": ("32", lambda a, b, c: scc_of(a << b % 32 & M32)),
    "lshl_b64": ("64_32", lambda a, b, c: scc_of(a << b % 64 & M64)),
    "lshr_b32": ("32", lambda a, b, c: scc_of(a >> b % 32)),
    "lshr_b64": ("64_32", lambda a, b, c: scc_of(a >> b % 64)),
    "ashr_i32": ("32", lambda a, b, c: scc_of(i32(a) >> b % 32 & M32)),
    "ashr_i64": ("64_32", lambda a, b, c: scc_of(i64(a) >> b % 64 & M64)),
    "bfm_b32": ("32", lambda a, b, c: ((2 ** (a % 32) - 1) * 2 ** (b % 32) & M32, None)),
    "bfm_b64": ("32_to_64", lambda a, b, c: ((2 ** (a % 64) - 1) * 2 ** (b % 64) & M64, None)),
    "bfe_u32": ("32", lambda a, b, c: scc_of(field(a, b, 32, False))),
    "bfe_i32": ("32", lambda a, b, c: scc_of(field(i32(a), b, 32, True))),
    "bfe_u64": ("64_32", lambda a, b, c: scc_of(field(a, b, 64, False))),
    "bfe_i64": ("64_32", lambda a, b, c: scc_of(field(i64(a), b, 64, True))),
    "absdiff_i32": ("32", lambda a, b, c: scc_of(abs(i32(i32(a) - i32(b))) & M32)),
    "pack_ll_b32_b16": ("32", lambda a, b, c: ((b & 0xFFFF) << 16 | a & 0xFFFF, None)),
    "pack_lh_b32_b16": ("32", lambda a, b, c: ((b >> 16) << 16 | a & 0xFFFF, None)),
    "pack_hh_b32_b16": ("32", lambda a, b, c: ((b >> 16) << 16 | a >> 16, None)),
}
for n in (1, 2, 3, 4):
    SOP2[f"lshl{n}_add_u32"] = ("32", lambda a, b, c, n=n: (a * 2 ** n + b & M32, int(a * 2 ** n + b > M32)))
BITWISE = {"and": operator.and_, "or": operator.or_, "xor": operator.xor,
           "andn2": lambda a, b: a & ~b, "orn2": lambda a, b: a | ~b, "nand": lambda a, b: ~(a & b),
           "nor": lambda a, b: ~(a | b), "xnor": lambda a, b: ~(a ^ b)}
for op, fn in BITWISE.items():
    SOP2[f"{op}_b32"] = ("32", lambda a, b, c, fn=fn: scc_of(fn(a, b) & M32))
    SOP2[f"{op}_b64"] = ("64", lambda a, b, c, fn=fn: scc_of(fn(a, b) & M64))


def first_set(x: int) -> int:
    return next((k for k in range(x.bit_length()) if x >> k & 1), M32)


def leading_zeros(x: int, width: int) -> int:
    return next((k for k in range(width) if x >> (width - 1 - k) & 1), M32)


# name -> (operand form, fn(a, scc, old d) -> (d, scc or None))
SOP1 = {
    "mov_b32": ("32", lambda a, c, d: (a, None)), "mov_b64": ("64", lambda a, c, d: (a, None)),
    "cmov_b32": ("32", lambda a, c, d: (a if c else d, None)),
    "cmov_b64": ("64", lambda a, c, d: (a if c else d, None)),
    "not_b32": ("32", lambda a, c, d: scc_of(a ^ M32)), "not_b64": ("64", lambda a, c, d: scc_of(a ^ M64)),
    "brev_b32": ("32", lambda a, c, d: (sum((a >> k & 1) << (31 - k) for k in range(32)), None)),
    "brev_b64": ("64", lambda a, c, d: (sum((a >> k & 1) << (63 - k) for k in range(64)), None)),
    "bcnt1_i32_b32": ("32", lambda a, c, d: scc_of(f"{a:b}".count("1"))),
    "bcnt1_i32_b64": ("64_to_32", lambda a, c, d: scc_of(f"{a:b}".count("1"))),
    "bcnt0_i32_b32": ("32", lambda a, c, d: scc_of(f"{a:032b}".count("0"))),
    "ff1_i32_b32": ("32", lambda a, c, d: (first_set(a), None)),
    "ff1_i32_b64": ("64_to_32", lambda a, c, d: (first_set(a), None)),
    "flbit_i32_b32": ("32", lambda a, c, d: (leading_zeros(a, 32), None)),
    "flbit_i32_b64": ("64_to_32", lambda a, c, d: (leading_zeros(a, 64), None)),
    "sext_i32_i8": ("32", lambda a, c, d: (signext_from(a, 8) & M32, None)),
    "sext_i32_i16": ("32", lambda a, c, d: (signext_from(a, 16) & M32, None)),
    "abs_i32": ("32", lambda a, c, d: scc_of(abs(i32(a)) & M32)),
    "bitset0_b32": ("32", lambda a, c, d: (d & ~(1 << a % 32) & M32, None)),
    "bitset1_b32": ("32", lambda a, c, d: (d | 1 << a % 32, None)),
}
COMPARISONS = {"eq": operator.eq, "lg": operator.ne, "gt": operator.gt, "ge": operator.ge,
               "lt": operator.lt, "le": operator.le}
# EXEC = fn(S0, EXEC)
SAVEEXEC = {"and": lambda s, e: s & e, "or": lambda s, e: s | e, "xor": lambda s, e: s ^ e,
            "andn2": lambda s, e: s & ~e, "orn2": lambda s, e: s | ~e, "nand": lambda s, e: ~(s & e),
            "nor": lambda s, e: ~(s | e), "xnor": lambda s, e: ~(s ^ e), "andn1": lambda s, e: ~s & e,
            "orn1": lambda s, e: ~s | e}
SOPK_IMMEDIATES = (0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x1234, 0xFEDC)
# name -> fn(old d, signed 16-bit immediate, scc) -> (d, scc or None)
SOPK = {
    "movk_i32": lambda d, k, c: (k & M32, None),
    "cmovk_i32": lambda d, k, c: (k & M32 if c else d, None),
    "addk_i32": lambda d, k, c: (d + k & M32, int(not fits_i32(i32(d) + k))),
    "mulk_i32": lambda d, k, c: (i32(d) * k & M32, None),
}
FORMS = {"32": ("s20", "s10", "s12"), "64": ("s[20:21]", "s[10:11]", "s[12:13]"),
         "64_32": ("s[20:21]", "s[10:11]", "s12"), "32_to_64": ("s[20:21]", "s10", "s12"),
         "64_to_32": ("s20", "s[10:11]", None)}
WIDTHS = {"32": (32, 32, 32), "64": (64, 64, 64), "64_32": (64, 64, 32), "32_to_64": (64, 32, 32),
          "64_to_32": (32, 64, None)}


def sop2_line(name):
    return f"s_{name} " + ", ".join(FORMS[SOP2[name][0]])


def sop1_line(name):
    return f"s_{name} " + ", ".join(FORMS[SOP1[name][0]][:2])


def compare_mnemonics():
    for test in salu.SOPC:
        yield from (f"cmp_{test}_i32", f"cmp_{test}_u32")
    yield from ("cmp_eq_u64", "cmp_lg_u64", "bitcmp0_b32", "bitcmp1_b32", "bitcmp0_b64", "bitcmp1_b64")


def compare_line(name):
    wide = name.endswith("64")
    return f"s_{name} " + ("s[10:11], s12" if name.startswith("bitcmp") and wide
                           else "s[10:11], s[12:13]" if wide else "s10, s12")


def sopk_names():
    for test in salu.SOPC:
        yield from (f"cmpk_{test}_i32", f"cmpk_{test}_u32")
    yield from salu.SOPK


def sopk_lines(name):
    register = "s10" if name.startswith("cmpk_") else "s20"
    return [f"s_{name} {register}, 0x{k:x}" for k in SOPK_IMMEDIATES]


LINES = tuple([*map(sop2_line, salu.SOP2), *map(sop1_line, salu.SOP1), *map(compare_line, compare_mnemonics()),
               *(f"s_{op}_saveexec_b64 s[20:21], s[10:11]" for op in salu.SAVEEXEC),
               *(line for name in sopk_names() for line in sopk_lines(name))])


def edges(width: int) -> list[int]:
    top = 1 << (width - 1)
    base = [0, 1, 2, 31, 32, 33, 63, 64, 0x7F, 0x8000, 0xFFFF, top - 1, top, top + 1, (1 << width) - 1,
            (1 << width) - 2, 0x00080004, 0x0020001F, 0x001F0001, 0x00200000, 0x0040003F, 0x007F0010]
    return base + [RANDOM.getrandbits(width) for _ in range(12)]


def vectors(count_random: int = 120):
    """(A, B, scc): 64-bit register pairs; edge values in both halves, then random ones."""
    wide = edges(64) + [x | x << 32 for x in edges(32)[:16]]
    pairs = [(a, b) for a in wide[::2] for b in wide[1::3]] + [(a, a) for a in wide]
    pairs += [(RANDOM.getrandbits(64), RANDOM.getrandbits(64)) for _ in range(count_random)]
    return [(a, b, k % 2) for k, (a, b) in enumerate(pairs)]


VECTORS = vectors()


WAVE = bare_wave()  # one wave, its SGPRs and SCC set afresh per vector (VGPRs are never touched)


def wave_with(a: int, b: int, scc: int, exec_bits: int | None = None):
    w = WAVE
    w.s = list(BASE_SGPRS)
    w.exec_bits = (1 << 64) - 1
    w.s[A], w.s[A + 1], w.s[B], w.s[B + 1] = a & M32, a >> 32, b & M32, b >> 32
    w.scc = scc
    if exec_bits is not None:
        w.exec_bits = exec_bits
    return w, list(w.s)


def expect_written(before, width, value):
    after = list(before)
    after[D] = value & M32
    if width == 64:
        after[D + 1] = value >> 32
    return after


def check(run, w, expected_sgprs, expected_scc, label):
    run(w)
    wrong = {f"s{k}": (hex(got), hex(want)) for k, (got, want) in enumerate(zip(w.s, expected_sgprs))
             if got != want}
    assert (wrong, w.scc) == ({}, expected_scc), label


def test_every_table_entry_has_an_oracle_and_no_more():
    assert set(SOP2) == set(salu.SOP2) and set(SOP1) == set(salu.SOP1)
    assert set(COMPARISONS) == set(salu.SOPC) and set(SAVEEXEC) == set(salu.SAVEEXEC)
    assert set(SOPK) == set(salu.SOPK)
    assert len(LINES) > 100


@pytest.mark.parametrize("name", sorted(salu.SOP2))
def test_sop2(name):
    form, oracle = SOP2[name]
    d_width, a_width, b_width = WIDTHS[form]
    run = executor_of(LINES, sop2_line(name))
    for a, b, scc in VECTORS:
        w, before = wave_with(a, b, scc)
        d, new_scc = oracle(a & ((1 << a_width) - 1), b & ((1 << b_width) - 1), scc)
        check(run, w, expect_written(before, d_width, d), scc if new_scc is None else new_scc,
              (hex(a), hex(b), scc))


@pytest.mark.parametrize("name", sorted(salu.SOP1))
def test_sop1(name):
    form, oracle = SOP1[name]
    d_width, a_width, _ = WIDTHS[form]
    run = executor_of(LINES, sop1_line(name))
    for a, b, scc in VECTORS[::2]:
        w, before = wave_with(a, b, scc)
        old = before[D] | (before[D + 1] << 32 if d_width == 64 else 0)
        d, new_scc = oracle(a & ((1 << a_width) - 1), scc, old)
        check(run, w, expect_written(before, d_width, d), scc if new_scc is None else new_scc, (hex(a), scc))


@pytest.mark.parametrize("name", list(compare_mnemonics()))
def test_sopc(name):
    run = executor_of(LINES, compare_line(name))
    kind, wide = name.split("_")[-1], name.endswith("64")
    for a, b, scc in VECTORS[::2]:
        w, before = wave_with(a, b, scc)
        if name.startswith("bitcmp"):
            bit = (a if wide else a & M32) >> (b % (64 if wide else 32)) & 1
            expected = int(bit == int(name[6]))
        else:
            read = (lambda x: x & M64) if wide else i32 if kind == "i32" else (lambda x: x & M32)
            expected = int(COMPARISONS[name.split("_")[1]](read(a), read(b)))
        check(run, w, before, expected, (hex(a), hex(b)))


@pytest.mark.parametrize("op", sorted(salu.SAVEEXEC))
def test_saveexec(op):
    run = executor_of(LINES, f"s_{op}_saveexec_b64 s[20:21], s[10:11]")
    for a, b, scc in VECTORS[::2]:
        w, before = wave_with(a, 0, scc, exec_bits=b)
        new_exec = SAVEEXEC[op](a, b) & M64
        expected = expect_written(before, 64, b)
        expected[EXEC], expected[EXEC + 1] = new_exec & M32, new_exec >> 32
        check(run, w, expected, int(new_exec != 0), (hex(a), hex(b)))


@pytest.mark.parametrize("name", list(sopk_names()))
def test_sopk(name):
    for line, immediate in zip(sopk_lines(name), SOPK_IMMEDIATES):
        run = executor_of(LINES, line)
        for a, b, scc in VECTORS[::4]:
            w, before = wave_with(a, b, scc)
            before_d = before[D]
            if name.startswith("cmpk_"):
                test, kind = name.split("_")[1:]
                value = signext_from(immediate, 16) if kind == "i32" else immediate
                read = i32 if kind == "i32" else (lambda x: x & M32)
                check(run, w, before, int(COMPARISONS[test](read(a), value)), (line, hex(a)))
                continue
            d, new_scc = SOPK[name](before_d, signext_from(immediate, 16), scc)
            check(run, w, expect_written(before, 32, d), scc if new_scc is None else new_scc, (line, hex(before_d)))
