"""VOPC: v_cmp_* and v_cmpx_* (which also write EXEC), v_cmp_class_*, as lane masks."""
import numpy as np

from .errors import NotEmulated
from . import dpp
from .operands import EXEC, lane_mask_writer, parse, vector_reader
from .valu import WIDTH, typed, typed_reader
from .wave import BITS_CACHE, FULL, LANES, lanes64, mask_bits

FLOAT_TESTS = {
    "f": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool), "lt": np.less, "eq": np.equal,
    "le": np.less_equal, "gt": np.greater, "lg": lambda a, b: (a < b) | (a > b),
    "ge": np.greater_equal, "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
    "u": lambda a, b: np.isnan(a) | np.isnan(b), "nge": lambda a, b: ~(a >= b),
    "nlg": lambda a, b: ~((a < b) | (a > b)), "ngt": lambda a, b: ~(a > b),
    "nle": lambda a, b: ~(a <= b), "neq": lambda a, b: ~(a == b), "nlt": lambda a, b: ~(a < b),
    "tru": lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
}
INT_TESTS = {"f": FLOAT_TESTS["f"], "lt": np.less, "eq": np.equal, "le": np.less_equal,
             "gt": np.greater, "ne": np.not_equal, "ge": np.greater_equal,
             "t": FLOAT_TESTS["tru"]}


def float_class(value, mask):
    """v_cmp_class: bit k of the mask selects class k (sNaN, qNaN, -inf, -normal, -denormal,
    -0, +0, +denormal, +normal, +inf)."""
    value = np.asarray(value)
    info = np.finfo(value.dtype)
    negative = np.signbit(value)
    magnitude = np.abs(value)
    is_nan = np.isnan(value)
    quiet_bit = {np.float16: 0x200, np.float32: 0x400000, np.float64: 1 << 51}[value.dtype.type]
    unsigned = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[value.dtype.type]
    quiet = (value.view(unsigned) & unsigned(quiet_bit)) != 0
    classes = [is_nan & ~quiet, is_nan & quiet, np.isneginf(value),
               negative & (magnitude >= info.tiny) & np.isfinite(value),
               negative & (magnitude < info.tiny) & (magnitude > 0), negative & (magnitude == 0),
               ~negative & (magnitude == 0), ~negative & (magnitude < info.tiny) & (magnitude > 0),
               ~negative & (magnitude >= info.tiny) & np.isfinite(value), np.isposinf(value)]
    mask = np.asarray(mask).astype(np.int64)
    out = np.zeros(np.broadcast(value, mask).shape, bool)
    for bit, members in enumerate(classes):
        out |= members & ((mask >> bit) & 1).astype(bool)
    return out


def parse_compare(name: str):
    """'cmpx_lt_f32' -> (writes exec, test, type)."""
    parts = name.split("_")
    writes_exec = parts[0] == "cmpx"
    test, kind = parts[1], parts[2]
    if test == "class":
        return writes_exec, "class", kind
    tests = FLOAT_TESTS if kind.startswith("f") else INT_TESTS
    if test not in tests:
        raise NotEmulated("v_" + name)
    return writes_exec, tests[test], kind


def build(ins, name: str):
    writes_exec, test, kind = parse_compare(name)
    operands = [parse(text) for text in ins.operands]
    if len(operands) == 2:
        operands = [parse("vcc")] + operands
    destination, a_op, b_op = operands[:3]
    width = WIDTH[kind]
    read_a = typed_reader(a_op, kind)
    if test == "class":
        read_b = typed_reader(b_op, "u32", is_float=kind.startswith("f"))
        test = float_class
    else:
        read_b = typed_reader(b_op, kind, width=16 if width == 16 else width)
    if ins.mnemonic.endswith("_sdwa") and test is not float_class:  # src0_sel / src1_sel
        read_a, read_b = (sdwa_reader(ins, at, op, kind) for at, op in enumerate((a_op, b_op)))
    write = lane_mask_writer(destination)
    if not writes_exec and destination.kind == "s" and destination.count == 2:
        return compare_to_pair(test, read_a, read_b, destination.index, write)
    if not writes_exec:
        return lambda w: write(w, test(read_a(w), read_b(w)))  # run_kernel ignores fp errors

    def run(w):
        lanes = lanes64(test(read_a(w), read_b(w)))
        if w.s[EXEC] != FULL or w.s[EXEC + 1] != FULL:
            lanes = lanes & w.exec_mask()
        bits = mask_bits(lanes)
        write(w, lanes)
        w.s[EXEC], w.s[EXEC + 1] = bits & 0xFFFFFFFF, bits >> 32
    return run


def sdwa_reader(ins, at: int, operand, kind: str):
    """An SDWA source: the selected byte or word of the dword, then the compare's type."""
    read = vector_reader(operand, 16 if WIDTH[kind] == 16 else 32, kind.startswith("f"))  # as valu.py
    read = dpp.sdwa_source(read, ins.modifiers.get(f"src{at}_sel", "DWORD"), operand.sext)
    return lambda w: typed(read(w), kind)


def compare_to_pair(test, read_a, read_b, index, write):
    """v_cmp into an SGPR pair, the usual case inline: EXEC all ones, a lane mask seen before."""
    def run(w):
        lanes = test(read_a(w), read_b(w))  # run_kernel ignores fp errors
        s = w.s
        if s[EXEC] == FULL and s[EXEC + 1] == FULL and lanes.size == LANES:
            bits = BITS_CACHE.get(lanes.tobytes())
            if bits is not None:
                s[index], s[index + 1] = bits & FULL, bits >> 32
                return
        write(w, lanes)
    return run
