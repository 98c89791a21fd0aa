"""VOP1/VOP2/VOP3 (and their DPP and SDWA forms) for the elementwise opcodes of valu_ops.py."""
import numpy as np

from . import dpp
from .errors import NotEmulated
from .operands import parse, vector_reader, vector_writer
from .wave import EXEC, FULL
from .valu_ops import OPS

WIDTH = {"f16": 16, "u16": 16, "i16": 16, "b16": 16, "f32": 32, "u32": 32, "i32": 32,
         "b32": 32, "f64": 64, "u64": 64, "i64": 64, "b64": 64}
VIEW = {"f16": np.float16, "i16": np.int16, "u16": np.uint16, "b16": np.uint16, "f32": np.float32,
        "i32": np.int32, "f64": np.float64, "i64": np.int64}
ACCUMULATE = ("fmac_", "mac_", "dot2c_", "pk_fmac_")
SUFFIXES = ("_e32", "_e64", "_dpp", "_sdwa")


def base_name(mnemonic: str) -> str:
    """'v_add_f32_e64' -> 'add_f32'."""
    name = mnemonic[2:] if mnemonic.startswith("v_") else mnemonic
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def bits(text: str | None, count: int = 4) -> list[int]:
    """'[0,1,1]' -> [0, 1, 1, 0] (op_sel, neg_lo and friends)."""
    if not text:
        return [0] * count
    values = [int(x) for x in text.strip("[]").split(",")]
    return values + [0] * (count - len(values))


def op_sel(modifiers: dict, sources: int) -> tuple[list[int], int]:
    """VOP3 op_sel as printed: one bit per source, then the destination's bit last."""
    text = modifiers.get("op_sel")
    if not text:
        return [0] * 4, 0
    values = [int(x) for x in text.strip("[]").split(",")]
    destination = values[sources] if len(values) > sources else 0
    return values[:sources] + [0] * (4 - sources), destination


def typed(raw, kind: str, high: bool = False):
    """Raw lane bits as the operand type's numpy values."""
    width = WIDTH[kind]
    if width == 16:
        half = (raw >> np.uint32(16)) if high else raw
        half = np.asarray(half & np.uint32(0xFFFF)).astype(np.uint16)
        return half.view(VIEW[kind]) if kind in VIEW else half
    raw = np.asarray(raw)
    return raw.view(VIEW[kind]) if kind in VIEW else raw


def typed_reader(operand, kind: str, high: bool = False, width: int | None = None,
                 is_float: bool | None = None):
    """fn(wave) -> the operand as kind's numpy values: what typed(vector_reader(...)(w)) gives,
    with a plain 32-bit register as a view of its row and a constant typed once."""
    bits = WIDTH[kind]
    width = width or (16 if bits == 16 else 64 if bits == 64 else 32)
    is_float = kind.startswith("f") if is_float is None else is_float
    read = vector_reader(operand, width, is_float)
    if operand.kind == "const":
        value = typed(read(None), kind, high)  # a constant's reader never looks at the wave
        value.flags.writeable = False
        return lambda w: value
    if operand.kind == "v" and bits == 32 and width == 32 and not (operand.neg or operand.abs):
        row, dtype = operand.index, np.dtype(VIEW.get(kind, np.uint32))
        if dtype == np.float32:  # the register file seen as that type
            return lambda w: w.f32[row]
        if dtype == np.int32:
            return lambda w: w.i32[row]
        return lambda w: w.views[dtype][row]
    if operand.kind == "s" and bits == 32 and width == 32 and not (operand.neg or operand.abs):
        return sgpr_reader(operand.index, kind)
    return lambda w: typed(read(w), kind, high)


def sgpr_reader(index: int, kind: str):
    """An SGPR as a typed 0-d array; kernels reuse few values, so each is built once."""
    cache: dict[int, np.ndarray] = {}

    def read(w):
        value = w.s[index]
        typed_value = cache.get(value)
        if typed_value is None:
            typed_value = typed(np.uint32(value), kind)
            typed_value.flags.writeable = False
            if len(cache) < 256:
                cache[value] = typed_value
        return typed_value
    return read


