"""Scalar memory: s_load_dword*, s_buffer_load_dword* (range-checked like a V#), s_memtime."""
import numpy as np

from .errors import NotEmulated
from .operands import parse, scalar_reader

SIZES = {"dword": 1, "dwordx2": 2, "dwordx4": 4, "dwordx8": 8, "dwordx16": 16}


def offset_reader(ins, operand_text: str | None):
    """The immediate or SGPR offset (with an extra 'offset:' immediate when both are given)."""
    extra = int(ins.modifiers.get("offset", "0"), 0)
    if operand_text is None:
        return lambda w: extra
    read = scalar_reader(parse(operand_text))
    return lambda w: read(w) + extra


def s_load(ins, name):
    words = SIZES[name.split("_")[1]]
    destination = parse(ins.operands[0]).index
    base = scalar_reader(parse(ins.operands[1]), 64)
    offset = offset_reader(ins, ins.operands[2] if len(ins.operands) > 2 else None)

    def run(w):
        address = (base(w) + offset(w)) & ~3
        data = w.memory.gather(np.array([address], np.uint64), 4 * words, "scalar load")
        w.s[destination:destination + words] = data.view(np.uint32)[0].tolist()
        w.bytes_moved["scalar_load"] = w.bytes_moved.get("scalar_load", 0) + 4 * words
    return run


def s_buffer_load(ins, name):
    words = SIZES[name.split("_")[2]]
    destination = parse(ins.operands[0]).index
    resource = parse(ins.operands[1]).index
    offset = offset_reader(ins, ins.operands[2] if len(ins.operands) > 2 else None)

    def run(w):
        d0, d1, d2 = w.s[resource:resource + 3]
        base, records = d0 | (d1 & 0xFFFF) << 32, d2
        start = offset(w) & ~3
        values = [0] * words
        valid = [k for k in range(words) if start + 4 * k + 4 <= records]
        if valid:
            data = w.memory.gather(np.array([base + start], np.uint64), 4 * (valid[-1] + 1),
                                   "scalar buffer load").view(np.uint32)[0]
            for k in valid:
                values[k] = int(data[k])
        w.s[destination:destination + words] = values
    return run


def build(ins, name):
    if name.startswith("load_dword"):
        return s_load(ins, name)
    if name.startswith("buffer_load_dword"):
        return s_buffer_load(ins, name)
    if name in ("memtime", "memrealtime"):
        destination = parse(ins.operands[0]).index

        def clock(w):
            w.s[destination], w.s[destination + 1] = w.clock & 0xFFFFFFFF, w.clock >> 32
        return clock
    raise NotEmulated(ins.mnemonic)
