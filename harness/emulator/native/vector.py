"""C for the VALU: elementwise ops of valu_ops.OPS on 32-bit (and a few 64-bit) lanes, v_cmp /
v_cmpx, v_cndmask, carries, v_readlane / readfirstlane, v_mbcnt. One loop over 64 lanes into a
temporary, then a write under EXEC (what the numpy executors do, lane by lane)."""
from ..operands import constant_bits
from ..valu import ACCUMULATE, base_name
from ..valu_ops import OPS
from .scalar import Skip, operand, sread, swrite

SIGN = {32: 0x80000000, 64: 0x8000000000000000}
F, I, U, B, H = "f32", "i32", "u32", "b32", "u16"
FMA = "U(fma_ref(F(a), F(b), F(c)))"
# name -> (result type, source types, C on a, b, c: the sources' bits per lane)
EXPRESSIONS = {
    "add_f32": (F, [F, F], "U(FADD(F(a), F(b)))"), "sub_f32": (F, [F, F], "U(FSUB(F(a), F(b)))"),
    "subrev_f32": (F, [F, F], "U(FSUB(F(b), F(a)))"), "mul_f32": (F, [F, F], "U(FMUL(F(a), F(b)))"),
    "min_f32": (F, [F, F], "U(vmin(F(a), F(b)))"), "max_f32": (F, [F, F], "U(vmax(F(a), F(b)))"),
    "fma_f32": (F, [F, F, F], FMA), "fmac_f32": (F, [F, F, F], FMA),
    "fmamk_f32": (F, [F, F, F], FMA), "fmaak_f32": (F, [F, F, F], FMA),
    "min3_f32": (F, [F, F, F], "U(vmin(vmin(F(a), F(b)), F(c)))"),
    "max3_f32": (F, [F, F, F], "U(vmax(vmax(F(a), F(b)), F(c)))"),
    "ldexp_f32": (F, [F, I], "U((float)ldexp((double)F(a), (int32_t)b))"),
    "mov_b32": (B, [B], "a"), "not_b32": (B, [B], "~a"), "bfrev_b32": (B, [B], "__builtin_bitreverse32(a)"),
    "cvt_f32_i32": (F, [I], "U((float)(int32_t)a)"), "cvt_f32_u32": (F, [U], "U((float)a)"),
    "cvt_u32_f32": (U, [F], "to_u32((double)F(a))"),
    "cvt_i32_f32": (I, [F], "to_i32((double)F(a))"),
    "cvt_f32_ubyte0": (F, [U], "U((float)(a & 0xFFu))"),
    "cvt_f32_ubyte1": (F, [U], "U((float)(a >> 8 & 0xFFu))"),
    "cvt_f32_ubyte2": (F, [U], "U((float)(a >> 16 & 0xFFu))"),
    "cvt_f32_ubyte3": (F, [U], "U((float)(a >> 24))"),
    "trunc_f32": (F, [F], "U(truncf(F(a)))"), "floor_f32": (F, [F], "U(floorf(F(a)))"),
    "ceil_f32": (F, [F], "U(ceilf(F(a)))"), "rndne_f32": (F, [F], "U(rintf(F(a)))"),
    "exp_f32": (F, [F], "U((float)exp2((double)F(a)))"),
    "log_f32": (F, [F], "U((float)log2((double)F(a)))"),
    "rcp_f32": (F, [F], "U((float)(1.0 / (double)F(a)))"),
    "rcp_iflag_f32": (F, [F], "U((float)(1.0 / (double)F(a)))"),
    "sqrt_f32": (F, [F], "U((float)sqrt((double)F(a)))"),
    "rsq_f32": (F, [F], "U((float)(1.0 / sqrt((double)F(a))))"),
    "add_u32": (U, [U, U], "a + b"), "sub_u32": (U, [U, U], "a - b"),
    "subrev_u32": (U, [U, U], "b - a"), "add_i32": (I, [I, I], "a + b"),
    "sub_i32": (I, [I, I], "a - b"), "mul_lo_u32": (U, [U, U], "a * b"),
    "mul_lo_i32": (U, [U, U], "a * b"),
    "mul_hi_u32": (U, [U, U], "(uint32_t)(((uint64_t)a * b) >> 32)"),
    "mul_hi_i32": (U, [I, I], "(uint32_t)(((int64_t)(int32_t)a * (int32_t)b) >> 32)"),
    "mul_u32_u24": (U, [U, U], "(a & 0xFFFFFFu) * (b & 0xFFFFFFu)"),
    "mul_hi_u32_u24": (U, [U, U], "(uint32_t)(((uint64_t)(a & 0xFFFFFFu) * (b & 0xFFFFFFu)) >> 32)"),
    "mul_i32_i24": (U, [U, U], "(uint32_t)(sext24(a) * sext24(b))"),
    "mad_u32_u24": (U, [U, U, U], "(a & 0xFFFFFFu) * (b & 0xFFFFFFu) + c"),
    "mad_i32_i24": (U, [U, U, U], "(uint32_t)(sext24(a) * sext24(b) + (int64_t)c)"),
    "min_i32": (I, [I, I], "(int32_t)a < (int32_t)b ? a : b"),
    "max_i32": (I, [I, I], "(int32_t)a > (int32_t)b ? a : b"),
    "min_u32": (U, [U, U], "a < b ? a : b"), "max_u32": (U, [U, U], "a > b ? a : b"),
    "min3_i32": (I, [I, I, I], "(uint32_t)mini(mini(a, b), c)"),
    "max3_i32": (I, [I, I, I], "(uint32_t)maxi(maxi(a, b), c)"),
    "min3_u32": (U, [U, U, U], "minu(minu(a, b), c)"),
    "max3_u32": (U, [U, U, U], "maxu(maxu(a, b), c)"),
    "med3_i32": (I, [I, I, I], "(uint32_t)maxi(mini(a, b), mini(maxi(a, b), c))"),
    "med3_u32": (U, [U, U, U], "maxu(minu(a, b), minu(maxu(a, b), c))"),
    "lshlrev_b32": (B, [U, B], "b << (a & 31)"), "lshrrev_b32": (B, [U, B], "b >> (a & 31)"),
    "ashrrev_i32": (I, [U, I], "(uint32_t)((int32_t)b >> (a & 31))"),
    "and_b32": (B, [B, B], "a & b"), "or_b32": (B, [B, B], "a | b"),
    "xor_b32": (B, [B, B], "a ^ b"), "xnor_b32": (B, [B, B], "~(a ^ b)"),
    "bfe_u32": (U, [U, U, U], "vbfe(a, b, c, 0)"), "bfe_i32": (U, [U, U, U], "vbfe(a, b, c, 1)"),
    "bfi_b32": (B, [B, B, B], "(a & b) | (~a & c)"),
    "bfm_b32": (B, [U, U], "((1u << (a & 31)) - 1u) << (b & 31)"),
    "alignbit_b32": (B, [B, B, U], "(uint32_t)((((uint64_t)a << 32) | b) >> (c & 31))"),
    "alignbyte_b32": (B, [B, B, U], "(uint32_t)((((uint64_t)a << 32) | b) >> (8 * (c & 3)))"),
    "lshl_add_u32": (U, [U, U, U], "(a << (b & 31)) + c"),
    "add_lshl_u32": (U, [U, U, U], "(a + b) << (c & 31)"),
    "add3_u32": (U, [U, U, U], "a + b + c"),
    "lshl_or_b32": (B, [B, U, B], "(a << (b & 31)) | c"),
    "and_or_b32": (B, [B, B, B], "(a & b) | c"), "or3_b32": (B, [B, B, B], "a | b | c"),
    "xad_u32": (U, [U, U, U], "(a ^ b) + c"), "perm_b32": (B, [B, B, B], "perm(a, b, c)"),
    "bcnt_u32_b32": (U, [U, U], "(uint32_t)__builtin_popcount(a) + b"),
    "lshlrev_b64": ("b64", [U, "b64"], "b << (a & 63)"),
    "lshrrev_b64": ("b64", [U, "b64"], "b >> (a & 63)"),
    "ashrrev_i64": ("i64", [U, "i64"], "(uint64_t)((int64_t)b >> (a & 63))"),
    "lshl_add_u64": ("u64", ["u64", U, "u64"], "(a << (b & 7)) + c"),
    "mov_b64": ("b64", ["b64"], "a"),
    "cvt_pk_bf16_f32": (U, [F, F], "bf16_bits(a) | bf16_bits(b) << 16"),
    # 16-bit results: the low half, the high half cleared (valu.result_store)
    "add_u16": (H, [H, H], "(uint16_t)(a + b)"), "sub_u16": (H, [H, H], "(uint16_t)(a - b)"),
    "mul_lo_u16": (H, [H, H], "(uint16_t)(a * b)"),
    "lshlrev_b16": (H, [H, H], "(uint16_t)((b & 0xFFFFu) << (a & 15u))"),
    "lshrrev_b16": (H, [H, H], "(b & 0xFFFFu) >> (a & 15u)"),
}
FLOAT_TESTS = {"f": "0", "lt": "x < y", "eq": "x == y", "le": "x <= y", "gt": "x > y",
               "lg": "(x < y) || (x > y)", "ge": "x >= y", "o": "!isnan(x) && !isnan(y)",
               "u": "isnan(x) || isnan(y)", "nge": "!(x >= y)", "nlg": "!((x < y) || (x > y))",
               "ngt": "!(x > y)", "nle": "!(x <= y)", "neq": "!(x == y)", "nlt": "!(x < y)",
               "tru": "1"}
