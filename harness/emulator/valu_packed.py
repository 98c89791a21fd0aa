"""VOP3P: packed 16-bit and packed fp32 opcodes (op_sel / op_sel_hi / neg_lo / neg_hi), the dot
products and the mixed-precision fma_mix forms."""
import numpy as np

from .errors import NotEmulated
from .numerics import fma_f32
from .operands import parse, vector_reader, vector_writer, write_pair, write_rows
from .valu import applied, bits, raw_of, typed

HALF_OPS = {
    "pk_add_f16": ("f16", 2, np.add), "pk_mul_f16": ("f16", 2, np.multiply),
    "pk_fma_f16": ("f16", 3, lambda a, b, c: (a.astype(np.float64) * b + c).astype(np.float16)),
    "pk_max_f16": ("f16", 2, np.fmax), "pk_min_f16": ("f16", 2, np.fmin),
    "pk_add_u16": ("u16", 2, np.add), "pk_sub_u16": ("u16", 2, np.subtract),
    "pk_add_i16": ("i16", 2, np.add), "pk_sub_i16": ("i16", 2, np.subtract),
    "pk_mul_lo_u16": ("u16", 2, np.multiply), "pk_mad_u16": ("u16", 3, lambda a, b, c: a * b + c),
    "pk_max_u16": ("u16", 2, np.maximum), "pk_min_u16": ("u16", 2, np.minimum),
    "pk_max_i16": ("i16", 2, np.maximum), "pk_min_i16": ("i16", 2, np.minimum),
    "pk_lshlrev_b16": ("u16", 2, lambda s, a: a << (s & np.uint16(15))),
    "pk_lshrrev_b16": ("u16", 2, lambda s, a: a >> (s & np.uint16(15))),
    "pk_ashrrev_i16": ("i16", 2, lambda s, a: a >> (s.view(np.uint16) & np.uint16(15)).astype(np.int16)),
}
F32 = np.dtype(np.float32)
WIDE_OPS = {"pk_fma_f32": (3, fma_f32), "pk_mul_f32": (2, np.multiply), "pk_add_f32": (2, np.add),
            "pk_mov_b32": (2, None)}


def packed_reader(operand, width):
    """A constant feeds both halves; registers are read as they are."""
    if operand.kind == "const":
        read = vector_reader(operand, 16 if width == 16 else 32, True)
        value = int(read(None))
        shift = 16 if width == 16 else 32
        both = np.uint64(value | value << shift) if width == 32 else np.uint32(value | value << 16)
        return lambda w: both
    return vector_reader(operand, 64 if width == 32 else 32)


def negate(value, flag):
    return -value if flag else value


def half_op(ins, name):
    kind, count, fn = HALF_OPS[name]
    ops = [parse(text) for text in ins.operands]
    write = vector_writer(ops[0])
    readers = [packed_reader(op, 16) for op in ops[1:1 + count]]
    mods = ins.modifiers
    sel, sel_hi = bits(mods.get("op_sel")), bits(mods.get("op_sel_hi"), 4) if "op_sel_hi" in mods else [1] * 4
    neg_lo, neg_hi = bits(mods.get("neg_lo")), bits(mods.get("neg_hi"))
    floating = kind == "f16"

    def run(w):
        raws = [np.asarray(r(w)).astype(np.uint32) for r in readers]
        low = [negate(typed(raw, kind, bool(sel[i])), floating and neg_lo[i]) for i, raw in enumerate(raws)]
        high = [negate(typed(raw, kind, bool(sel_hi[i])), floating and neg_hi[i]) for i, raw in enumerate(raws)]
        result = raw_of(fn(*low), kind) | raw_of(fn(*high), kind) << np.uint32(16)
        write(w, result)
    return run


