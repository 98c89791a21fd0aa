"""C for VOP3P's packed forms: v_pk_fma/mul/add_f32 (a register pair per source) and the
packed u16 ops (two halves per dword), as valu_packed.py gives them: op_sel picks what feeds the
low result, op_sel_hi the high one."""
from ..operands import constant_bits
from ..valu import base_name
from .scalar import Skip, operand
from .vector import NO_SOURCE, row_of, src

PACKED = {"pk_fma_f32": (0, 3), "pk_mul_f32": (1, 2), "pk_add_f32": (2, 2)}
PACKED_MODIFIERS = ("op_sel", "op_sel_hi", "neg_lo", "neg_hi")


def flags(ins, key: str, default: int) -> list[int]:
    text = ins.modifiers.get(key)
    values = [int(x) for x in text.strip("[]").split(",")] if text else []
    return values + [default] * (4 - len(values))


def packed(ins):
    """v_pk_{fma,mul,add}_f32: op_sel picks the dword feeding the low result, op_sel_hi the
    high one; neg_lo / neg_hi flip their signs (valu_packed.wide_op)."""
    name = base_name(ins.mnemonic)
    if set(ins.modifiers) - set(PACKED_MODIFIERS) or ins.mnemonic.endswith(("_dpp", "_sdwa")):
        raise Skip(name)
    op, count = PACKED[name]
    sel, sel_hi = flags(ins, "op_sel", 0), flags(ins, "op_sel_hi", 1)
    neg_lo, neg_hi = flags(ins, "neg_lo", 0), flags(ins, "neg_hi", 0)
    row = row_of(ins.operands[0])
    halves = []
    for high, (chosen, negated) in enumerate(((sel, neg_lo), (sel_hi, neg_hi))):
        sources = [dword(text, chosen[k], negated[k]) for k, text in enumerate(ins.operands[1:1 + count])]
        halves += sources + [NO_SOURCE] * (3 - count)
    return f"pk_f32({op}, V({row}), V({row + 1}), {', '.join(halves)}, EXEC64);"


def dword(text: str, high: int, negated: int) -> str:
    """A register or constant dword (an SGPR pair stays numpy's: of two NaNs its scalar-vector
    loop may give either)."""
    op = operand(text)
    if op.neg or op.abs or op.kind not in ("v", "const"):
        raise Skip(text)
    flip = 0x80000000 if negated else 0
    if op.kind == "const":
        if op.value is None:
            raise Skip(text)
        return f"SRC(konst({constant_bits(op, 32, True)}u), 0, 4294967295u, {flip}u)"
    return f"SRC(V({op.index + high}), 1, 4294967295u, {flip}u)"


PACKED_16 = {"pk_add_u16": 0, "pk_sub_u16": 1, "pk_mul_lo_u16": 2, "pk_lshlrev_b16": 3,
             "pk_lshrrev_b16": 4, "pk_max_u16": 5, "pk_min_u16": 6}


def packed_16(ins):
    """v_pk_*_u16 / b16 on two sources: op_sel picks each source's half for the low result,
    op_sel_hi for the high one; a constant feeds both halves (valu_packed.half_op)."""
    name = base_name(ins.mnemonic)
    if set(ins.modifiers) - {"op_sel", "op_sel_hi"} or ins.mnemonic.endswith(("_dpp", "_sdwa")):
        raise Skip(name)
    sel, sel_hi = flags(ins, "op_sel", 0), flags(ins, "op_sel_hi", 1)
    sources = []
    for text in ins.operands[1:3]:
        op = operand(text)
        if op.neg or op.abs or op.kind not in ("v", "s", "const"):
            raise Skip(text)
        if op.kind == "const":
            if not isinstance(op.value, int):
                raise Skip(text)
            half = constant_bits(op, 16, False)
            sources.append(f"SRC(konst({half | half << 16}u), 0, 4294967295u, 0u)")
        else:
            sources.append(src(text))
    return (f"pk_u16({PACKED_16[name]}, V({row_of(ins.operands[0])}), {', '.join(sources)},"
            f" {sel[0]}, {sel[1]}, {sel_hi[0]}, {sel_hi[1]}, EXEC64);")


FORMS = {**{name: packed for name in PACKED}, **{name: packed_16 for name in PACKED_16}}


def knows(name: str) -> bool:
    return name in FORMS


def translate(ins) -> str:
    return FORMS[base_name(ins.mnemonic)](ins)