INT_TESTS = {"f": "0", "lt": "x < y", "eq": "x == y", "le": "x <= y", "gt": "x > y",
             "ne": "x != y", "ge": "x >= y", "t": "1"}
TYPES = {"f32": ("float", "F"), "i32": ("int32_t", "(int32_t)"), "u32": ("uint32_t", ""),
         "u16": ("uint16_t", "(uint16_t)"), "i16": ("int16_t", "(int16_t)"),
         "i64": ("int64_t", "(int64_t)"), "u64": ("uint64_t", "")}


def width_of(kind: str) -> int:
    return int(kind[1:])


def helpers(declarations: bool = False) -> str:
    """One C function per elementwise op and compare, for the runtime library (or, with
    declarations, their prototypes): call sites stay one line each, so a code object of
    thousands of instructions compiles in seconds, not minutes."""
    out, heads = [], []
    for name, (result, kinds, expr) in EXPRESSIONS.items():
        if width_of(result) == 64 or any(width_of(k) == 64 for k in kinds):
            continue
        heads.append(f"void op_{name}(uint32_t *d, Src A, Src B, Src C, uint64_t ex);")
        used = "abc"[:len(kinds)]
        rows = "".join(f" lanes({x}_, {x.upper()});" for x in used)
        reads = ", ".join(f"{x} = {x}_[l]" for x in used)
        loop = f"for (int l = 0; l < 64; l++) {{ uint32_t {reads}; t[l] = {expr}; }}"
        if expr == FMA:  # runtime.c's fma_lanes: fma_ref only where the double sum may differ
            loop = "fma_lanes(t, a_, b_, c_);"
        out.append(f"void op_{name}(uint32_t *d, Src A, Src B, Src C, uint64_t ex) {{"
                   f" uint32_t t[64], a_[64], b_[64], c_[64];{rows} (void)B; (void)C;"
                   f" {loop} put(d, t, ex); }}")
    for kind, (ctype, cast) in TYPES.items():
        if width_of(kind) == 64:
            continue
        tests = FLOAT_TESTS if kind.startswith("f") else INT_TESTS
        for test, expr in tests.items():
            heads.append(f"uint64_t cmp_{test}_{kind}(Src A, Src B);")
            out.append(f"uint64_t cmp_{test}_{kind}(Src A, Src B) {{ uint64_t m = 0;"
                       " uint32_t a[64], b[64]; lanes(a, A); lanes(b, B);"
                       f" for (int l = 0; l < 64; l++) {{ {ctype} x = {cast}(a[l]),"
                       f" y = {cast}(b[l]); (void)x; (void)y; m |= (uint64_t)({expr}) << l; }}"
                       " return m; }")
    return "\n".join(heads if declarations else out)


