"""MUBUF buffer_* instructions through a V# (128-bit buffer resource): base, stride, num_records.
Range check per dword on the buffer offset (voffset + inst_offset, soffset not included, as
LLVM's AMDGPUUsage describes the check on voffset): reads out of range give 0, writes are dropped."""
import numpy as np

from .ds import ATOMIC_TYPES, ATOMICS, atomic_update, bytes_to_rows, rows_to_bytes
from .errors import NotEmulated
from .operands import parse, scalar_reader, vector_reader, write_rows
from .vmem import atomic_parts, atomic_rmw, count_bytes, kind_of, lds_dma_target, place_loaded, store_bytes
from .wave import lanes64

U64 = np.uint64


def descriptor(w, index: int):
    """(base, stride, num_records, add_tid) from four SGPRs."""
    d0, d1, d2, d3 = w.s[index:index + 4]
    if d1 >> 31 & 1:
        raise NotEmulated("buffer swizzle_enable")
    return d0 | (d1 & 0xFFFF) << 32, d1 >> 16 & 0x3FFF, d2, d3 >> 23 & 1


def buffer_addressing(ins, address_text: str, resource_text: str, soffset_text: str):
    """fn(wave, lanes, size) -> (addresses of active lanes, per-byte-group in-range mask [n, words])."""
    offen, idxen = "offen" in ins.modifiers, "idxen" in ins.modifiers
    inst_offset = int(ins.modifiers.get("offset", "0"), 0)
    vaddr = parse(address_text)
    resource = parse(resource_text).index
    soffset = scalar_reader(parse(soffset_text))
    index_reader = vector_reader(parse(f"v{vaddr.index}")) if idxen else None
    offset_reader = vector_reader(parse(f"v{vaddr.index + (1 if idxen else 0)}")) if offen else None

    def locate(w, lanes, size):
        base, stride, records, add_tid = descriptor(w, resource)
        count = int(lanes.sum())
        offset = np.full(count, inst_offset, np.int64)
        if offen:
            offset += lanes64(offset_reader(w))[lanes].astype(np.int64)
        index = np.zeros(count, np.int64)
        if idxen:
            index += lanes64(index_reader(w))[lanes].astype(np.int64)
        if add_tid:
            index += np.flatnonzero(lanes)
        chunk = min(size, 4)
        starts = offset[:, None] + np.arange(0, size, chunk)
        if stride == 0 or not (idxen or add_tid):
            in_range = starts + chunk <= records
        else:
            in_range = (index[:, None] < records) & (starts + chunk <= stride)
        addresses = (U64(base + soffset(w)) + (index * stride + offset).astype(U64))
        return addresses, in_range, chunk
    return locate


def expand(in_range: np.ndarray, chunk: int) -> np.ndarray:
    return np.repeat(in_range, chunk, axis=1)


def gather_checked(w, addresses, in_range, chunk, size):
    """Only in-range bytes are read from host memory (and checked against the live regions)."""
    data = np.zeros((len(addresses), size), np.uint8)
    mask = expand(in_range, chunk)
    if mask.all():
        return w.memory.gather(addresses, size, "buffer load")
    for part in range(in_range.shape[1]):
        rows = in_range[:, part]
        if rows.any():
            data[rows, part * chunk:(part + 1) * chunk] = w.memory.gather(
                addresses[rows] + U64(part * chunk), chunk, "buffer load")
    return data


def buffer_load(ins, name):
    fmt, size, is_signed, d16 = kind_of(name)
    to_lds = "lds" in ins.modifiers
    operands = ins.operands if not to_lds else ["v0"] + ins.operands
    destination = parse(operands[0])
    locate = buffer_addressing(ins, operands[1], operands[2], operands[3])
    lds_offset = int(ins.modifiers.get("offset", "0"), 0)

    def run(w):
        lanes = w.exec_mask()
        addresses, in_range, chunk = locate(w, lanes, size)
        data = gather_checked(w, addresses, in_range, chunk, size)
        count_bytes(w, "buffer_load", data.size)
        if to_lds:
            w.lds.write(w.index, lds_dma_target(w, lds_offset, lanes, size), data)
            count_bytes(w, "lds_dma", data.size)
            return
        place_loaded(w, ins, destination, data, lanes, size, is_signed, d16)
    return run


def buffer_store(ins, name):
    fmt, size, _, d16 = kind_of(name)
    source = parse(ins.operands[0])
    locate = buffer_addressing(ins, ins.operands[1], ins.operands[2], ins.operands[3])

    def run(w):
        lanes = w.exec_mask()
        addresses, in_range, chunk = locate(w, lanes, size)
        data = store_bytes(w, source, size, lanes, d16)
        for part in range(in_range.shape[1]):
            rows = in_range[:, part]
            if rows.any():
                w.memory.scatter(addresses[rows] + U64(part * chunk),
                                 data[rows, part * chunk:(part + 1) * chunk], "buffer store")
        count_bytes(w, "buffer_store", data.size)
        w.progress += 1
    return run


def buffer_atomic(ins, name):
    op, kind, size = atomic_parts(ins, name)
    if op != "cmpswap" and (op not in ATOMICS or kind not in ATOMIC_TYPES):
        raise NotEmulated(ins.mnemonic)
    returns = "sc0" in ins.modifiers or "glc" in ins.modifiers
    data_op = parse(ins.operands[0])
    locate = buffer_addressing(ins, ins.operands[1], ins.operands[2], ins.operands[3])
    update = atomic_update(op, kind) if op != "cmpswap" else None
    words = (2 if op == "cmpswap" else 1) * size // 4

    def run(w):
        lanes = w.exec_mask()
        addresses, in_range, _ = locate(w, lanes, size)
        whole = in_range.all(axis=1)
        data = rows_to_bytes(w, data_op.index, words, lanes)
        olds = np.zeros((len(addresses), size), np.uint8)
        olds[whole] = atomic_rmw(w, addresses[whole], data[whole], size, op, update,
                                 lambda a: w.memory.gather(a, size, "atomic"),
                                 lambda a, d: w.memory.scatter(a, d, "atomic"))
        w.progress += 1
        if returns:
            write_rows(w, data_op.index, bytes_to_rows(olds, lanes, size // 4))
    return run


def build(ins, name: str):
    if "format" in name:
        raise NotEmulated(ins.mnemonic)
    if name.startswith("load_"):
        return buffer_load(ins, name)
    if name.startswith("store_"):
        return buffer_store(ins, name)
    if name.startswith("atomic_"):
        return buffer_atomic(ins, name)
    if name in ("wbl2", "inv", "wbinvl1", "wbinvl1_vol"):
        return lambda w: None
    raise NotEmulated(ins.mnemonic)
