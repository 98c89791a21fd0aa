"""Scalar ALU: SOP1, SOP2, SOPC, SOPK on Python ints (SCC as the ISA guide defines it per opcode)."""
from .errors import NotEmulated
from .operands import parse, scalar_reader, scalar_writer

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def signed(x: int, width: int = 32) -> int:
    return x - (1 << width) if x >> (width - 1) & 1 else x


def bfe(value: int, control: int, width: int, is_signed: bool) -> int:
    """AMD's pseudocode: (S0 >> offset) & mask, S0 shifted as its type (arithmetic for
    bfe_i32/_i64, so a field past the top takes sign bits), then signext_from_bit(size)."""
    offset, size = control & (width - 1), control >> 16 & 0x7F
    if size == 0:
        return 0
    if is_signed:
        value = signed(value, width)
    field = value >> offset & ((1 << size) - 1)
    if is_signed and size < width and field >> (size - 1) & 1:
        field -= 1 << size
    return field & (M64 if width == 64 else M32)


def nonzero(result: int):
    return result, int(result != 0)


# name -> (width, fn(a, b, scc) -> (result, scc or None))
SOP2 = {
    "add_u32": (32, lambda a, b, c: (a + b & M32, int(a + b > M32))),
    "sub_u32": (32, lambda a, b, c: (a - b & M32, int(b > a))),
    "addc_u32": (32, lambda a, b, c: (a + b + c & M32, int(a + b + c > M32))),
    "subb_u32": (32, lambda a, b, c: (a - b - c & M32, int(b + c > a))),
    "add_i32": (32, lambda a, b, c: (a + b & M32, int(not -2**31 <= signed(a) + signed(b) < 2**31))),
    "sub_i32": (32, lambda a, b, c: (a - b & M32, int(not -2**31 <= signed(a) - signed(b) < 2**31))),
    "mul_i32": (32, lambda a, b, c: (signed(a) * signed(b) & M32, None)),
    "mul_hi_u32": (32, lambda a, b, c: (a * b >> 32, None)),
    "mul_hi_i32": (32, lambda a, b, c: (signed(a) * signed(b) >> 32 & M32, None)),
    "min_i32": (32, lambda a, b, c: (a, 1) if signed(a) < signed(b) else (b, 0)),
    "max_i32": (32, lambda a, b, c: (a, 1) if signed(a) >= signed(b) else (b, 0)),  # SCC = S0 >= S1
    "min_u32": (32, lambda a, b, c: (a, 1) if a < b else (b, 0)),
    "max_u32": (32, lambda a, b, c: (a, 1) if a >= b else (b, 0)),
    "cselect_b32": (32, lambda a, b, c: (a if c else b, None)),
    "cselect_b64": (64, lambda a, b, c: (a if c else b, None)),
    "lshl_b32": (32, lambda a, b, c: nonzero(a << (b & 31) & M32)),
    "lshl_b64": (64, lambda a, b, c: nonzero(a << (b & 63) & M64)),
    "lshr_b32": (32, lambda a, b, c: nonzero(a >> (b & 31))),
    "lshr_b64": (64, lambda a, b, c: nonzero(a >> (b & 63))),
    "ashr_i32": (32, lambda a, b, c: nonzero(signed(a) >> (b & 31) & M32)),
    "ashr_i64": (64, lambda a, b, c: nonzero(signed(a, 64) >> (b & 63) & M64)),
    "bfm_b32": (32, lambda a, b, c: (((1 << (a & 31)) - 1) << (b & 31) & M32, None)),
    "bfm_b64": (64, lambda a, b, c: (((1 << (a & 63)) - 1) << (b & 63) & M64, None)),
    "bfe_u32": (32, lambda a, b, c: nonzero(bfe(a, b, 32, False))),
    "bfe_i32": (32, lambda a, b, c: nonzero(bfe(a, b, 32, True))),
    "bfe_u64": (64, lambda a, b, c: nonzero(bfe(a, b, 64, False))),
    "bfe_i64": (64, lambda a, b, c: nonzero(bfe(a, b, 64, True))),
    # the difference wraps to 32 bits before its sign is taken
    "absdiff_i32": (32, lambda a, b, c: nonzero(abs(signed(a - b & M32)) & M32)),
    "pack_ll_b32_b16": (32, lambda a, b, c: (a & 0xFFFF | (b & 0xFFFF) << 16, None)),
    "pack_lh_b32_b16": (32, lambda a, b, c: (a & 0xFFFF | b & 0xFFFF0000, None)),
    "pack_hh_b32_b16": (32, lambda a, b, c: (a >> 16 | b & 0xFFFF0000, None)),
}
for shift in (1, 2, 3, 4):
    SOP2[f"lshl{shift}_add_u32"] = (32, lambda a, b, c, s=shift: (
        (a << s) + b & M32, int((a << s) + b > M32)))
