"""MFMA and its companions: v_mfma_* (single-block shapes), v_mfma_scale_* with e8m0 scales, AGPR
moves, v_permlane16/32_swap, v_cvt_scalef32_pk_*.

Lane layouts (CDNA3/CDNA4 ISA guides, AMD's matrix-cores blog): for MxNxK with M = N = 16, lane l
holds row (A) or column (B) l % 16 and the K values g*(K/4) .. g*(K/4)+K/4-1 of group g = l // 16;
the result's 4 registers hold column l % 16, rows 4g + r. For 32x32, l % 32 and two groups of K/2;
result register r holds row 8*(r // 4) + 4*(l // 32) + r % 4. For the f8f6f4 shapes this puts 32
consecutive K values in each lane, the one MX block a lane's e8m0 scale covers (AMD's scaled MFMA
gives one scale per lane); the other order seen in public emulators (two 16-value chunks 64 apart)
would split a lane across two scale blocks. Products are exact, summed in float64 with C and
rounded once to fp32 (hardware's internal rounding may differ in the last bits)."""
import re

import numpy as np

from .errors import NotEmulated
from .numerics import BF8_E5M2, FORMATS, FP8_E4M3, e8m0_scale, encode_minifloat
from .operands import full_exec, parse, vector_reader, vector_writer, write_rows
from .valu import bits
from .wave import lanes64

SHAPE = re.compile(r"^mfma_(?:scale_)?(f32|i32)_(\d+)x(\d+)x(\d+)_?(.*)$")
F8F6F4 = {0: "fp8", 1: "bf8", 2: "fp6", 3: "bf6", 4: "fp4"}
PAIR = {"fp8": "fp8", "bf8": "bf8"}


def rows(w, operand, count):
    return w.v[operand.index:operand.index + count]


def lane_bytes(w, operand, count) -> np.ndarray:
    """Registers [count, 64] as bytes per lane [64, 4*count]."""
    return np.ascontiguousarray(rows(w, operand, count).T).view(np.uint8)


def unpack_codes(data: np.ndarray, width: int, count: int) -> np.ndarray:
    """Little-endian packed codes of `width` bits, `count` per lane."""
    if width == 8:
        return data[:, :count].astype(np.int64)
    bitstream = np.unpackbits(data, axis=1, bitorder="little")[:, :width * count]
    weights = 1 << np.arange(width)
    return (bitstream.reshape(64, count, width) * weights).sum(axis=2)


def element_values(kind: str, data: np.ndarray, count: int) -> np.ndarray:
    """Per lane values [64, count] as float64 (or int64 for i8)."""
    if kind in FORMATS:
        table, width = FORMATS[kind]
        return table[unpack_codes(data, width, count)].astype(np.float64)
    if kind == "f16":
        return data.view(np.float16)[:, :count].astype(np.float64)
    if kind == "bf16":
        halves = data.view(np.uint16)[:, :count].astype(np.uint32) << np.uint32(16)
        return halves.view(np.float32).astype(np.float64)
    if kind == "f32":
        return data.view(np.float32)[:, :count].astype(np.float64)
    if kind == "i8":
        return data.view(np.int8)[:, :count].astype(np.int64)
    raise NotEmulated(f"mfma element type {kind}")


def element_kinds(ins, suffix: str) -> tuple[str, str]:
    if suffix == "f8f6f4":
        return F8F6F4[int(ins.modifiers.get("cbsz", "0"))], F8F6F4[int(ins.modifiers.get("blgp", "0"))]
    if "_" in suffix and suffix.split("_")[0] in PAIR:
        first, second = suffix.split("_")[:2]
        return first, second
    kind = {"bf16_1k": "bf16", "bf16": "bf16", "f16": "f16", "xf32": "xf32", "f32": "f32", "i8": "i8"}.get(suffix)
    if kind is None or kind == "xf32":
        raise NotEmulated(f"v_mfma_*_{suffix}")
    return kind, kind