def src(text: str, kind: str = "u32") -> str:
    """A 32-bit source as a Src: a row (stride 1), an SGPR or constant (stride 0), abs/neg as
    masks on the bits."""
    op = operand(text)
    is_float = kind.startswith("f")
    if (op.neg or op.abs) and not is_float:
        raise Skip(text)
    if op.kind == "const":
        if op.value is None or width_of(kind) == 16 and isinstance(op.value, float):
            raise Skip(text)
        where, stride = f"konst({constant_bits(op, width_of(kind), is_float)}u)", 0
    elif op.kind == "v":
        where, stride = f"V({op.index})", 1
    elif op.kind == "s":
        where, stride = f"&S[{op.index}]", 0
    else:
        raise Skip(text)
    keep = 0x7FFFFFFF if op.abs else 0xFFFFFFFF
    flip = 0x80000000 if op.neg else 0
    return f"SRC({where}, {stride}, {keep}u, {flip}u)"


NO_SOURCE = "SRC(konst(0u), 0, 0u, 0u)"


def lane_source(text: str, kind: str) -> str:
    """A 64-bit source's bits in lane l (the few 64-bit ops stay inline)."""
    op = operand(text)
    if op.neg or op.abs:
        raise Skip(text)
    if op.kind == "const":
        if op.value is None:
            raise Skip(text)
        width = 64 if width_of(kind) == 64 else 32
        return f"((uint64_t){constant_bits(op, width, kind.startswith('f'))}ull)"
    if op.kind == "v":
        return f"V64({op.index}, l)" if width_of(kind) == 64 else f"(uint64_t)V({op.index})[l]"
    if op.kind == "s":
        return f"S64({op.index})" if width_of(kind) == 64 else f"(uint64_t)S[{op.index}]"
    raise Skip(text)


