"""C for the MFMAs whose float64 sum is exact in any order, so C and numpy's matmul agree bit for
bit: fp8 (OCP e4m3) and fp4 (e2m1) operands, unscaled (16x16xK, 32x32xK). A product of two e4m3
values has 8 significant bits between 2^-18 and 2^17; 128 of them stay within 53 bits. bf16
operands run in C where each cell's products fit 53 bits together (runtime.c checks this at
each execution; where they do not, that one goes to numpy). Others (bf8, f16, scaled, i8) run
in numpy. Also v_cvt_pk_fp8_f32 (numerics.encode_minifloat) and v_accvgpr_* (moves)."""
import dataclasses
import functools

import numpy as np

from .. import matrix, valu_forms
from ..numerics import FORMATS
from .scalar import Skip, operand
from . import vector
from .vector import src

EXACT_KINDS = ("fp8", "fp4")


def c_double(value: float) -> str:
    if np.isnan(value):
        return "NAN"
    if np.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    return float(value).hex()


def define(defs: dict, name: str, ctype: str, values) -> str:
    if name not in defs:
        defs[name] = f"static const {ctype} {name}[] = {{ {', '.join(values)} }};"
    return name


def table(defs: dict, kind: str) -> str:
    return define(defs, f"decode_{kind}", "double", value_texts(kind))


@functools.lru_cache(maxsize=None)  # each MFMA of a kernel asks again
def value_texts(kind: str) -> tuple[str, ...]:
    return tuple(c_double(v) for v in FORMATS[kind][0])


def mfma(ins, name: str, defs: dict) -> str:
    found = matrix.SHAPE.match(name)
    if not found or name.startswith("mfma_scale") or found.group(1) != "f32":
        raise Skip(name)
    m, n, k, suffix = (int(found.group(2)), int(found.group(3)), int(found.group(4)),
                       found.group(5))
    if m != n or m not in (16, 32):
        raise Skip(name)
    kind_a, kind_b = matrix.element_kinds(ins, suffix)
    if kind_a == kind_b == "bf16":
        return mfma_bf16(ins, name, m, k, defs)
    if kind_a not in EXACT_KINDS or kind_b not in EXACT_KINDS:
        raise Skip(name)
    if set(ins.modifiers) - {"cbsz", "blgp"}:
        raise Skip(name)
    per_lane = k // (64 // m)
    shape = f"{m}x{k}"
    sides = (("A", kind_a), ("B", kind_b))
    cells = [operand_cells(m, k, side, kind) for side, kind in sides]
    named = [define(defs, f"cells_{shape}_{kind}_{side}", "int32_t", cell_texts(m, k, side, kind))
             for side, kind in sides]
    rows = define(defs, f"out_rows_{shape}", "int32_t", out_row_texts(m, k))
    d, a, b, c = (operand(text) for text in ins.operands[:4])
    if d.kind != "v" or a.kind != "v" or b.kind != "v" or c.kind not in ("v", "const"):
        raise Skip(name)
    width_a, width_b = FORMATS[kind_a][1], FORMATS[kind_b][1]
    if c.kind == "const":
        accumulate = f"NULL, {c_double(float(c.value))}"
    else:
        accumulate = f"V({c.index}), 0.0"
    covers = int(all(len(set(found)) == len(found) == m * k for found in cells))
    return (f"mfma_exact(V({d.index}), V({a.index}), V({b.index}), {accumulate}, {m}, {k},"
            f" {per_lane}, {table(defs, kind_a)}, {width_a}, {table(defs, kind_b)}, {width_b},"
            f" {named[0]}, {named[1]}, {rows}, {covers}, EXEC64);")


def mfma_bf16(ins, name: str, m: int, k: int, defs: dict) -> str:
    """bf16 x bf16 into f32: C sums in float64 where every order is exact, else FALLBACK."""
    per_lane = k // (64 // m)
    if ins.modifiers or k % 4 or per_lane % 2:
        raise Skip(name)
    shape = f"{m}x{k}"
    named = [define(defs, f"cells_{shape}_bf16_{side}", "int32_t", cell_texts(m, k, side, "bf16"))
             for side in "AB"]
    rows = define(defs, f"out_rows_{shape}", "int32_t", out_row_texts(m, k))
    d, a, b, c = (operand(text) for text in ins.operands[:4])
    if d.kind != "v" or a.kind != "v" or b.kind != "v" or c.kind not in ("v", "const"):
        raise Skip(name)
    if any(op.neg or op.abs for op in (a, b, c)):
        raise Skip(name)
    accumulate = f"NULL, {c_double(float(c.value))}" if c.kind == "const" else f"V({c.index}), 0.0"
    return (f"if (!mfma_bf16(V({d.index}), V({a.index}), V({b.index}), {accumulate}, {m}, {k},"
            f" {per_lane}, {named[0]}, {named[1]}, {rows}, EXEC64)) FALLBACK;")


def accvgpr(ins, name: str) -> str:
    """v_accvgpr_write/read/mov_b32: v_mov_b32's copy between VGPR and AGPR rows."""
    if ins.modifiers or len(ins.operands) != 2:
        raise Skip(name)
    return vector.valu(dataclasses.replace(ins, mnemonic="v_mov_b32"))