def raw_of(value, kind: str):
    """A typed result back to lane bits (uint32, or uint64 for 64-bit types)."""
    value = np.asarray(value)
    width = WIDTH[kind]
    if kind.startswith("f"):
        floating = {16: np.float16, 32: np.float32, 64: np.float64}[width]
        unsigned = {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
        value = value.astype(floating, copy=False).view(unsigned)
        return value.astype(np.uint32) if width == 16 else value
    if width == 64:
        return value.astype(np.int64, copy=False).view(np.uint64) if value.dtype.kind == "i" \
            else value.astype(np.uint64, copy=False)
    if value.dtype == np.uint32:
        return value
    if value.dtype == np.int32:
        return value.view(np.uint32)
    masked = value.astype(np.int64) & (0xFFFF if width == 16 else 0xFFFFFFFF)
    return masked.astype(np.uint32)


def raw_converter(kind: str):
    """raw_of for one result type, with the common case (already that type) first."""
    dtype = {"f32": np.float32, "i32": np.int32, "u32": np.uint32, "b32": np.uint32}.get(kind)
    if dtype is None:
        return lambda value: raw_of(value, kind)
    dtype = np.dtype(dtype)

    def to_raw(value):
        if type(value) is np.ndarray and value.dtype is dtype:
            return value.view(np.uint32)
        return raw_of(value, kind)
    return to_raw


def applied(fn, readers):
    """fn(wave) -> fn of the sources' values, unrolled by arity (this runs per instruction)."""
    if len(readers) == 1:
        (a,) = readers
        return lambda w: fn(a(w))
    if len(readers) == 2:
        a, b = readers
        return lambda w: fn(a(w), b(w))
    if len(readers) == 3:
        a, b, c = readers
        return lambda w: fn(a(w), b(w), c(w))
    return lambda w: fn(*[read(w) for read in readers])


def one_type_ufunc(fn, result_kind: str, kinds) -> bool:
    """A numpy ufunc whose sources and result share one 32-bit type (it can write a row itself)."""
    dtype = VIEW.get(result_kind, np.uint32)
    return (isinstance(fn, np.ufunc) and fn.nout == 1 and fn.nin == len(kinds) <= 2
            and all(WIDTH[k] == 32 and VIEW.get(k, np.uint32) is dtype for k in [result_kind, *kinds]))


def ufunc_into(fn, readers, row: int, kind: str, slow):
    """Under EXEC all ones the ufunc writes the destination row in place (out=)."""
    dtype = np.dtype(VIEW.get(kind, np.uint32))
    if len(readers) == 1:
        (a,) = readers
        into = lambda w, out: fn(a(w), out=out)  # noqa: E731
    else:
        a, b = readers
        into = lambda w, out: fn(a(w), b(w), out=out)  # noqa: E731

    def run(w):
        s = w.s
        if s[EXEC] == FULL and s[EXEC + 1] == FULL:
            into(w, w.views[dtype][row])
        else:
            slow(w)
    return run


def output_modifiers(modifiers: dict, kind: str):
    """clamp and omod (mul:2, mul:4, div:2) on float results."""
    scale = {"mul": {"2": 2.0, "4": 4.0}, "div": {"2": 0.5}}
    factor = 1.0
    for key in ("mul", "div"):
        if key in modifiers:
            factor = scale[key][modifiers[key]]
    clamp = "clamp" in modifiers
    if not clamp and factor == 1.0:
        return None
    if not kind.startswith("f"):
        if clamp:
            raise NotEmulated("integer clamp")
        return None
    dtype = VIEW[kind]

    def apply(value):
        value = np.asarray(value).astype(dtype) * dtype(factor)
        if not clamp:
            return value
        # DX10_CLAMP (on for compute kernels): clamp takes NaN to 0
        return np.where(np.isnan(value), dtype(0), np.clip(value, dtype(0), dtype(1)))
    return apply


def source_readers(ins, sources, kinds, opsel):
    readers = []
    for at, (operand, kind) in enumerate(zip(sources, kinds)):
        width = 64 if WIDTH[kind] == 64 else 32
        read = vector_reader(operand, 16 if WIDTH[kind] == 16 else width, kind.startswith("f"))
        if ins.mnemonic.endswith("_sdwa") and at < 2:
            selector = ins.modifiers.get(f"src{at}_sel", "DWORD")
            read = dpp.sdwa_source(read, selector, operand.sext)
        readers.append((read, kind, bool(opsel[at]) if at < 3 else False))
    return readers


def build(ins, name: str):
    result_kind, kinds, fn = OPS[name]
    operands = [parse(text) for text in ins.operands]
    destination, sources = operands[0], operands[1:]
    if len(sources) == len(kinds) - 1 and name.startswith(ACCUMULATE):
        sources = sources + [destination]
    if len(sources) != len(kinds):
        raise NotEmulated(ins.mnemonic, detail=f"{len(sources)} operands")
    opsel, destination_high = op_sel(ins.modifiers, len(ins.operands) - 1)
    readers = source_readers(ins, sources, kinds, opsel)
    write_mask = None
    if ins.mnemonic.endswith("_dpp"):
        read0, write_mask = dpp.dpp_source(readers[0][0], ins.modifiers)
        readers[0] = (read0,) + readers[0][1:]
    post = output_modifiers(ins.modifiers, result_kind)
    store = result_store(ins, destination, result_kind, destination_high)
    if post is None and write_mask is None and not ins.mnemonic.endswith(("_sdwa", "_dpp")):
        typed_readers = [typed_reader(op, kind, high) for op, (_, kind, high) in zip(sources, readers)]
        compute, to_raw = applied(fn, typed_readers), raw_converter(result_kind)
        slow = lambda w: store(w, to_raw(compute(w)), None)  # noqa: E731
        if destination.kind == "v" and one_type_ufunc(fn, result_kind, kinds):
            return ufunc_into(fn, typed_readers, destination.index, result_kind, slow)
        return slow

    def run(w):
        values = [typed(read(w), kind, high) for read, kind, high in readers]
        result = fn(*values)
        if post is not None:
            result = post(result)
        store(w, raw_of(result, result_kind), None if write_mask is None else write_mask(w))
    return run


def result_store(ins, destination, kind: str, high: bool):
    """fn(wave, raw, mask): 16-bit results go to the low half (or high with op_sel), SDWA merges."""
    write = vector_writer(destination, 64 if WIDTH[kind] == 64 else 32)
    if ins.mnemonic.endswith("_sdwa"):
        merge = dpp.sdwa_merge(ins.modifiers.get("dst_sel", "DWORD"),
                               ins.modifiers.get("dst_unused", "UNUSED_PRESERVE"))
        row = destination.index
        return lambda w, raw, mask: write(w, merge(raw, w.v[row]), mask)
    if WIDTH[kind] == 16 and destination.kind == "v":
        row = destination.index
        if high:
            return lambda w, raw, mask: write(
                w, (w.v[row] & np.uint32(0xFFFF)) | (raw << np.uint32(16)), mask)
        return lambda w, raw, mask: write(w, raw & np.uint32(0xFFFF), mask)
    return write
