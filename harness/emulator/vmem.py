"""Vector memory: global_*, flat_* (global, the LDS or the private aperture), buffer_* (MUBUF
with the V# range check), their atomics, and LDS-DMA (global_load_lds_*, buffer_load_* lds)."""
import numpy as np

from .ds import ATOMIC_TYPES, ATOMICS, atomic_update, bytes_to_rows, rows_to_bytes, widen
from .errors import NotEmulated
from .operands import PRIVATE_APERTURE, SHARED_APERTURE, parse, scalar_reader, vector_reader, write_rows
from .wave import M0, lanes64

SIZES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "ubyte": 1, "sbyte": 1,
         "ushort": 2, "sshort": 2, "byte": 1, "short": 2}
U64 = np.uint64
APERTURE_NAMES = {SHARED_APERTURE >> 32: "lds", PRIVATE_APERTURE >> 32: "private"}
LOW_WORD = U64(0xFFFFFFFF)


def kind_of(name: str) -> tuple[str, int, bool, str]:
    """'load_ubyte_d16_hi' -> (format word, bytes, signed, d16 part '' / 'lo' / 'hi')."""
    words = name.split("_")
    fmt = words[1] if words[1] != "lds" else words[2]
    d16 = "hi" if name.endswith("d16_hi") else ("lo" if "d16" in name else "")
    return fmt, SIZES[fmt], fmt.startswith("s") and fmt != "short", d16


def global_address(ins, address_text: str, base_text: str):
    """fn(wave) -> uint64 addresses: a 64-bit vaddr ('off' base), or saddr + 32-bit voffset."""
    offset = int(ins.modifiers.get("offset", "0"), 0)
    base = parse(base_text) if base_text else parse("off")
    vaddr = parse(address_text)
    if base.kind == "null":
        read = vector_reader(vaddr, 64)
        return lambda w: lanes64(read(w)).astype(U64) + U64(offset & 0xFFFFFFFFFFFFFFFF)
    read_base, read_offset = scalar_reader(base, 64), vector_reader(vaddr)
    if vaddr.kind == "null":
        return lambda w: np.full(64, read_base(w) + offset, U64)
    return lambda w: U64(read_base(w) + offset) + lanes64(read_offset(w)).astype(U64)


