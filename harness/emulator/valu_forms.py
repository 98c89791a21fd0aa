"""VALU forms beyond one result per lane: carries, lane reads and writes, the division helpers,
fp8/bf8 conversions with their byte selects and half-preserving writes."""
import numpy as np

from .errors import NotEmulated
from .numerics import BF8_E5M2, FP8_E4M3, encode_minifloat, fma_f32
from .operands import (lane_mask_reader, lane_mask_writer, parse, scalar_reader, scalar_writer,
                       vector_reader, vector_writer)
from .valu import bits, op_sel, typed, typed_reader
from .wave import EXEC, FULL, MASK_CACHE, lanes64

LANE = np.arange(64, dtype=np.uint64)
BELOW = (np.uint64(1) << LANE) - np.uint64(1)
U64 = np.uint64


def operands_of(ins):
    return [parse(text) for text in ins.operands]


def cndmask(ins):
    ops = operands_of(ins)
    select = ops[3] if len(ops) == 4 else parse("vcc")
    read_select = lane_mask_reader(select)
    a, b = typed_reader(ops[1], "u32", is_float=True), typed_reader(ops[2], "u32", is_float=True)
    write = vector_writer(ops[0])
    if select.kind != "s" or ops[0].kind != "v":
        return lambda w: write(w, np.where(read_select(w), b(w), a(w)))
    index, row = select.index, ops[0].index
    plain = not (ops[1].neg or ops[1].abs)
    if plain and ops[1].kind == "v" and ops[1].index == row:  # v = mask ? b : v, a select chain
        def select_into(w):
            s = w.s
            mask = MASK_CACHE.get(s[index] | s[index + 1] << 32)
            mask = read_select(w) if mask is None else mask
            if s[EXEC] != FULL or s[EXEC + 1] != FULL:
                mask = mask & w.exec_mask()
            np.copyto(w.v[row], b(w), where=mask)
        return select_into

    b_is_row = ops[2].kind == "v" and ops[2].index == row

    def run(w):  # the usual case inline: a mask seen before, EXEC all ones
        s = w.s
        mask = MASK_CACHE.get(s[index] | s[index + 1] << 32)
        mask = read_select(w) if mask is None else mask
        if s[EXEC] == FULL and s[EXEC + 1] == FULL and not b_is_row:
            target = w.v[row]  # a, then b over it: cheaper than np.where
            target[...] = a(w)
            np.copyto(target, b(w), where=mask)
        else:
            write(w, np.where(mask, b(w), a(w)))
    return run


def carry_op(kind: str, carry_in: bool):
    """v_add_co_u32 / v_addc_co_u32 / v_sub_co / v_subb / v_subrev_co / v_subbrev: 32-bit with carry."""
    def builder(ins):
        ops = operands_of(ins)
        write, write_carry = vector_writer(ops[0]), lane_mask_writer(ops[1])
        a, b = vector_reader(ops[2]), vector_reader(ops[3])
        carry = lane_mask_reader(ops[4] if len(ops) > 4 else parse("vcc")) if carry_in else None

        def run(w):
            x = lanes64(a(w)).astype(np.int64)
            y = lanes64(b(w)).astype(np.int64)
            c = carry(w).astype(np.int64) if carry else 0
            if kind == "subrev":
                x, y = y, x
            total = x + y + c if kind == "add" else x - y - c
            write_carry(w, (total >> 32) != 0)
            write(w, (total & 0xFFFFFFFF).astype(np.uint32))
        return run
    return builder


def mad_64_32(signed: bool):
    def builder(ins):
        ops = operands_of(ins)
        write, write_carry = vector_writer(ops[0], 64), lane_mask_writer(ops[1])
        a, b, c = vector_reader(ops[2]), vector_reader(ops[3]), vector_reader(ops[4], 64)

        def run(w):
            x, y = lanes64(a(w)), lanes64(b(w))
            z = lanes64(c(w))
            if signed:  # AMD: { D1.i1, D0.i64 } = 65'B(65'I(S0) * 65'I(S1) + 65'I(S2)): D1 is bit 64
                product = [int(p) * int(q) for p, q in zip(x.view(np.int32), y.view(np.int32))]
                total = [p + int(r) for p, r in zip(product, z.view(np.int64))]
                over = [t >> 64 & 1 == 1 for t in total]
            else:
                total = [int(p) * int(q) + int(r) for p, q, r in zip(x, y, z)]
                over = [t >> 64 != 0 for t in total]
            write_carry(w, np.array(over))
            write(w, np.array([t & 0xFFFFFFFFFFFFFFFF for t in total], np.uint64))
        return run
    return builder


