"""DS (LDS) instructions: reads, writes, read2/write2, atomics, ds_bpermute/permute, ds_swizzle."""
import numpy as np

from .errors import NotEmulated
from .operands import ALL_LANES, active_lanes, full_exec, parse, vector_reader, write_rows
from .wave import lanes64

SIZES = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2, "b32": 4, "b64": 8,
         "b96": 12, "b128": 16}
LANE = np.arange(64)


def rows_to_bytes(w, index: int, count: int, lanes) -> np.ndarray:
    """VGPRs index.. as bytes per active lane [n, 4*count]."""
    return np.ascontiguousarray(w.v[index:index + count, lanes].T).view(np.uint8)


def bytes_to_rows(data: np.ndarray, lanes, count: int) -> np.ndarray:
    """Bytes [n, 4*count] back to rows [count, 64] (inactive lanes 0, masked when written)."""
    if lanes is ALL_LANES:  # every lane: a view, copied when written
        return np.ascontiguousarray(data).view(np.uint32).reshape(64, count).T
    rows = np.zeros((count, 64), np.uint32)
    rows[:, lanes] = np.ascontiguousarray(data).view(np.uint32).reshape(-1, count).T
    return rows


def widen(data: np.ndarray, size: int, is_signed: bool) -> np.ndarray:
    """1- or 2-byte values [n, size] to uint32 [n], zero- or sign-extended."""
    value = data[:, 0].astype(np.uint32)
    if size == 2:
        value |= data[:, 1].astype(np.uint32) << np.uint32(8)
    if is_signed:
        top = np.uint32(1 << (8 * size - 1))
        value = (value ^ top) - top
    return value


def ds_base(ins, address_operand):
    read_address = vector_reader(parse(address_operand))
    offset = int(ins.modifiers.get("offset", "0"), 0)

    def base(w, lanes):
        return lanes64(read_address(w))[lanes].astype(np.int64) + offset
    return base


def count_bytes(w, kind, n):
    w.bytes_moved[kind] = w.bytes_moved.get(kind, 0) + n