def dword_reader(operand, high: int, negated: bool, floating: bool):
    """fn(wave) -> dword `high` of a source pair (a constant feeds both) as float32 or uint32."""
    dtype = np.float32 if floating else np.uint32
    if operand.kind == "v":
        row = operand.index + high
        if negated:
            return lambda w: -w.v[row].view(dtype)
        return lambda w: w.v[row].view(dtype)
    both = np.asarray(packed_reader(operand, 32)(None)).astype(np.uint64)  # a constant
    dword = (both >> np.uint64(32 * high) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    value = negate(dword.view(dtype), negated)
    return lambda w: value


def pair_reader(operand, low: int, high: int, negated: bool):
    """fn(wave) -> float32 [2, 64] (a constant: [2, 1]): the dwords feeding both results."""
    if operand.kind == "v":
        first, second = operand.index + low, operand.index + high
        rows = slice(first, first + 2) if second == first + 1 else [first, second]
        if negated:
            return lambda w: -w.f32[rows]
        return lambda w: w.f32[rows]
    value = np.stack([dword_reader(operand, half, negated, True)(None) for half in (low, high)])[:, None]
    return lambda w: value


def wide_op(ins, name):
    """pk_*_f32: each source is a register pair; op_sel picks the dword feeding the low result,
    op_sel_hi the one feeding the high result."""
    count, fn = WIDE_OPS[name]
    ops = [parse(text) for text in ins.operands]
    sources = ops[1:1 + count]
    if ops[0].kind == "v" and all(op.kind in ("v", "const") and not (op.neg or op.abs) for op in sources):
        return wide_rows(ins, ops, count, fn)
    write = vector_writer(ops[0], 64)
    readers = [packed_reader(op, 32) for op in ops[1:1 + count]]
    mods = ins.modifiers
    sel = bits(mods.get("op_sel"))
    sel_hi = bits(mods.get("op_sel_hi")) if "op_sel_hi" in mods else [1] * 4
    neg_lo, neg_hi = bits(mods.get("neg_lo")), bits(mods.get("neg_hi"))

    def dword(raw, high):
        return (raw >> np.uint64(32 if high else 0) & np.uint64(0xFFFFFFFF)).astype(np.uint32)

    def run(w):
        raws = [np.asarray(r(w)).astype(np.uint64) for r in readers]
        if fn is None:
            low, high = dword(raws[0], sel[0]), dword(raws[1], sel[1])
        else:
            lo = [negate(dword(raw, sel[i]).view(np.float32), neg_lo[i]) for i, raw in enumerate(raws)]
            hi = [negate(dword(raw, sel_hi[i]).view(np.float32), neg_hi[i]) for i, raw in enumerate(raws)]
            low = np.asarray(fn(*lo), np.float32).view(np.uint32)
            high = np.asarray(fn(*hi), np.float32).view(np.uint32)
        write(w, low.astype(np.uint64) | high.astype(np.uint64) << np.uint64(32))
    return run


def wide_rows(ins, ops, count, fn):
    """wide_op for register or constant sources into a VGPR pair: each result dword row by itself."""
    mods = ins.modifiers
    sel = bits(mods.get("op_sel"))
    sel_hi = bits(mods.get("op_sel_hi")) if "op_sel_hi" in mods else [1] * 4
    neg_lo, neg_hi = bits(mods.get("neg_lo")), bits(mods.get("neg_hi"))
    row = ops[0].index
    if fn is None:  # pk_mov_b32: the low result from src0, the high one from src1
        low, high = dword_reader(ops[1], sel[0], False, False), dword_reader(ops[2], sel[1], False, False)
        return lambda w: write_pair(w, row, low(w), high(w).copy())  # src1 may be the row written first
    sources = ops[1:1 + count]
    if neg_lo == neg_hi:  # both results in one call on [2, 64] (the usual case)
        both = applied(fn, [pair_reader(op, sel[i], sel_hi[i], neg_lo[i]) for i, op in enumerate(sources)])
        return lambda w: write_rows(w, row, np.asarray(both(w), np.float32).view(np.uint32))
    low = applied(fn, [dword_reader(op, sel[i], neg_lo[i], True) for i, op in enumerate(sources)])
    high = applied(fn, [dword_reader(op, sel_hi[i], neg_hi[i], True) for i, op in enumerate(sources)])

    def run(w):
        write_pair(w, row, np.asarray(low(w), np.float32).view(np.uint32),
                   np.asarray(high(w), np.float32).view(np.uint32))
    return run


def dot_op(kind: str, parts: int, accumulate_kind: str):
    """v_dot2_f32_f16/bf16, v_dot2c_f32_bf16, v_dot4_i32_i8 ...: sum of products plus S2."""
    def builder(ins, name):
        ops = [parse(text) for text in ins.operands]
        if len(ops) == 3:
            ops = ops + [ops[0]]
        write = vector_writer(ops[0])
        a, b = vector_reader(ops[1]), vector_reader(ops[2])
        c = vector_reader(ops[3], 32, accumulate_kind == "f32")
        width = 32 // parts

        def lanes(raw, at):
            field = (np.asarray(raw).astype(np.uint32) >> np.uint32(width * at)) & np.uint32((1 << width) - 1)
            if kind == "f16":
                return field.astype(np.uint16).view(np.float16).astype(np.float64)
            if kind == "bf16":
                return (field << np.uint32(16)).view(np.float32).astype(np.float64)
            top = 1 << (width - 1)
            return (field.astype(np.int64) ^ top) - top if kind.startswith("i") else field.astype(np.int64)

        def run(w):
            x, y = a(w), b(w)
            total = sum(lanes(x, k) * lanes(y, k) for k in range(parts))
            if accumulate_kind == "f32":
                out = (total + typed(c(w), "f32")).astype(np.float32).view(np.uint32)
            else:
                out = ((total + typed(c(w), "i32").astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32)
            write(w, out)
        return run
    return builder


def mix_op(target: str):
    """v_fma_mix*/v_mad_mix*: op_sel_hi[i] says source i is f16 (its half from op_sel[i])."""
    def builder(ins, name):
        ops = [parse(text) for text in ins.operands]
        write = vector_writer(ops[0])
        readers = [vector_reader(op, 32, True) for op in ops[1:4]]
        sel, sel_hi = bits(ins.modifiers.get("op_sel")), bits(ins.modifiers.get("op_sel_hi"))
        row = ops[0].index

        def run(w):
            values = []
            for i, read in enumerate(readers):
                raw = np.asarray(read(w)).astype(np.uint32)
                values.append(typed(raw, "f16", bool(sel[i])).astype(np.float32) if sel_hi[i]
                              else typed(raw, "f32"))
            result = fma_f32(*values)
            if target == "f32":
                write(w, result.view(np.uint32))
                return
            half = result.astype(np.float16).view(np.uint16).astype(np.uint32)
            old = w.v[row]
            write(w, (old & np.uint32(0xFFFF)) | half << np.uint32(16) if target == "hi"
                  else (old & np.uint32(0xFFFF0000)) | half)
        return run
    return builder


SPECIAL = {"dot2_f32_f16": dot_op("f16", 2, "f32"), "dot2_f32_bf16": dot_op("bf16", 2, "f32"),
           "dot2c_f32_bf16": dot_op("bf16", 2, "f32"), "dot2c_f32_f16": dot_op("f16", 2, "f32"),
           "dot4_i32_i8": dot_op("i8", 4, "i32"), "dot4_u32_u8": dot_op("u8", 4, "i32"),
           "dot4c_i32_i8": dot_op("i8", 4, "i32"), "dot2_i32_i16": dot_op("i16", 2, "i32"),
           "dot2_u32_u16": dot_op("u16", 2, "i32"), "dot8_i32_i4": dot_op("i4", 8, "i32"),
           "fma_mix_f32": mix_op("f32"), "mad_mix_f32": mix_op("f32"),
           "fma_mixlo_f16": mix_op("lo"), "fma_mixhi_f16": mix_op("hi"),
           "mad_mixlo_f16": mix_op("lo"), "mad_mixhi_f16": mix_op("hi")}


def build(ins, name):
    if name in HALF_OPS:
        return half_op(ins, name)
    if name in WIDE_OPS:
        return wide_op(ins, name)
    if name in SPECIAL:
        return SPECIAL[name](ins, name)
    raise NotEmulated(ins.mnemonic)


def knows(name: str) -> bool:
    return name in HALF_OPS or name in WIDE_OPS or name in SPECIAL
