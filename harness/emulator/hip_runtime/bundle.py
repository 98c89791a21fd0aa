"""Clang offload bundles: the fat binary a HIP host object embeds.

Layout (clang-offload-bundler, uncompressed): the magic, an entry count,
then per entry (offset, size, triple length, triple), all little-endian
u64; the code objects follow at their offsets. We write one for the host
compile (Debian's clang-22 has no clang-offload-bundler) and read it back
from the address clang's module constructor registers.
"""
import ctypes
import struct

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
GFX950 = "hipv4-amdgcn-amd-amdhsa--gfx950"
HOST = "host-x86_64-unknown-linux-gnu"
ALIGN = 4096  # as clang's driver asks of the bundler
HEADER_LIMIT = 1 << 16  # a sanity bound on the entry table


class BundleError(ValueError):
    """Not a bundle we can read (message names what is wrong)."""


def pack(entries: dict) -> bytes:
    """A bundle of {triple: code object bytes}, each aligned to ALIGN."""
    table = len(MAGIC) + 8 + sum(24 + len(t) for t in entries)
    offset = -(-table // ALIGN) * ALIGN
    header, body = MAGIC + struct.pack("<Q", len(entries)), b""
    for triple, blob in entries.items():
        header += struct.pack("<QQQ", offset, len(blob), len(triple))
        header += triple.encode()
        body += blob + b"\0" * (-len(blob) % ALIGN)
        offset += len(blob) + (-len(blob) % ALIGN)
    return header + b"\0" * (-len(header) % ALIGN) + body


def entries_at(read) -> dict:
    """{triple: (offset, size)} from read(offset, size) -> bytes."""
    if read(0, len(MAGIC)) != MAGIC:
        raise BundleError("no __CLANG_OFFLOAD_BUNDLE__ magic")
    count, = struct.unpack("<Q", read(len(MAGIC), 8))
    if count > 64:
        raise BundleError(f"{count} entries: not a bundle header")
    at, found = len(MAGIC) + 8, {}
    for _ in range(count):
        offset, size, length = struct.unpack("<QQQ", read(at, 24))
        if length > 256:
            raise BundleError("an entry's triple is too long")
        triple = read(at + 24, length).decode()
        found[triple] = (offset, size)
        at += 24 + length
    return found


def unpack(blob: bytes, triple: str = GFX950) -> bytes:
    """The code object for `triple` out of bundle bytes."""
    entries = entries_at(lambda at, n: blob[at:at + n])
    return _pick(entries, triple, lambda at, n: blob[at:at + n])


def unpack_at(address: int, triple: str = GFX950) -> bytes:
    """The code object for `triple` out of the bundle at a host address."""
    read = lambda at, n: ctypes.string_at(address + at, n)  # noqa: E731
    return _pick(entries_at(read), triple, read)


def _pick(entries: dict, triple: str, read) -> bytes:
    if triple not in entries:
        raise BundleError(f"no {triple} entry (has {', '.join(entries)})")
    offset, size = entries[triple]
    return read(offset, size)