@functools.lru_cache(maxsize=None)  # each MFMA of a kernel asks again
def operand_cells(m: int, k: int, side: str, kind: str) -> tuple[int, ...]:
    """Where lane l's j-th code lands in the operand (m rows of k, contiguous in K): row l % m,
    column matrix.k_order's; flattened by lane, then code."""
    ks = np.asarray(matrix.k_order(m, k, side, kind)).reshape(64, -1)
    return tuple(int((lane % m) * k + q) for lane, row in enumerate(ks) for q in row)


@functools.lru_cache(maxsize=None)
def cell_texts(m: int, k: int, side: str, kind: str) -> tuple[str, ...]:
    return tuple(str(x) for x in operand_cells(m, k, side, kind))


@functools.lru_cache(maxsize=None)
def out_row_texts(m: int, k: int) -> tuple[str, ...]:
    return tuple(str(x) for x in matrix.layout(m, k)[2].ravel())


def minifloat(defs: dict, kind: str) -> str:
    """The format's Minifloat (prelude.c) for runtime.c's encode by bits, once its codes
    0..top are checked to be the format's own values (else numpy encodes)."""
    values, _ = FORMATS[kind]
    positives = values[:len(values) // 2]
    finite = np.isfinite(positives)
    top = int(np.flatnonzero(finite)[-1])
    beyond = np.flatnonzero(~finite)
    over = int(beyond[0]) if len(beyond) and np.isinf(positives[beyond[0]]) else len(values) // 2 - 1
    per_binade = int(np.count_nonzero((positives >= 1) & (positives < 2)))
    mant = per_binade.bit_length() - 1
    bias = 1 - int(np.log2(positives[per_binade]))
    codes = np.arange(top + 1)
    exponent, fraction = codes >> mant, (codes & (per_binade - 1)) / per_binade
    by_bits = np.where(exponent > 0, 2.0 ** (exponent - bias) * (1 + fraction), 2.0 ** (1 - bias) * fraction)
    if per_binade != 1 << mant or not np.array_equal(by_bits, positives[:top + 1]):
        raise Skip(kind)
    fields = [mant, bias, top, over, len(values) // 2 - 1, len(values) // 2]
    return define(defs, f"format_{kind}", "Minifloat", [str(x) for x in fields])


def cvt_pk_fp8(ins, name: str, defs: dict) -> str:
    """v_cvt_pk_fp8_f32 / bf8: two values RNE into one 16-bit half (op_sel[3]: the high half)."""
    if set(ins.modifiers) - {"op_sel", "clamp"} or ins.mnemonic.endswith(("_dpp", "_sdwa")):
        raise Skip(name)
    kind = "fp8" if "fp8" in name else "bf8"
    fmt = minifloat(defs, kind)
    text = ins.modifiers.get("op_sel", "")
    bits = [int(x) for x in text.strip("[]").split(",")] if text else []
    high = bits[2] if len(bits) > 2 else 0
    row = operand(ins.operands[0])
    if row.kind != "v":
        raise Skip(name)
    if name.startswith("cvt_scalef32"):  # op_sel[3] picks the half; no clamp form
        if "clamp" in ins.modifiers:
            raise Skip(name)
        high = bits[3] if len(bits) > 3 else 0
        a, b, scale = (src(text) for text in ins.operands[1:4])
        return f"cvt_scalef32_pk(V({row.index}), {a}, {b}, {scale}, {fmt}, {high}, EXEC64);"
    saturate = int("clamp" in ins.modifiers)
    return (f"cvt_pk_minifloat(V({row.index}), {src(ins.operands[1], 'f32')},"
            f" {src(ins.operands[2], 'f32')}, {fmt}, {saturate}, {high}, EXEC64);")


def cvt_from_fp8(ins, name: str, defs: dict) -> str:
    """v_cvt_f32_fp8/bf8 and v_cvt_pk_f32_fp8/bf8 (valu_forms.cvt_from_minifloat): the byte(s)
    op_sel or SDWA's src0_sel picks, through the format's f32 bits (NaN codes included)."""
    sdwa = ins.mnemonic.endswith("_sdwa")
    allowed = {"src0_sel"} if sdwa else {"op_sel"}
    if set(ins.modifiers) - allowed or ins.mnemonic.endswith("_dpp"):
        raise Skip(name)
    target, source = operand(ins.operands[0]), operand(ins.operands[1])
    if target.kind != "v" or source.kind != "v" or source.neg or source.abs:
        raise Skip(name)
    packed = name.startswith("cvt_pk_")
    kind = "fp8" if "fp8" in name else "bf8"
    values = FORMATS[kind][0].astype(np.float32).view(np.uint32)
    bits = define(defs, f"f32_bits_{kind}", "uint32_t", [f"{int(x)}u" for x in values])
    select = valu_forms.byte_select(ins)
    if packed:
        select = 2 if select >= 1 else 0
    low = f"{bits}[V({source.index})[l] >> {8 * select} & 0xFFu]"
    if not packed:
        return (f"{{ uint32_t t[64]; for (int l = 0; l < 64; l++) t[l] = {low};"
                f" put(V({target.index}), t, EXEC64); }}")
    high = f"{bits}[V({source.index})[l] >> {8 * select + 8} & 0xFFu]"
    return (f"{{ uint32_t t[64], u[64]; for (int l = 0; l < 64; l++) {{ t[l] = {low}; u[l] = {high}; }}"
            f" put(V({target.index}), t, EXEC64); put(V({target.index + 1}), u, EXEC64); }}")
