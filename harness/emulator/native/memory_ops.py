"""C for the common memory instructions: global_load/store_dword(x2/x4), ds_read/write (b32, b64,
b128, read2/write2), ds_bpermute_b32. Bounds and the LDS race are checked in C first, before
anything changes; a lane that fails hands the instruction to its numpy executor, which raises
the fault with its own words (so the checkers read the same on both paths)."""
from .scalar import Skip, operand, sread


def row_of(text: str) -> int:
    row = operand(text)
    if row.kind != "v":
        raise Skip(text)
    return row.index

GLOBAL_SIZES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}
BUFFER_STORES = {"store_dword": 4, "store_dwordx2": 8, "store_dwordx3": 12, "store_dwordx4": 16,
                 "store_short": 2, "store_byte": 1}
SMALL_LOADS = {"ubyte": (1, 0), "sbyte": (1, 1), "ushort": (2, 0), "sshort": (2, 1)}
DS_SIZES = {"b32": 4, "b64": 8, "b128": 16}
WRITE_SIZES = {"b8": 1, "b16": 2, **DS_SIZES}


def global_address(ins, address_text: str, base_text: str) -> str:
    """C arguments for the lanes' 64-bit addresses (vmem.global_address): base, offset, and the
    address row (a 64-bit pair when there is no SGPR base: its high row, else NULL)."""
    offset = int(ins.modifiers.get("offset", "0"), 0) & 0xFFFFFFFFFFFFFFFF
    vaddr = operand(address_text)
    if vaddr.kind != "v":
        raise Skip(address_text)
    if operand(base_text).kind == "null":
        return f"0ull, {offset}ull, V({vaddr.index}), V({vaddr.index + 1})"
    return f"{sread(base_text, 64)}, {offset}ull, V({vaddr.index}), NULL"


def only(ins, allowed) -> None:
    if set(ins.modifiers) - set(allowed):
        raise Skip(ins.mnemonic)


def global_op(ins, name):
    parts = name.split("_")
    if len(parts) == 2 and parts[0] == "load" and parts[1] in SMALL_LOADS and len(ins.operands) == 3:
        only(ins, ("offset",))
        size, is_signed = SMALL_LOADS[parts[1]]
        address = global_address(ins, ins.operands[1], ins.operands[2])
        return (f"if (!global_load_small(st, {address}, V({row_of(ins.operands[0])}), {size},"
                f" {is_signed}, EXEC64)) FALLBACK;")
    if len(parts) != 2 or parts[1] not in GLOBAL_SIZES or len(ins.operands) != 3:
        raise Skip(name)
    only(ins, ("offset",))
    words = GLOBAL_SIZES[parts[1]] // 4
    if parts[0] == "load":
        row = operand(ins.operands[0])
        address = global_address(ins, ins.operands[1], ins.operands[2])
        store = 0
    elif parts[0] == "store":
        row = operand(ins.operands[1])
        address = global_address(ins, ins.operands[0], ins.operands[2])
        store = 1
    else:
        raise Skip(name)
    if row.kind != "v":
        raise Skip(name)
    return f"if (!global_access(st, {address}, V({row.index}), {words}, {store}, EXEC64)) FALLBACK;"


def lds_addresses(text: str, offset: int) -> str:
    row = operand(text)
    if row.kind != "v":
        raise Skip(text)
    return f"for (int l = 0; l < 64; l++) at[l] = (int64_t)V({row.index})[l] + {offset};"


def byte_offsets(ins, scale: int | None) -> list[int]:
    """ds_read/ds_write: [offset]; read2/write2: offset0 and offset1 times the scale."""
    if scale is None:
        return [int(ins.modifiers.get("offset", "0"), 0)]
    return [int(ins.modifiers.get(f"offset{k}", "0"), 0) * scale for k in (0, 1)]


def ds_read(ins, size: int, scale: int | None = None) -> str:
    """One access per offset (read2: two); each lane's words land in consecutive rows."""
    row = operand(ins.operands[0])
    if row.kind != "v":
        raise Skip(ins.operands[0])
    declared, checks, moves = [], [], []
    for k, offset in enumerate(byte_offsets(ins, scale)):  # every address before any row changes
        declared.append(lds_addresses(ins.operands[1], offset).replace("at[l]", f"at{k}[l]"))
        checks.append(f"if (!lds_read_ok(st, at{k}, ex, {size})) FALLBACK;")
        moves.append(f"lds_read(st, at{k}, ex, {size}, V({row.index + k * size // 4}));")
    arrays = ", ".join(f"at{k}[64]" for k in range(len(moves)))
    return (f"{{ uint64_t ex = EXEC64; int64_t {arrays}; {' '.join(declared)} {' '.join(checks)}"
            f" {' '.join(moves)} st->bytes[LDS_READ] += {size * len(moves)} * __builtin_popcountll(ex); }}")