def ds_read(ins, name):
    kind = name.split("_")[1]
    size = SIZES[kind]
    destination = parse(ins.operands[0])
    base = ds_base(ins, ins.operands[1])
    d16 = "d16" in name
    high = name.endswith("_hi")

    def run(w):
        lanes = active_lanes(w)
        data = w.lds.read(w.index, base(w, lanes), size)
        count_bytes(w, "lds_read", data.size)
        if size >= 4:
            write_rows(w, destination.index, bytes_to_rows(data, lanes, size // 4))
            return
        value = np.zeros(64, np.uint32)
        value[lanes] = widen(data, size, kind.startswith("i"))
        if d16:
            old = w.v[destination.index]
            value = (old & np.uint32(0xFFFF)) | (value << np.uint32(16)) if high else \
                (old & np.uint32(0xFFFF0000)) | (value & np.uint32(0xFFFF))
        write_rows(w, destination.index, value)
    return run


def ds_write(ins, name):
    kind = name.split("_")[1]
    size = SIZES[kind]
    base = ds_base(ins, ins.operands[0])
    source = parse(ins.operands[1])
    high = name.endswith("_d16_hi")

    def run(w):
        lanes = active_lanes(w)
        data = rows_to_bytes(w, source.index, max(size // 4, 1), lanes)
        if size < 4:
            data = data[:, 2:2 + size] if high else data[:, :size]
        w.lds.write(w.index, base(w, lanes), data)
        count_bytes(w, "lds_write", data.size)
    return run


def ds_pair(ins, name, reading: bool):
    """ds_read2/write2(_st64)_b32/b64: two accesses at offset0 and offset1 (scaled by the size,
    times 64 for st64)."""
    size = 8 if name.endswith("b64") else 4
    scale = size * (64 if "st64" in name else 1)
    offsets = [int(ins.modifiers.get(f"offset{k}", "0"), 0) * scale for k in (0, 1)]
    words = size // 4
    if reading:
        destination = parse(ins.operands[0])
        read_address = vector_reader(parse(ins.operands[1]))
    else:
        read_address = vector_reader(parse(ins.operands[0]))
        sources = [parse(ins.operands[1]), parse(ins.operands[2])]

    def run(w):
        lanes = active_lanes(w)
        address = lanes64(read_address(w))[lanes].astype(np.int64)
        if reading:
            parts = [w.lds.read(w.index, address + off, size) for off in offsets]
            write_rows(w, destination.index, bytes_to_rows(np.concatenate(parts, axis=1), lanes, 2 * words))
            count_bytes(w, "lds_read", 2 * size * len(address))
            return
        for off, source in zip(offsets, sources):
            w.lds.write(w.index, address + off, rows_to_bytes(w, source.index, words, lanes))
        count_bytes(w, "lds_write", 2 * size * len(address))
    return run


ATOMICS = {
    "add": lambda old, x: old + x, "sub": lambda old, x: old - x, "rsub": lambda old, x: x - old,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "min": np.minimum, "max": np.maximum, "wrxchg": lambda old, x: x,
    "inc": lambda old, x: np.where(old >= x, 0, old + 1),
    "dec": lambda old, x: np.where((old == 0) | (old > x), x, old - 1),
}
ATOMIC_TYPES = {"u32": np.uint32, "i32": np.int32, "f32": np.float32, "b32": np.uint32,
                "u64": np.uint64, "i64": np.int64, "f64": np.float64, "b64": np.uint64}


def atomic_update(op: str, kind: str):
    """fn(old raw words, data raw words) -> new raw words, per lane, in the atomic's type."""
    dtype = ATOMIC_TYPES[kind]
    fn = ATOMICS[op]

    def update(old, data):
        result = fn(old.view(dtype), data.view(dtype))
        return np.asarray(result).astype(dtype).view(old.dtype)
    return update


def ds_atomic(ins, name):
    """ds_<op>[_rtn]_<type>: lanes in order, each a read-modify-write (so equal addresses add up)."""
    parts = name.split("_")
    returns = "rtn" in parts
    op, kind = parts[0], parts[-1]
    if op not in ATOMICS or kind not in ATOMIC_TYPES:
        raise NotEmulated(ins.mnemonic)
    size = 8 if kind.endswith("64") else 4
    operands = ins.operands[1:] if returns else ins.operands
    destination = parse(ins.operands[0]) if returns else None
    base = ds_base(ins, operands[0])
    source = parse(operands[1])
    update = atomic_update(op, kind)
    word = np.uint64 if size == 8 else np.uint32

    def run(w):
        lanes = w.exec_mask()
        addresses = base(w, lanes)
        data = rows_to_bytes(w, source.index, size // 4, lanes)
        old_all = np.zeros((len(addresses), size), np.uint8)
        for at, address in enumerate(addresses):
            here = np.array([address])
            old = w.lds.read(w.index, here, size, atomic=True)
            old_all[at] = old[0]
            new = update(old.view(word), data[at:at + 1].view(word))
            w.lds.write(w.index, here, new.view(np.uint8).reshape(1, size), atomic=True)
        if returns:
            write_rows(w, destination.index, bytes_to_rows(old_all, lanes, size // 4))
    return run


def ds_permute(ins, name):
    """ds_bpermute_b32 (pull: lane i reads lane addr/4) and ds_permute_b32 (push)."""
    destination, address_op, source = (parse(t) for t in ins.operands)
    read_address = vector_reader(address_op)
    offset = int(ins.modifiers.get("offset", "0"), 0)
    pull = name.startswith("bpermute")

    def run(w):
        if pull and full_exec(w):  # a gather; a 32-bit wrap of the sum keeps the lane bits
            chosen = ((lanes64(read_address(w)) + np.uint32(offset)) >> np.uint32(2)) & np.uint32(63)
            write_rows(w, destination.index, w.v[source.index][chosen])
            return
        lanes = w.exec_mask()
        chosen = ((lanes64(read_address(w)).astype(np.int64) + offset) // 4) % 64
        data = w.v[source.index]
        out = np.zeros(64, np.uint32)
        if pull:
            out = np.where(lanes[chosen], data[chosen], np.uint32(0))
        else:
            for lane in np.flatnonzero(lanes):
                out[chosen[lane]] = data[lane]
        write_rows(w, destination.index, out)
    return run


def swizzle_lanes(offset: int) -> np.ndarray:
    if offset & 0x8000:
        selects = np.array([(offset >> (2 * k)) & 3 for k in range(4)])
        return LANE - LANE % 4 + selects[LANE % 4]
    and_mask, or_mask, xor_mask = offset & 0x1F, offset >> 5 & 0x1F, offset >> 10 & 0x1F
    group = LANE & ~0x1F
    return group | ((((LANE & 0x1F) & and_mask) | or_mask) ^ xor_mask)


def ds_swizzle(ins, name):
    """ds_swizzle_b32 from its raw 16-bit offset field (quad-perm or bitmask mode)."""
    destination, source = parse(ins.operands[0]), parse(ins.operands[1])
    chosen = swizzle_lanes(ins.words[0] & 0xFFFF)

    def run(w):
        lanes = w.exec_mask()
        data = w.v[source.index]
        write_rows(w, destination.index, np.where(lanes[chosen], data[chosen], np.uint32(0)))
    return run


def build(ins, name):
    if "gds" in ins.modifiers:
        raise NotEmulated(ins.mnemonic + " gds")
    if name.startswith(("read2", "write2")):
        return ds_pair(ins, name, name.startswith("read2"))
    if name.startswith("read_") and "tr_" not in name and "addtid" not in name:
        return ds_read(ins, name)
    if name.startswith("write_") and "addtid" not in name:
        return ds_write(ins, name)
    if name in ("bpermute_b32", "permute_b32"):
        return ds_permute(ins, name)
    if name == "swizzle_b32":
        return ds_swizzle(ins, name)
    if name == "nop":
        return lambda w: None
    return ds_atomic(ins, name)