def register_count(kind: str, values: int) -> int:
    bits_per = {"fp8": 8, "bf8": 8, "fp6": 6, "bf6": 6, "fp4": 4, "f16": 16, "bf16": 16, "f32": 32, "i8": 8}[kind]
    return max(values * bits_per // 32, 1)


def k_order(m: int, k: int, operand: str, kind: str = "") -> np.ndarray:
    """The K index of each lane's values [64, per-lane] (the same for A and B). 8-bit values of the 128-K
    (16x16) and 64-K (32x32) shapes come as two halves, the second K/2 further on; fp4 and the rest are one run."""
    groups = 64 // m
    per_lane = k // groups
    group = (np.arange(64) // m)[:, None]
    if kind in ("fp8", "bf8") and per_lane == 32:
        value = np.arange(per_lane)[None, :]
        half = per_lane // 2
        return value // half * (k // 2) + group * half + value % half
    return group * per_lane + np.arange(per_lane)


def layout(m: int, k: int):
    """(row of each lane, K index [64, per-lane], result row [registers, 64])."""
    groups = 64 // m
    per_lane = k // groups
    lane = np.arange(64)
    ks = (lane // m)[:, None] * per_lane + np.arange(per_lane)
    registers = m * m // 64
    r = np.arange(registers)[:, None]
    if m == 16:
        out_rows = 4 * (lane // 16)[None, :] + r
    else:
        out_rows = 8 * (r // 4) + 4 * (lane // 32)[None, :] + r % 4
    return lane % m, ks, out_rows, per_lane


def build_mfma(ins, name):
    found = SHAPE.match(name)
    if not found or found.group(2) != found.group(3) or int(found.group(2)) not in (16, 32):
        raise NotEmulated(ins.mnemonic)
    result_kind, m, k, suffix = found.group(1), int(found.group(2)), int(found.group(4)), found.group(5)
    if k * m // 64 < 1 or (m == 16 and k < 4) or (m == 32 and k < 2):
        raise NotEmulated(ins.mnemonic)
    kind_a, kind_b = element_kinds(ins, suffix)
    unsettled = sorted({kind_a, kind_b} & {"fp6", "bf6"})
    if unsettled:  # no Triton dot exercises them, so their K order has no witness here
        raise NotEmulated(f"{ins.mnemonic} with {unsettled[0]} operands (K order not settled)")
    owner, _, out_rows, per_lane = layout(m, k)
    ks_a, ks_b = k_order(m, k, "A", kind_a), k_order(m, k, "B", kind_b)
    ops = [parse(text) for text in ins.operands]
    destination, a_op, b_op, c_op = ops[:4]
    count_a, count_b = register_count(kind_a, per_lane), register_count(kind_b, per_lane)
    registers = m * m // 64
    scaled = name.startswith("mfma_scale")
    if scaled:
        scale_a, scale_b = vector_reader(ops[4]), vector_reader(ops[5])
        sel, sel_hi = bits(ins.modifiers.get("op_sel")), bits(ins.modifiers.get("op_sel_hi"))
        byte_a, byte_b = sel[0] | sel_hi[0] << 1, sel[1] | sel_hi[1] << 1
        block_lane = ((np.arange(k) // 32)[None, :] * m + np.arange(m)[:, None]).ravel()
    if c_op.kind == "const":
        c_value = float(c_op.value)
    integer = result_kind == "i32"

    def run(w):
        a = element_values(kind_a, lane_bytes(w, a_op, count_a), per_lane)
        b = element_values(kind_b, lane_bytes(w, b_op, count_b), per_lane)
        matrix_a = np.zeros((m, k), a.dtype)
        matrix_b = np.zeros((k, m), b.dtype)
        matrix_a[owner[:, None], ks_a] = a
        matrix_b[ks_b, owner[:, None]] = b
        if scaled:
            # K block j of row i is scaled by the byte lane j*M + i gives: a lane's own 32 values
            matrix_a *= scales(scale_a(w), byte_a)[block_lane].reshape(m, k)
            matrix_b *= scales(scale_b(w), byte_b)[block_lane].reshape(m, k).T
        product = matrix_a @ matrix_b
        if c_op.kind == "const":
            accumulate = np.full((registers, 64), c_value)
        else:
            raw = rows(w, c_op, registers)
            accumulate = raw.view(np.int32).astype(np.int64) if integer else raw.view(np.float32).astype(np.float64)
        result = product[out_rows, np.arange(64) % m] + accumulate
        if integer:
            out = (result.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)
        else:
            out = result.astype(np.float32).view(np.uint32)
        write_rows(w, destination.index, out)
    return run


def scales(raw, byte: int) -> np.ndarray:
    codes = (lanes64(np.asarray(raw, np.uint32)) >> np.uint32(8 * byte)) & np.uint32(0xFF)
    return e8m0_scale(codes)


def accvgpr(ins, name):
    destination, source = parse(ins.operands[0]), parse(ins.operands[1])
    write, read = vector_writer(destination), vector_reader(source)
    return lambda w: write(w, read(w))


def permlane_swap(ins, name):
    """v_permlane16_swap: rows 1 and 3 of the first operand trade with rows 0 and 2 of the second
    (per 32-lane half); v_permlane32_swap: the upper half of the first with the lower of the second."""
    first, second = parse(ins.operands[0]).index, parse(ins.operands[1]).index
    span = 16 if name.startswith("permlane16") else 32

    def run(w):
        a, b = w.v[first], w.v[second]
        for start in range(0, 64, 2 * span):
            upper = slice(start + span, start + 2 * span)
            lower = slice(start, start + span)
            held = b[lower].copy()
            b[lower] = a[upper]
            a[upper] = held
    return run


def scale_factor(raw) -> np.ndarray:
    """v_cvt_scalef32_*: the scale is 2^exponent(S1.f32) (its biased exponent bits)."""
    exponent = (lanes64(np.asarray(raw, np.uint32)) >> np.uint32(23)) & np.uint32(0xFF)
    return np.ldexp(1.0, exponent.astype(np.int64) - 127)


def cvt_scalef32(ins, name):
    """pk_f32_{fp8,bf8,fp4}: decode times the scale; pk_{fp8,bf8}_f32: divide and encode (RNE)."""
    ops = [parse(text) for text in ins.operands]
    sel = bits(ins.modifiers.get("op_sel"))
    target = name[len("cvt_scalef32_"):]
    if target in ("pk_f32_fp8", "pk_f32_bf8", "pk_f32_fp4"):
        kind = target.split("_")[-1]
        table, width = FORMATS[kind]
        read, scale = vector_reader(ops[1]), vector_reader(ops[2])
        write = vector_writer(ops[0], 64)
        shift = (16 if sel[0] else 0) if width == 8 else 8 * (sel[0] | sel[1] << 1)

        def decode(w):
            raw = lanes64(read(w)) >> np.uint32(shift)
            first, second = (raw & np.uint32(0xFF), raw >> np.uint32(8) & np.uint32(0xFF)) if width == 8 \
                else (raw & np.uint32(0xF), raw >> np.uint32(4) & np.uint32(0xF))
            factor = scale_factor(scale(w))
            low = (table[first] * factor).astype(np.float32).view(np.uint32).astype(np.uint64)
            high = (table[second] * factor).astype(np.float32).view(np.uint32).astype(np.uint64)
            write(w, low | high << np.uint64(32))
        return decode
    if target in ("pk_fp8_f32", "pk_bf8_f32"):
        table = FP8_E4M3 if "fp8" in target else BF8_E5M2
        a, b, scale = (vector_reader(op) for op in ops[1:4])
        row = ops[0].index
        write = vector_writer(ops[0])
        high = sel[3] if len(sel) > 3 else 0

        def encode(w):
            factor = scale_factor(scale(w))
            lo = encode_minifloat((np.asarray(a(w)).view(np.float32) / factor).astype(np.float32), table, False)
            hi = encode_minifloat((np.asarray(b(w)).view(np.float32) / factor).astype(np.float32), table, False)
            pair = lo | hi << np.uint32(8)
            old = w.v[row]
            write(w, (old & np.uint32(0xFFFF)) | pair << np.uint32(16) if high
                  else (old & np.uint32(0xFFFF0000)) | pair)
        return encode
    raise NotEmulated(ins.mnemonic)


def transpose_source(element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """ds_read_b64_tr_b8/_b16: (source lane, source element) of each lane's result element [64, per-lane].
    Per 16-lane row the 64-bit loads of lanes s, s + stride, ... (stride = 16 / per-lane) are the rows of a
    square matrix; result lane w takes column w % per-lane of the matrix of s = w // per-lane (b8: the even
    lanes' bytes go to lanes 0-7, the odd lanes' to 8-15). The layout Triton's AMD backend builds its dots on:
    of five candidates only this one gives right bf16/fp16/fp8 dots (tests/emulator/test_triton.py)."""
    per_lane = 8 // element_bytes
    stride = 16 // per_lane
    lane = np.arange(64)[:, None]
    element = np.arange(per_lane)[None, :]
    row, within = lane // 16 * 16, lane % 16
    return row + element * stride + within // per_lane, np.broadcast_to(within % per_lane, (64, per_lane))


def ds_read_transposed(ins, name):
    """ds_read_b64_tr_b8 / _b16: every lane loads 8 bytes at its address, then the loads are transposed
    across lanes (transpose_source). The ISA wants every lane active (EXEC all ones)."""
    from .ds import count_bytes, ds_base
    element_bytes = {"read_b64_tr_b8": 1, "read_b64_tr_b16": 2}.get(name)
    if element_bytes is None:
        raise NotEmulated(ins.mnemonic)
    destination = parse(ins.operands[0])
    base = ds_base(ins, ins.operands[1])
    lanes, elements = transpose_source(element_bytes)
    every = np.arange(64)

    def run(w):
        if not full_exec(w):  # undefined in the ISA: not a verdict we can give
            raise NotEmulated(f"{ins.mnemonic} with lanes off")
        loaded = w.lds.read(w.index, base(w, every), 8)
        count_bytes(w, "lds_read", loaded.size)
        per_element = loaded.view(np.uint8 if element_bytes == 1 else np.uint16)
        result = np.ascontiguousarray(per_element[lanes, elements]).view(np.uint32)
        write_rows(w, destination.index, result.reshape(64, 2).T)
    return run


def scaled_to_half(ins, name):
    """v_cvt_scalef32_pk_{f16,bf16}_{fp8,bf8,fp4}: two codes of S0 (op_sel picks the half word, or the byte for
    fp4) decoded, times 2^exponent(S1), rounded to f16/bf16 (nearest even) and packed."""
    from .numerics import f32_to_bf16
    target, source = name[len("cvt_scalef32_pk_"):].split("_")
    table, width = FORMATS[source]
    sel = bits(ins.modifiers.get("op_sel"))
    ops = [parse(text) for text in ins.operands]
    read, scale = vector_reader(ops[1]), vector_reader(ops[2])
    write = vector_writer(ops[0])
    shift = 16 * sel[0] if width == 8 else 8 * (sel[0] | sel[1] << 1)
    mask = np.uint32((1 << width) - 1)

    def to_half(values: np.ndarray) -> np.ndarray:
        single = values.astype(np.float32)
        if target == "bf16":
            return f32_to_bf16(single).astype(np.uint32)
        return single.astype(np.float16).view(np.uint16).astype(np.uint32)

    def run(w):
        raw = lanes64(read(w)) >> np.uint32(shift)
        factor = scale_factor(scale(w))
        low, high = table[raw & mask] * factor, table[raw >> np.uint32(width) & mask] * factor
        write(w, to_half(low) | to_half(high) << np.uint32(16))
    return run


def build(ins, name):
    if name.startswith("read_b64_tr"):
        return ds_read_transposed(ins, name)
    if name.startswith("mfma_"):
        return build_mfma(ins, name)
    if name.startswith("accvgpr_"):
        return accvgpr(ins, name)
    if name.startswith(("permlane16_swap", "permlane32_swap")):
        return permlane_swap(ins, name)
    if re.match(r"cvt_scalef32_pk_(f16|bf16)_(fp8|bf8|fp4)$", name):
        return scaled_to_half(ins, name)
    if name.startswith("cvt_scalef32_"):
        return cvt_scalef32(ins, name)
    raise NotEmulated(ins.mnemonic)