def ds_write(ins, size: int, sources, scale: int | None = None, first: int = 0) -> str:
    """Each access checked then written in turn, as ds.py does (write2: the first lands before
    the second is checked; a fallback there redoes the first unchanged)."""
    parts = []
    for text, offset in zip(sources, byte_offsets(ins, scale)):
        source = operand(text)
        if source.kind != "v":
            raise Skip(text)
        parts.append((lds_addresses(ins.operands[0], offset), source.index))
    body = " ".join(f"{{ int64_t at[64]; {at} if (!lds_write(st, at, ex, {size}, V({row}), {first}))"
                    " FALLBACK; }" for at, row in parts)
    return (f"{{ uint64_t ex = EXEC64; {body}"
            f" st->bytes[LDS_WRITE] += {size * len(parts)} * __builtin_popcountll(ex); }}")


def bpermute(ins) -> str:
    destination, address, source = (operand(t) for t in ins.operands)
    if destination.kind != "v" or address.kind != "v" or source.kind != "v":
        raise Skip("bpermute")
    offset = int(ins.modifiers.get("offset", "0"), 0)
    return (f"{{ uint64_t ex = EXEC64; uint32_t t[64]; for (int l = 0; l < 64; l++) {{"
            f" int k = (int)((((int64_t)V({address.index})[l] + {offset}) >> 2) & 63);"
            f" t[l] = (ex >> k & 1) ? V({source.index})[k] : 0u; }}"
            f" put(V({destination.index}), t, ex); }}")


def ds(ins, name):
    only(ins, ("offset", "offset0", "offset1"))
    parts = name.split("_")
    if name == "bpermute_b32":
        return bpermute(ins)
    if len(parts) == 2 and parts[0] == "read" and parts[1] in DS_SIZES:
        return ds_read(ins, DS_SIZES[parts[1]])
    if len(parts) == 2 and parts[0] == "write" and parts[1] in WRITE_SIZES:
        return ds_write(ins, WRITE_SIZES[parts[1]], ins.operands[1:2])
    if name in ("write_b8_d16_hi", "write_b16_d16_hi"):  # the register's high half
        return ds_write(ins, WRITE_SIZES[parts[1]], ins.operands[1:2], first=2)
    if parts[0] in ("read2", "write2", "read2st64", "write2st64") and parts[1] in ("b32", "b64"):
        size = DS_SIZES[parts[1]]
        scale = size * (64 if "st64" in parts[0] else 1)
        if parts[0].startswith("read"):
            return ds_read(ins, size, scale)
        return ds_write(ins, size, ins.operands[1:3], scale)
    raise Skip(name)


BUFFER_MODIFIERS = ("offen", "offset", "lds", "sc0", "sc1", "nt", "glc", "slc")


def buffer_op(ins, name):
    """buffer_load_dword(xN), offen or not (idxen: numpy's), into VGPRs or LDS (the lds form)."""
    parts = name.split("_")
    only(ins, BUFFER_MODIFIERS)
    if name in BUFFER_STORES and "lds" not in ins.modifiers and len(ins.operands) == 4:
        return buffer_store(ins, BUFFER_STORES[name])
    if len(parts) != 2 or parts[0] != "load" or parts[1] not in GLOBAL_SIZES:
        raise Skip(name)
    to_lds = "lds" in ins.modifiers
    texts = ins.operands if not to_lds else ["v0"] + ins.operands
    if len(texts) != 4:
        raise Skip(name)
    destination, vaddr, resource = operand(texts[0]), operand(texts[1]), operand(texts[2])
    if resource.kind != "s" or destination.kind != "v":
        raise Skip(name)
    voffset = "NULL"
    if "offen" in ins.modifiers:
        if vaddr.kind != "v":
            raise Skip(name)
        voffset = f"V({vaddr.index})"
    offset = int(ins.modifiers.get("offset", "0"), 0)
    rows = "NULL" if to_lds else f"V({destination.index})"
    return (f"if (!buffer_load(st, &S[{resource.index}], {sread(texts[3])}, {voffset}, {offset},"
            f" {GLOBAL_SIZES[parts[1]]}, {rows}, EXEC64)) FALLBACK;")


def buffer_store(ins, size: int) -> str:
    source, vaddr, resource = (operand(text) for text in ins.operands[:3])
    if source.kind != "v" or resource.kind != "s":
        raise Skip("buffer_store")
    voffset = "NULL"
    if "offen" in ins.modifiers:
        if vaddr.kind != "v":
            raise Skip("buffer_store")
        voffset = f"V({vaddr.index})"
    offset = int(ins.modifiers.get("offset", "0"), 0)
    return (f"if (!buffer_store(st, &S[{resource.index}], {sread(ins.operands[3])}, {voffset},"
            f" {offset}, {size}, V({source.index}), EXEC64)) FALLBACK;")