def plain_form(ins) -> bool:
    return not ins.modifiers and not ins.mnemonic.endswith(("_dpp", "_sdwa"))


SDWA_MODIFIERS = {"src0_sel", "src1_sel", "dst_sel", "dst_unused"}


def sdwa_form(ins) -> bool:
    """An _sdwa instruction writing a whole dword (dst_sel:DWORD): only its sources select."""
    return (ins.mnemonic.endswith("_sdwa") and not set(ins.modifiers) - SDWA_MODIFIERS
            and ins.modifiers.get("dst_sel", "DWORD") == "DWORD")


def selected(ins, sources: list[str], texts: list[str]) -> tuple[str, list[str]]:
    """SDWA's src0_sel / src1_sel (dpp.sdwa_source): each selected source gathered into its
    own row first; returns (the C that gathers, the sources to use)."""
    from ..dpp import SDWA_SELECT
    if not ins.mnemonic.endswith("_sdwa"):
        return "", sources
    gathers, out = [], list(sources)
    for at, text in enumerate(texts[:2]):
        shift, width = SDWA_SELECT[ins.modifiers.get(f"src{at}_sel", "DWORD")]
        if width < 32:
            gathers.append(f"uint32_t g{at}[64]; sdwa_select(g{at}, {sources[at]}, {shift}, {width},"
                           f" {int(operand(text).sext)});")
            out[at] = f"SRC(g{at}, 1, 4294967295u, 0u)"
    return " ".join(gathers), out


def row_of(text: str) -> int:
    op = operand(text)
    if op.kind != "v":
        raise Skip(text)
    return op.index


DPP_CONTROLS = {"quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_shr", "wave_rol",
                "wave_ror", "row_mirror", "row_half_mirror", "row_bcast", "row_newbcast"}
DPP_MODIFIERS = DPP_CONTROLS | {"row_mask", "bank_mask", "bound_ctrl"}


def dpp_form(ins) -> bool:
    """A _dpp instruction with only DPP's own modifiers (dpp.py gives its lanes and masks)."""
    return (ins.mnemonic.endswith("_dpp") and bool(DPP_CONTROLS & set(ins.modifiers))
            and not set(ins.modifiers) - DPP_MODIFIERS)


def elementwise(ins, name):
    if name not in EXPRESSIONS or not (plain_form(ins) or dpp_form(ins) or sdwa_form(ins)):
        raise Skip(name)
    result, kinds, expr = EXPRESSIONS[name]
    if OPS.get(name, (None, None))[:2] != (result, kinds):
        raise Skip(name)  # the table changed: its numpy executor is the reference
    texts = list(ins.operands[1:])
    if len(texts) == len(kinds) - 1 and name.startswith(ACCUMULATE):
        texts.append(ins.operands[0])
    if len(texts) != len(kinds):
        raise Skip(name)
    row = row_of(ins.operands[0])
    if width_of(result) == 64 or any(width_of(k) == 64 for k in kinds):
        declared = "; ".join(f"uint64_t {chr(97 + k)} = {lane_source(text, kind)}"
                             for k, (text, kind) in enumerate(zip(texts, kinds)))
        wide = "uint64_t" if width_of(result) == 64 else "uint32_t"
        store = (f"put64(V({row}), V({row + 1}), t, ex);" if width_of(result) == 64
                 else f"put(V({row}), t, ex);")
        return (f"{{ uint64_t ex = EXEC64; {wide} t[64];"
                f" for (int l = 0; l < 64; l++) {{ {declared}; t[l] = {expr}; }} {store} }}")
    sources = [src(text, kind) for text, kind in zip(texts, kinds)]
    sources += [NO_SOURCE] * (3 - len(sources))
    if dpp_form(ins):
        return dpp_call(ins, name, row, texts[0], sources)
    gathers, sources = selected(ins, sources, texts)
    return f"{{ {gathers} op_{name}(V({row}), {', '.join(sources)}, EXEC64); }}"