for width, mask in ((32, M32), (64, M64)):
    for name, op in (("and", lambda a, b: a & b), ("or", lambda a, b: a | b), ("xor", lambda a, b: a ^ b),
                     ("andn2", lambda a, b: a & ~b), ("orn2", lambda a, b: a | ~b),
                     ("nand", lambda a, b: ~(a & b)), ("nor", lambda a, b: ~(a | b)),
                     ("xnor", lambda a, b: ~(a ^ b))):
        SOP2[f"{name}_b{width}"] = (width, lambda a, b, c, op=op, m=mask: nonzero(op(a, b) & m))


def popcount(x: int) -> int:
    return bin(x).count("1")


def first_one(x: int, width: int) -> int:
    return (x & -x).bit_length() - 1 if x else M32


def leading(x: int, width: int) -> int:
    return width - x.bit_length() if x else M32


SOP1 = {
    "mov_b32": (32, lambda a, c: (a, None)), "mov_b64": (64, lambda a, c: (a, None)),
    "cmov_b32": (32, None), "cmov_b64": (64, None),
    "not_b32": (32, lambda a, c: nonzero(~a & M32)), "not_b64": (64, lambda a, c: nonzero(~a & M64)),
    "brev_b32": (32, lambda a, c: (int(f"{a:032b}"[::-1], 2), None)),
    "brev_b64": (64, lambda a, c: (int(f"{a:064b}"[::-1], 2), None)),
    "bcnt1_i32_b32": (32, lambda a, c: nonzero(popcount(a))),
    "bcnt1_i32_b64": (64, lambda a, c: nonzero(popcount(a))),
    "bcnt0_i32_b32": (32, lambda a, c: nonzero(32 - popcount(a))),
    "ff1_i32_b32": (32, lambda a, c: (first_one(a, 32), None)),
    "ff1_i32_b64": (64, lambda a, c: (first_one(a, 64), None)),
    "flbit_i32_b32": (32, lambda a, c: (leading(a, 32), None)),
    "flbit_i32_b64": (64, lambda a, c: (leading(a, 64), None)),
    "sext_i32_i8": (32, lambda a, c: (signed(a & 0xFF, 8) & M32, None)),
    "sext_i32_i16": (32, lambda a, c: (signed(a & 0xFFFF, 16) & M32, None)),
    "abs_i32": (32, lambda a, c: nonzero(abs(signed(a)) & M32)),
    "bitset0_b32": (32, "bitset0"), "bitset1_b32": (32, "bitset1"),
}
SOPC = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}
SAVEEXEC = {"and": lambda e, s: s & e, "or": lambda e, s: s | e, "xor": lambda e, s: s ^ e,
            "andn2": lambda e, s: s & ~e & M64, "orn2": lambda e, s: (s | ~e) & M64,
            "nand": lambda e, s: ~(s & e) & M64, "nor": lambda e, s: ~(s | e) & M64,
            "xnor": lambda e, s: ~(s ^ e) & M64, "andn1": lambda e, s: ~s & e & M64,
            "orn1": lambda e, s: (~s | e) & M64}


SOPK = ("movk_i32", "cmovk_i32", "addk_i32", "mulk_i32")  # and s_cmpk_<SOPC test>_<type>
SAVEEXEC_SUFFIX = "_saveexec_b64"


def compare_known(name: str, prefix: str) -> bool:
    """s_cmp_<test>_<type> / s_cmpk_<test>_<type> with a test of SOPC."""
    parts = name.split("_")
    return len(parts) == 3 and parts[0] == prefix and parts[1] in SOPC


def knows(name: str) -> bool:
    """The SALU opcodes of these tables (the name after 's_')."""
    return (name in SOP2 or name in SOP1 or name in SOPK
            or name.removesuffix(SAVEEXEC_SUFFIX) in SAVEEXEC and name.endswith(SAVEEXEC_SUFFIX)
            or name.startswith(("bitcmp0_", "bitcmp1_"))
            or compare_known(name, "cmp") or compare_known(name, "cmpk"))


def operands_of(ins):
    return [parse(text) for text in ins.operands]