def place_loaded(w, ins, destination, data, lanes, size, is_signed, d16):
    count = max(size // 4, 1)
    if size >= 4:
        write_rows(w, destination.index, bytes_to_rows(data, lanes, count))
        return
    value = np.zeros(64, np.uint32)
    value[lanes] = widen(data, size, is_signed)
    if d16:
        old = w.v[destination.index]
        value = (old & np.uint32(0xFFFF)) | (value << np.uint32(16)) if d16 == "hi" else \
            (old & np.uint32(0xFFFF0000)) | (value & np.uint32(0xFFFF))
    write_rows(w, destination.index, value)


def store_bytes(w, source, size, lanes, d16):
    data = rows_to_bytes(w, source.index, max(size // 4, 1), lanes)
    if size < 4:
        data = data[:, 2:2 + size] if d16 == "hi" else data[:, :size]
    return data


def count_bytes(w, kind, n):
    w.bytes_moved[kind] = w.bytes_moved.get(kind, 0) + n


def flat_aperture(addresses: np.ndarray, what: str) -> str:
    """'lds', 'private' or 'global': where every active lane's flat address lies."""
    if not len(addresses):
        return "lds"  # no lane: nothing moves (and no region to look up)
    top = addresses >> U64(32)
    first = int(top[0])
    name = APERTURE_NAMES.get(first, "global")
    # host addresses lie below 2^47, our apertures at 2^48 and up (operands.py)
    mixed = top != U64(first) if name != "global" else top >= U64(SHARED_APERTURE >> 32)
    if mixed.any():
        raise NotEmulated(f"flat {what} mixing apertures (LDS, private, global) across lanes")
    return name


def global_load(ins, name, flat: bool):
    fmt, size, is_signed, d16 = kind_of(name)
    destination = parse(ins.operands[0])
    address = global_address(ins, ins.operands[1], None if flat else ins.operands[2])

    def run(w):
        lanes = w.exec_mask()
        addresses = address(w)[lanes]
        aperture = flat_aperture(addresses, "load") if flat else "global"
        if aperture == "lds":
            data = w.lds.read(w.index, (addresses & LOW_WORD).astype(np.int64), size)
        elif aperture == "private":  # the lane's private offset in the wave's scratch (scratch.py)
            offsets = (addresses & LOW_WORD).astype(np.int64)
            data = w.scratch.read(np.flatnonzero(lanes), offsets, size, "flat load")
        else:
            data = w.memory.gather(addresses, size, "load")
            count_bytes(w, "global_load", data.size)
        place_loaded(w, ins, destination, data, lanes, size, is_signed, d16)
    return run


def global_store(ins, name, flat: bool):
    fmt, size, _, d16 = kind_of(name)
    source = parse(ins.operands[1])
    address = global_address(ins, ins.operands[0], None if flat else ins.operands[2])

    def run(w):
        lanes = w.exec_mask()
        addresses = address(w)[lanes]
        data = store_bytes(w, source, size, lanes, d16)
        aperture = flat_aperture(addresses, "store") if flat else "global"
        if aperture == "lds":
            w.lds.write(w.index, (addresses & LOW_WORD).astype(np.int64), data)
        elif aperture == "private":
            offsets = (addresses & LOW_WORD).astype(np.int64)
            w.scratch.write(np.flatnonzero(lanes), offsets, data, "flat store")
        else:
            w.memory.scatter(addresses, data, "store")
            count_bytes(w, "global_store", data.size)
            w.progress += 1
    return run


def lds_dma_target(w, offset: int, lanes, size: int):
    """Where LDS-DMA puts each active lane's bytes: M0[17:0] + offset + lane * size."""
    return (w.s[M0] & 0x3FFFF) + offset + np.flatnonzero(lanes) * size


def lds_dma(ins, name):
    """global_load_lds_*: each lane's bytes land in LDS at M0 + offset + lane * size."""
    fmt, size, _, _ = kind_of(name)
    address = global_address(ins, ins.operands[0], ins.operands[1])
    offset = int(ins.modifiers.get("offset", "0"), 0)

    def run(w):
        lanes = w.exec_mask()
        data = w.memory.gather(address(w)[lanes], size, "load")
        w.lds.write(w.index, lds_dma_target(w, offset, lanes, size), data)
        count_bytes(w, "global_load", data.size)
        count_bytes(w, "lds_dma", data.size)
    return run


def atomic_parts(ins, name):
    """'atomic_add_f32' / 'atomic_cmpswap_x2' -> (op, type, size); returning if it has 4 operands."""
    words = name.split("_")[1:]
    wide = words[-1] == "x2"
    if wide:
        words = words[:-1]
    op = words[0]
    kind = {"smin": "i", "smax": "i", "umin": "u", "umax": "u"}.get(op, "u")
    if len(words) > 1 and words[-1] in ("f32", "f64"):
        kind = words[-1][0]
    elif len(words) > 1 and words[-1] in ("f16", "bf16"):
        raise NotEmulated(ins.mnemonic)
    op = {"smin": "min", "umin": "min", "smax": "max", "umax": "max", "swap": "wrxchg"}.get(op, op)
    size = 8 if wide or kind == "f" and words[-1] == "f64" else 4
    return op, f"{kind}{8 * size}" if kind != "f" else words[-1], size


def atomic_rmw(w, addresses, data, size, op, update, memory_read, memory_write):
    """Lanes in order; returns the old values [n, size] bytes."""
    word = np.uint64 if size == 8 else np.uint32
    olds = np.zeros((len(addresses), size), np.uint8)
    for at, address in enumerate(addresses):
        here = addresses[at:at + 1]
        old = memory_read(here)
        olds[at] = old[0]
        if op == "cmpswap":
            source, compare = data[at:at + 1, :size].view(word), data[at:at + 1, size:].view(word)
            new = source if old.view(word)[0, 0] == compare[0, 0] else old.view(word)
        else:
            new = update(old.view(word), data[at:at + 1].view(word))
        memory_write(here, np.asarray(new).view(np.uint8).reshape(1, size))
    return olds


def global_atomic(ins, name, flat: bool):
    op, kind, size = atomic_parts(ins, name)
    returns = len(ins.operands) == (3 if flat else 4)
    operands = ins.operands[1:] if returns else ins.operands
    destination = parse(ins.operands[0]) if returns else None
    address = global_address(ins, operands[0], None if flat else operands[2])
    source = parse(operands[1])
    if op != "cmpswap" and (op not in ATOMICS or kind not in ATOMIC_TYPES):
        raise NotEmulated(ins.mnemonic)
    update = atomic_update(op, kind) if op != "cmpswap" else None
    words = (2 if op == "cmpswap" else 1) * size // 4

    def run(w):
        lanes = w.exec_mask()
        addresses = address(w)[lanes]
        if flat and flat_aperture(addresses, "atomic") != "global":
            raise NotEmulated(f"{ins.mnemonic} into the LDS or private aperture")
        data = rows_to_bytes(w, source.index, words, lanes)
        olds = atomic_rmw(w, addresses, data, size, op, update,
                          lambda a: w.memory.gather(a, size, "atomic"),
                          lambda a, d: w.memory.scatter(a, d, "atomic"))
        w.progress += 1
        count_bytes(w, "global_atomic", olds.size)
        if destination is not None:
            write_rows(w, destination.index, bytes_to_rows(olds, lanes, size // 4))
    return run


def build(ins, name: str, family: str):
    flat = family == "flat"
    if name.startswith("load_lds_"):
        return lds_dma(ins, name)
    if name.startswith("load_"):
        return global_load(ins, name, flat)
    if name.startswith("store_"):
        return global_store(ins, name, flat)
    if name.startswith("atomic_"):
        return global_atomic(ins, name, flat)
    raise NotEmulated(ins.mnemonic)