def dpp_call(ins, name: str, row: int, first: str, sources: list[str]) -> str:
    """src0 gathered through the DPP lanes (valu.build with dpp.dpp_source), the op on it, the
    result written where EXEC, the row/bank masks and (without bound_ctrl) a live source allow."""
    from .. import dpp
    lanes, enabled, bound_zero = dpp.dpp_masks(ins.modifiers)
    if operand(first).kind != "v":
        raise Skip(name)
    table = ", ".join(str(int(x)) for x in lanes)
    enabled_bits = sum(1 << k for k in range(64) if enabled[k])
    keep, flip = sources[0].split(", ")[2:4]
    return (f"{{ static const int8_t lanes[64] = {{ {table} }}; uint32_t g[64]; uint64_t ex = EXEC64;"
            f" uint64_t on = dpp_gather(g, V({operand(first).index}), lanes, ex, {int(bound_zero)},"
            f" {keep}, {flip.rstrip(')')});"
            f" op_{name}(V({row}), SRC(g, 1, 4294967295u, 0u), {', '.join(sources[1:])},"
            f" ex & {enabled_bits}ull & {'~0ull' if bound_zero else 'on'}); }}")


def bitop3(ins):
    """v_bitop3_b32: each result bit is bit (S0 << 2 | S1 << 1 | S2) of the bitop3 table."""
    if set(ins.modifiers) - {"bitop3"} or ins.mnemonic.endswith(("_dpp", "_sdwa")):
        raise Skip("bitop3")
    ops = ins.operands
    table = int(ins.modifiers.get("bitop3", "0"), 0) & 0xFF
    sources = ", ".join(src(text) for text in ops[1:4])
    return f"bitop3(V({row_of(ops[0])}), {sources}, {table}, EXEC64);"


def mask_write(text: str, value: str) -> str:
    """A lane mask to VCC / an SGPR (pair); null drops it."""
    op = operand(text)
    if op.kind == "null":
        return ""
    if op.kind != "s":
        raise Skip(text)
    return swrite(text, value, 64 if op.count == 2 else 32)


def compare(ins, name):
    if not (plain_form(ins) or sdwa_form(ins) and "dst_sel" not in ins.modifiers):
        raise Skip(name)
    parts = name.split("_")
    writes_exec, test, kind = parts[0] == "cmpx", parts[1], parts[2]
    tests = FLOAT_TESTS if kind.startswith("f") else INT_TESTS
    if kind not in TYPES or width_of(kind) == 64 or test not in tests:
        raise Skip(name)
    texts = list(ins.operands)
    if len(texts) == 2:
        texts = ["vcc"] + texts
    tail = " S[126] = (uint32_t)m; S[127] = (uint32_t)(m >> 32);" if writes_exec else ""
    gathers, (a, b) = selected(ins, [src(texts[1], kind), src(texts[2], kind)], texts[1:])
    return (f"{{ {gathers} uint64_t m = cmp_{test}_{kind}({a}, {b})"
            f" & EXEC64; {mask_write(texts[0], 'm')}{tail} }}")


def mask_source(text: str) -> str:
    op = operand(text)
    if op.kind == "const":
        return f"((uint64_t){op.value & 0xFFFFFFFFFFFFFFFF}ull)"
    if op.kind == "s" and not (op.neg or op.abs):
        return f"S64({op.index})"
    raise Skip(text)


def cndmask(ins):
    if not plain_form(ins):
        raise Skip("cndmask")
    ops = ins.operands
    select = mask_source(ops[3] if len(ops) == 4 else "vcc")
    return (f"cndmask(V({row_of(ops[0])}), {src(ops[1], 'f32')}, {src(ops[2], 'f32')},"
            f" {select}, EXEC64);")