def sop2(ins, name):
    width, fn = SOP2[name]
    ops = operands_of(ins)
    a_width = 32 if name.startswith("bfm_") else width
    b_width = 32 if name.startswith(("lshl_", "lshr_", "ashr_", "bfe_", "bfm_")) else width
    a, b = scalar_reader(ops[1], a_width), scalar_reader(ops[2], b_width)
    write = scalar_writer(ops[0], width)

    def run(w):
        result, scc = fn(a(w), b(w), w.scc)
        write(w, result)
        if scc is not None:
            w.scc = scc
    return run


def sop1(ins, name):
    if name.endswith(SAVEEXEC_SUFFIX):
        return saveexec(ins, name)
    width, fn = SOP1[name]
    ops = operands_of(ins)
    # the destination's own width: s_bcnt1_i32_b64 and friends write one SGPR
    a, write = scalar_reader(ops[1], width), scalar_writer(ops[0], 32 * ops[0].count)
    if fn is None:
        return lambda w: write(w, a(w)) if w.scc else None
    if isinstance(fn, str):
        read_old = scalar_reader(ops[0], 32)
        if fn == "bitset1":
            return lambda w: write(w, read_old(w) | 1 << (a(w) & 31))
        return lambda w: write(w, read_old(w) & ~(1 << (a(w) & 31)) & M32)

    def run(w):
        result, scc = fn(a(w), w.scc)
        write(w, result)
        if scc is not None:
            w.scc = scc
    return run


def saveexec(ins, name):
    """s_<op>_saveexec_b64: D = EXEC; EXEC = op(S0, EXEC); SCC = EXEC != 0."""
    fn = SAVEEXEC[name.removesuffix(SAVEEXEC_SUFFIX)]
    ops = operands_of(ins)
    a, write = scalar_reader(ops[1], 64), scalar_writer(ops[0], 64)

    def run(w):
        source, old = a(w), w.exec_bits
        write(w, old)
        w.exec_bits = fn(old, source)
        w.scc = int(w.exec_bits != 0)
    return run


def sopc(ins, name):
    """s_cmp_<test>_<type> and s_bitcmp0/1_b32/b64."""
    ops = operands_of(ins)
    parts = name.split("_")
    if parts[0] in ("bitcmp0", "bitcmp1"):
        width = int(parts[1][1:])
        a, b = scalar_reader(ops[0], width), scalar_reader(ops[1], 32)
        want = int(parts[0][-1])

        def bitcmp(w):
            w.scc = int((a(w) >> (b(w) & (width - 1)) & 1) == want)
        return bitcmp
    test, kind = SOPC[parts[1]], parts[2]
    width = 64 if kind.endswith("64") else 32
    a, b = scalar_reader(ops[0], width), scalar_reader(ops[1], width)
    if kind.startswith("i"):
        def compare_signed(w):
            w.scc = int(test(signed(a(w), width), signed(b(w), width)))
        return compare_signed

    def compare(w):
        w.scc = int(test(a(w), b(w)))
    return compare


def sopk(ins, name):
    """s_movk_i32, s_cmovk_i32, s_addk_i32, s_mulk_i32, s_cmpk_*: a 16-bit immediate."""
    ops = operands_of(ins)
    immediate = int(ins.operands[1], 0)
    test = name.split("_")
    if name.startswith("cmpk_"):
        kind = test[2]
        read = scalar_reader(ops[0])
        value = signed(immediate & 0xFFFF, 16) if kind.startswith("i") else immediate & 0xFFFF
        compare = SOPC[test[1]]
        if kind.startswith("i"):
            return lambda w: setattr(w, "scc", int(compare(signed(read(w)), value)))
        return lambda w: setattr(w, "scc", int(compare(read(w), value)))
    value = signed(immediate & 0xFFFF, 16) & M32
    write = scalar_writer(ops[0])
    if name == "movk_i32":
        return lambda w: write(w, value)
    if name == "cmovk_i32":
        return lambda w: write(w, value) if w.scc else None
    read = scalar_reader(ops[0])
    if name == "addk_i32":
        def addk(w):
            a = read(w)
            total = signed(a) + signed(value)
            w.scc = int(not -2**31 <= total < 2**31)
            write(w, total & M32)
        return addk
    if name == "mulk_i32":
        return lambda w: write(w, signed(read(w)) * signed(value) & M32)
    raise NotEmulated("s_" + name)


def build(ins, name):
    if name in SOP2:
        return sop2(ins, name)
    if name in SOP1 or name.endswith(SAVEEXEC_SUFFIX):
        return sop1(ins, name)
    if name.startswith(("cmp_", "bitcmp")):
        return sopc(ins, name)
    if name in SOPK or name.startswith("cmpk_"):
        return sopk(ins, name)
    raise NotEmulated(ins.mnemonic)