def readlane(ins):
    ops = operands_of(ins)
    write, row = scalar_writer(ops[0]), ops[1].index
    lane = scalar_reader(ops[2]) if len(ops) > 2 else None

    def run(w):
        if lane is None:
            active = np.flatnonzero(w.exec_mask())
            at = int(active[0]) if len(active) else 0
        else:
            at = lane(w) & 63
        write(w, int(w.v[row, at]))
    return run


def writelane(ins):
    ops = operands_of(ins)
    row, value, lane = ops[0].index, scalar_reader(ops[1]), scalar_reader(ops[2])

    def run(w):
        w.v[row, lane(w) & 63] = value(w)
    return run


def mbcnt(high: bool):
    def builder(ins):
        ops = operands_of(ins)
        write, mask, base = vector_writer(ops[0]), vector_reader(ops[1]), vector_reader(ops[2])
        shift = U64(32) if high else U64(0)

        def run(w):
            below = (BELOW >> shift) & U64(0xFFFFFFFF)
            chosen = lanes64(mask(w)).astype(np.uint64) & below
            counts = np.unpackbits(chosen.astype(np.uint32).view(np.uint8).reshape(64, 4), axis=1).sum(axis=1)
            write(w, (counts + base(w)).astype(np.uint32))
        return run
    return builder


def div_scale(width: int):
    """v_div_scale: we never scale (VCC=0); the fixup below gives the IEEE quotient."""
    def builder(ins):
        ops = operands_of(ins)
        write, write_vcc, a = vector_writer(ops[0], width), lane_mask_writer(ops[1]), vector_reader(ops[2], width, True)

        def run(w):
            write(w, a(w))
            write_vcc(w, np.zeros(64, bool))
        return run
    return builder


def div_fmas(ins):
    ops = operands_of(ins)
    write = vector_writer(ops[0])
    a, b, c = (vector_reader(op, 32, True) for op in ops[1:4])
    vcc = lane_mask_reader(parse("vcc"))

    def run(w):
        result = fma_f32(typed(a(w), "f32"), typed(b(w), "f32"), typed(c(w), "f32"))
        scaled = np.where(vcc(w), result * np.float32(2.0**32), result).astype(np.float32)
        write(w, scaled.view(np.uint32))
    return run


def div_fixup(width: int):
    """D = S2 / S1 correctly rounded: what the whole scale/rcp/fma/fixup sequence computes."""
    kind = "f32" if width == 32 else "f64"

    def builder(ins):
        ops = operands_of(ins)
        write = vector_writer(ops[0], width)
        den, num = vector_reader(ops[2], width, True), vector_reader(ops[3], width, True)

        def run(w):
            with np.errstate(all="ignore"):
                quotient = typed(num(w), kind).astype(np.float64) / typed(den(w), kind)
            out = quotient.astype(np.float32).view(np.uint32) if width == 32 else quotient.view(np.uint64)
            write(w, out)
        return run
    return builder


def swap(ins):
    ops = operands_of(ins)
    first, second = ops[0].index, ops[1].index

    def run(w):
        mask = w.exec_mask()
        old = w.v[first].copy()
        np.copyto(w.v[first], w.v[second], where=mask)
        np.copyto(w.v[second], old, where=mask)
    return run


def cvt_pk_to_minifloat(table):
    """v_cvt_pk_fp8_f32 / bf8: two values into one 16-bit half; op_sel[3] picks the high half,
    the other half is preserved; clamp saturates."""
    def builder(ins):
        ops = operands_of(ins)
        row = ops[0].index
        write = vector_writer(ops[0])
        a, b = vector_reader(ops[1], 32, True), vector_reader(ops[2], 32, True)
        high = op_sel(ins.modifiers, 2)[1]
        saturate = "clamp" in ins.modifiers

        def run(w):
            lo = encode_minifloat(typed(a(w), "f32"), table, saturate)
            hi = encode_minifloat(typed(b(w), "f32"), table, saturate)
            pair = lo | hi << np.uint32(8)
            old = w.v[row]
            merged = (old & np.uint32(0xFFFF)) | pair << np.uint32(16) if high else \
                (old & np.uint32(0xFFFF0000)) | pair
            write(w, merged)
        return run
    return builder


