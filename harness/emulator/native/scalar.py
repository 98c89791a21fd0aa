"""C for the scalar instructions: SALU (SOP1/SOP2/SOPC/SOPK), program control and s_load.
Each translator returns C statements or None (the numpy executor runs that one instead).
Semantics follow salu.py, sopp.py and smem.py line by line; the differential test holds them."""
from ..errors import NotEmulated
from ..operands import constant_bits, parse
from .. import sopp

M32 = 0xFFFFFFFF


class Skip(Exception):
    """An operand form or opcode the C path leaves to its numpy executor."""


def operand(text: str):
    try:
        return parse(text)
    except NotEmulated:
        raise Skip(text) from None


def sread(text: str, width: int = 32) -> str:
    """A scalar source as a C expression (uint32_t, or uint64_t for width 64)."""
    op = operand(text)
    if op.kind == "const":
        if op.value is None:
            raise Skip(text)
        bits = constant_bits(op, width, False)
        return f"((uint64_t){bits}ull)" if width == 64 else f"((uint32_t){bits}u)"
    if op.kind == "s" and not (op.neg or op.abs):
        return f"S64({op.index})" if width == 64 else f"S[{op.index}]"
    if op.kind == "scc":
        return "((uint32_t)scc)"
    if op.kind == "null":
        return "0u"
    raise Skip(text)


def swrite(text: str, value: str, width: int = 32) -> str:
    op = operand(text)
    if op.kind == "null":
        return ""
    if op.kind != "s":
        raise Skip(text)
    if width == 64:
        return f"{{ uint64_t w_ = {value}; S[{op.index}] = (uint32_t)w_; S[{op.index + 1}] = (uint32_t)(w_ >> 32); }}"
    return f"S[{op.index}] = (uint32_t)({value});"


# name -> (width, C for r from a, b (and scc), C for the new scc or None)
LOGIC = {"and": "a & b", "or": "a | b", "xor": "a ^ b", "andn2": "a & ~b", "orn2": "a | ~b",
         "nand": "~(a & b)", "nor": "~(a | b)", "xnor": "~(a ^ b)"}
SOP2 = {
    "add_u32": (32, "(uint32_t)(a + b)", "((uint64_t)a + b) >> 32"),
    "sub_u32": (32, "a - b", "b > a"),
    "addc_u32": (32, "(uint32_t)((uint64_t)a + b + scc)", "((uint64_t)a + b + scc) >> 32"),
    "subb_u32": (32, "a - b - scc", "(uint64_t)b + scc > a"),
    "add_i32": (32, "a + b", "ovf_add(a, b)"),
    "sub_i32": (32, "a - b", "ovf_sub(a, b)"),
    "mul_i32": (32, "a * b", None),
    "mul_hi_u32": (32, "(uint32_t)(((uint64_t)a * b) >> 32)", None),
    "mul_hi_i32": (32, "(uint32_t)(((int64_t)(int32_t)a * (int32_t)b) >> 32)", None),
    "min_i32": (32, "(int32_t)a < (int32_t)b ? a : b", "(int32_t)a < (int32_t)b"),
    "max_i32": (32, "(int32_t)a >= (int32_t)b ? a : b", "(int32_t)a >= (int32_t)b"),
    "min_u32": (32, "a < b ? a : b", "a < b"),
    "max_u32": (32, "a >= b ? a : b", "a >= b"),
    "cselect_b32": (32, "scc ? a : b", None),
    "cselect_b64": (64, "scc ? a : b", None),
    "lshl_b32": (32, "a << (b & 31)", "r != 0"),
    "lshl_b64": (64, "a << (b & 63)", "r != 0"),
    "lshr_b32": (32, "a >> (b & 31)", "r != 0"),
    "lshr_b64": (64, "a >> (b & 63)", "r != 0"),
    "ashr_i32": (32, "(uint32_t)((int32_t)a >> (b & 31))", "r != 0"),
    "ashr_i64": (64, "(uint64_t)((int64_t)a >> (b & 63))", "r != 0"),
    "bfm_b32": (32, "((1u << (a & 31)) - 1u) << (b & 31)", None),
    "bfm_b64": (64, "((1ull << (a & 63)) - 1ull) << (b & 63)", None),
    "bfe_u32": (32, "bfe_u32(a, b)", "r != 0"),
    "bfe_i32": (32, "bfe_i32(a, b)", "r != 0"),
    "bfe_u64": (64, "bfe_u64(a, b)", "r != 0"),
    "absdiff_i32": (32, "(uint32_t)abs32((int32_t)(a - b))", "r != 0"),
    "pack_ll_b32_b16": (32, "(a & 0xFFFFu) | (b & 0xFFFFu) << 16", None),
    "pack_lh_b32_b16": (32, "(a & 0xFFFFu) | (b & 0xFFFF0000u)", None),
    "pack_hh_b32_b16": (32, "(a >> 16) | (b & 0xFFFF0000u)", None),
}
for _shift in (1, 2, 3, 4):
    SOP2[f"lshl{_shift}_add_u32"] = (32, f"(uint32_t)(((uint64_t)a << {_shift}) + b)",
                                     f"((((uint64_t)a << {_shift}) + b) >> 32) != 0")