def carry(kind: str, carry_in: bool):
    def translate(ins):
        if not plain_form(ins):
            raise Skip(kind)
        ops = ins.operands
        a, b = src(ops[2]), src(ops[3])
        if kind == "subrev":
            a, b = b, a
        m_in = mask_source(ops[4] if len(ops) > 4 else "vcc") if carry_in else "0ull"
        subtract = int(kind != "add")
        return (f"{{ uint64_t m = carry_op(V({row_of(ops[0])}), {a}, {b}, {m_in}, {subtract},"
                f" EXEC64) & EXEC64; {mask_write(ops[1], 'm')} }}")
    return translate


def readlane(ins):
    ops = ins.operands
    row = operand(ops[1])
    if row.kind != "v" or not plain_form(ins):
        raise Skip("readlane")
    lane = f"({sread(ops[2])} & 63)" if len(ops) > 2 else "(EXEC64 ? __builtin_ctzll(EXEC64) : 0)"
    return swrite(ops[0], f"V({row.index})[{lane}]")


def mbcnt(high: bool):
    def translate(ins):
        if not plain_form(ins):
            raise Skip("mbcnt")
        ops = ins.operands
        return (f"mbcnt(V({row_of(ops[0])}), {src(ops[1])}, {src(ops[2])}, {32 if high else 0},"
                " EXEC64);")
    return translate


def mad_64_32(signed: bool):
    """v_mad_u64_u32 / v_mad_i64_i32: a 64-bit result and a carry-out lane mask (bit 64)."""
    def translate(ins):
        if not plain_form(ins):
            raise Skip("mad_64_32")
        ops = ins.operands
        row = row_of(ops[0])
        c = operand(ops[4])
        if c.kind != "v" or operand(ops[2]).kind == "const" and operand(ops[2]).value is None:
            raise Skip("mad_64_32")
        return (f"{{ uint64_t m = mad_64_32(V({row}), V({row + 1}), {src(ops[2])}, {src(ops[3])},"
                f" V({c.index}), V({c.index + 1}), {int(signed)}, EXEC64) & EXEC64;"
                f" {mask_write(ops[1], 'm')} }}")
    return translate


def div_scale(ins):
    """v_div_scale_f32: never scales (valu_forms: the fixup gives the IEEE quotient), VCC 0."""
    if not plain_form(ins):
        raise Skip("div_scale")
    ops = ins.operands
    return (f"{{ op_mov_b32(V({row_of(ops[0])}), {src(ops[2], 'f32')}, {NO_SOURCE}, {NO_SOURCE},"
            f" EXEC64); {mask_write(ops[1], '0ull')} }}")


def div_fmas(ins):
    if not plain_form(ins):
        raise Skip("div_fmas")
    ops = ins.operands
    sources = ", ".join(src(text, "f32") for text in ops[1:4])
    return f"div_fmas(V({row_of(ops[0])}), {sources}, S64(106), EXEC64);"


def div_fixup(ins):
    """v_div_fixup_f32: S2 / S1 in double, rounded once (what the whole sequence computes)."""
    if not plain_form(ins):
        raise Skip("div_fixup")
    ops = ins.operands
    return f"div_fixup(V({row_of(ops[0])}), {src(ops[2], 'f32')}, {src(ops[3], 'f32')}, EXEC64);"


FORMS = {"cndmask_b32": cndmask, "add_co_u32": carry("add", False),
         "addc_co_u32": carry("add", True), "sub_co_u32": carry("sub", False),
         "subb_co_u32": carry("sub", True), "subrev_co_u32": carry("subrev", False),
         "subbrev_co_u32": carry("subrev", True), "readlane_b32": readlane,
         "readfirstlane_b32": readlane, "mbcnt_lo_u32_b32": mbcnt(False),
         "mbcnt_hi_u32_b32": mbcnt(True), "mad_u64_u32": mad_64_32(False),
         "mad_i64_i32": mad_64_32(True), "div_scale_f32": div_scale, "div_fmas_f32": div_fmas,
         "div_fixup_f32": div_fixup, "bitop3_b32": bitop3}


def valu(ins):
    name = base_name(ins.mnemonic)
    if name.startswith(("cmp_", "cmpx_")):
        return compare(ins, name)
    if name in FORMS:
        return FORMS[name](ins)
    return elementwise(ins, name)