SDWA_FIRST_BYTE = {"BYTE_0": 0, "BYTE_1": 1, "BYTE_2": 2, "BYTE_3": 3,
                   "WORD_0": 0, "WORD_1": 2, "DWORD": 0}


def byte_select(ins) -> int:
    if ins.mnemonic.endswith("_sdwa"):
        sel = ins.modifiers.get("src0_sel", "DWORD")
        if sel not in SDWA_FIRST_BYTE:
            raise NotEmulated(ins.mnemonic, detail=f"src0_sel:{sel}")
        return SDWA_FIRST_BYTE[sel]
    sel = bits(ins.modifiers.get("op_sel"))
    return sel[0] | sel[1] << 1


def cvt_from_minifloat(table, packed: bool):
    """v_cvt_f32_fp8 (one byte) and v_cvt_pk_f32_fp8 (two bytes of a word) to f32."""
    def builder(ins):
        ops = operands_of(ins)
        read = vector_reader(ops[1])
        select = byte_select(ins)
        if packed:
            select = 2 if select >= 1 else 0
        write = vector_writer(ops[0], 64 if packed else 32)

        def run(w):
            raw = lanes64(read(w))
            low = table[(raw >> np.uint32(8 * select)) & np.uint32(0xFF)]
            if not packed:
                write(w, low.view(np.uint32))
                return
            high = table[(raw >> np.uint32(8 * select + 8)) & np.uint32(0xFF)]
            write(w, low.view(np.uint32).astype(np.uint64) | high.view(np.uint32).astype(np.uint64) << U64(32))
        return run
    return builder


def bit_op3(width: int):
    """v_bitop3_b32/_b16: each result bit is bit (S0 << 2 | S1 << 1 | S2) of the 8-bit table."""
    def builder(ins):
        ops = operands_of(ins)
        write = vector_writer(ops[0])
        readers = [vector_reader(op, width) for op in ops[1:4]]
        table = int(ins.modifiers.get("bitop3", "0"), 0)
        mask = np.uint32(0xFFFFFFFF if width == 32 else 0xFFFF)

        def run(w):
            a, b, c = (np.asarray(r(w)).astype(np.uint32) for r in readers)
            out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
            for code in range(8):
                if table >> code & 1:
                    out |= (a if code & 4 else ~a) & (b if code & 2 else ~b) & (c if code & 1 else ~c)
            write(w, out & mask)
        return run
    return builder


def nothing(ins):
    return lambda w: None


FORMS = {
    "cndmask_b32": cndmask, "add_co_u32": carry_op("add", False), "addc_co_u32": carry_op("add", True),
    "sub_co_u32": carry_op("sub", False), "subb_co_u32": carry_op("sub", True),
    "subrev_co_u32": carry_op("subrev", False), "subbrev_co_u32": carry_op("subrev", True),
    "mad_u64_u32": mad_64_32(False), "mad_i64_i32": mad_64_32(True),
    "readlane_b32": readlane, "readfirstlane_b32": readlane, "writelane_b32": writelane,
    "mbcnt_lo_u32_b32": mbcnt(False), "mbcnt_hi_u32_b32": mbcnt(True),
    "div_scale_f32": div_scale(32), "div_scale_f64": div_scale(64), "div_fmas_f32": div_fmas,
    "bitop3_b32": bit_op3(32), "bitop3_b16": bit_op3(16),
    "div_fixup_f32": div_fixup(32), "div_fixup_f64": div_fixup(64), "swap_b32": swap, "nop": nothing,
    "cvt_pk_fp8_f32": cvt_pk_to_minifloat(FP8_E4M3), "cvt_pk_bf8_f32": cvt_pk_to_minifloat(BF8_E5M2),
    "cvt_f32_fp8": cvt_from_minifloat(FP8_E4M3, False), "cvt_f32_bf8": cvt_from_minifloat(BF8_E5M2, False),
    "cvt_pk_f32_fp8": cvt_from_minifloat(FP8_E4M3, True), "cvt_pk_f32_bf8": cvt_from_minifloat(BF8_E5M2, True),
}