for _name, _expr in LOGIC.items():
    SOP2[f"{_name}_b32"] = (32, _expr, "r != 0")
    SOP2[f"{_name}_b64"] = (64, _expr, "r != 0")
SHIFT_B32 = ("lshl_", "lshr_", "ashr_", "bfe_", "bfm_")
SOP1 = {"mov_b32": (32, "a", None), "mov_b64": (64, "a", None),
        "not_b32": (32, "~a", "r != 0"), "not_b64": (64, "~a", "r != 0"),
        "bcnt1_i32_b32": (32, "(uint32_t)__builtin_popcount(a)", "r != 0"),
        "bcnt1_i32_b64": (64, "(uint64_t)__builtin_popcountll(a)", "r != 0"),
        "ff1_i32_b32": (32, "a ? (uint32_t)__builtin_ctz(a) : 0xFFFFFFFFu", None),
        "ff1_i32_b64": (64, "a ? (uint64_t)__builtin_ctzll(a) : 0xFFFFFFFFull", None),
        "flbit_i32_b32": (32, "a ? (uint32_t)__builtin_clz(a) : 0xFFFFFFFFu", None),
        "abs_i32": (32, "(uint32_t)abs32((int32_t)a)", "r != 0"),
        "sext_i32_i8": (32, "(uint32_t)(int32_t)(int8_t)a", None),
        "sext_i32_i16": (32, "(uint32_t)(int32_t)(int16_t)a", None)}
SAVEEXEC = {"and": "s & e", "or": "s | e", "xor": "s ^ e", "andn2": "s & ~e", "orn2": "s | ~e",
            "nand": "~(s & e)", "nor": "~(s | e)", "xnor": "~(s ^ e)", "andn1": "~s & e",
            "orn1": "~s | e"}
TESTS = {"eq": "==", "lg": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}
SMEM_WORDS = {"dword": 1, "dwordx2": 2, "dwordx4": 4, "dwordx8": 8, "dwordx16": 16}


def sop2(ins, name):
    width, expr, scc = SOP2[name]
    a_width = 32 if name.startswith("bfm_") else width
    b_width = 32 if name.startswith(SHIFT_B32) else width
    kind = "uint64_t" if width == 64 else "uint32_t"
    a, b = sread(ins.operands[1], a_width), sread(ins.operands[2], b_width)
    tail = f" scc = ({scc});" if scc else ""
    body = f"{kind} a = {a}, b = {b}; {kind} r = {expr};{tail} "
    return "{ " + body + swrite(ins.operands[0], "r", width) + " }"


def sop1(ins, name):
    if name.endswith("_saveexec_b64"):
        op = SAVEEXEC.get(name.removesuffix("_saveexec_b64"))
        if op is None:
            raise Skip(name)
        s = sread(ins.operands[1], 64)
        return ("{ uint64_t s = " + s + ", e = EXEC64; " + swrite(ins.operands[0], "e", 64)
                + f" uint64_t x = {op}; S[126] = (uint32_t)x; S[127] = (uint32_t)(x >> 32);"
                " scc = x != 0; }")
    if name in ("cmov_b32", "cmov_b64"):
        width = int(name[-2:])
        return f"if (scc) {swrite(ins.operands[0], sread(ins.operands[1], width), width)}"
    if name not in SOP1:
        raise Skip(name)
    width, expr, scc = SOP1[name]
    kind = "uint64_t" if width == 64 else "uint32_t"
    out_width = 32 * operand(ins.operands[0]).count  # s_bcnt1_i32_b64 and friends: one SGPR
    tail = f" scc = ({scc});" if scc else ""
    return ("{ " + f"{kind} a = {sread(ins.operands[1], width)}; {kind} r = {expr};{tail} "
            + swrite(ins.operands[0], "r", out_width) + " }")


def sopc(ins, name):
    parts = name.split("_")
    if parts[0] in ("bitcmp0", "bitcmp1"):
        width = int(parts[1][1:])
        a, b = sread(ins.operands[0], width), sread(ins.operands[1], 32)
        return f"scc = ((({a}) >> (({b}) & {width - 1})) & 1) == {parts[0][-1]};"
    test, kind = TESTS[parts[1]], parts[2]
    width = 64 if kind.endswith("64") else 32
    cast = ("(int64_t)" if width == 64 else "(int32_t)") if kind.startswith("i") else ""
    a, b = sread(ins.operands[0], width), sread(ins.operands[1], width)
    return f"scc = {cast}({a}) {test} {cast}({b});"


def sopk(ins, name):
    immediate = int(ins.operands[1], 0) & 0xFFFF
    value = immediate - 0x10000 if immediate & 0x8000 else immediate
    if name.startswith("cmpk_"):
        parts = name.split("_")
        a = sread(ins.operands[0])
        if parts[2].startswith("i"):
            return f"scc = (int64_t)(int32_t)({a}) {TESTS[parts[1]]} (int64_t){value};"
        return f"scc = (uint64_t)({a}) {TESTS[parts[1]]} (uint64_t){immediate}u;"
    bits = value & M32
    if name == "movk_i32":
        return swrite(ins.operands[0], f"{bits}u")
    if name == "cmovk_i32":
        return f"if (scc) {swrite(ins.operands[0], f'{bits}u')}"
    a = sread(ins.operands[0])
    if name == "addk_i32":
        return f"{{ uint32_t a = {a}; scc = ovf_add(a, {bits}u); {swrite(ins.operands[0], f'a + {bits}u')} }}"
    if name == "mulk_i32":
        return swrite(ins.operands[0], f"{a} * {bits}u")
    raise Skip(name)


def salu(ins, name):
    if name in SOP2:
        return sop2(ins, name)
    if name.startswith(("cmp_", "bitcmp")):
        return sopc(ins, name)
    if name.startswith(("movk_", "cmovk_", "addk_", "mulk_", "cmpk_")):
        return sopk(ins, name)
    return sop1(ins, name)


CONDITIONS = {"scc0": "scc == 0", "scc1": "scc != 0", "vccz": "(S[106] | S[107]) == 0",
              "vccnz": "(S[106] | S[107]) != 0", "execz": "(S[126] | S[127]) == 0",
              "execnz": "(S[126] | S[127]) != 0"}


def control(ins, name, program):
    """Returns (C, the instruction index it may jump to or None)."""
    if name in sopp.NO_OPS or name.startswith("waitcnt"):
        return "", None
    if name == "branch":
        target = sopp.target_index(program, ins)
        return f"NEXT({target});", target
    if name.startswith("cbranch_") and name[8:] in CONDITIONS:
        target = sopp.target_index(program, ins)
        return f"if ({CONDITIONS[name[8:]]}) NEXT({target});", target
    if name == "barrier":
        return "STOP_AFTER(BARRIER_STOP);", None
    if name in sopp.ENDS:
        return "STOP_AFTER(END_STOP);", None
    if name in ("setreg_b32", "setreg_imm32_b32"):  # no-ops in sopp.py
        return "", None
    if name == "getreg_b32":
        return swrite(ins.operands[0], "0u"), None
    if name == "getpc_b64":  # the address after this instruction, in host memory
        return swrite(ins.operands[0], f"st->load_base + {ins.pc + ins.size}ull", 64), None
    raise Skip(name)


def s_load(ins, name):
    words = SMEM_WORDS.get(name.split("_")[1])
    destination = operand(ins.operands[0])
    if words is None or destination.kind != "s" or destination.index + words > 128:
        raise Skip(name)
    extra = int(ins.modifiers.get("offset", "0"), 0)
    offset = sread(ins.operands[2]) if len(ins.operands) > 2 else "0u"
    base = sread(ins.operands[1], 64)
    return (f"{{ uint64_t at = ({base} + (uint64_t){offset} + {extra}ull) & ~3ull;"
            f" if (!inside(st, at, {4 * words})) FALLBACK;"
            f" note_lines(st, at, {4 * words});"
            f" memcpy(&S[{destination.index}], (const void *)(uintptr_t)at, {4 * words});"
            f" st->bytes[SCALAR_LOAD] += {4 * words}; }}")
