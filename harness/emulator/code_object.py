"""A gfx950 code object (an amdgcn-amd-amdhsa ELF, not a bundle): its kernels and their ABI."""
import struct
from dataclasses import dataclass, field

import numpy as np

from . import msgpack_note
from .disasm import Program, disassemble

NT_AMDGPU_METADATA = 32
# compute_pgm_rsrc2 and kernel_code_properties bits, per AMDGPUUsage's kernel descriptor.
USER_SGPR_FIELDS = (("private_segment_buffer", 4), ("dispatch_ptr", 2), ("queue_ptr", 2),
                    ("kernarg_segment_ptr", 2), ("dispatch_id", 2), ("flat_scratch_init", 2),
                    ("private_segment_size", 1))


@dataclass
class KernelInfo:
    name: str
    kernarg_size: int
    group_segment_size: int
    private_segment_size: int
    args: list[tuple[int, int, str]]
    sgpr_count: int
    vgpr_count: int
    agpr_count: int
    accum_offset: int
    user_sgprs: dict[str, bool]
    user_sgpr_count: int
    workgroup_id: tuple[bool, bool, bool]
    workitem_id_dims: int
    enable_private_segment: bool  # rsrc2 bit 0; gfx940+: no wave-offset SGPR (scratch.py)
    preload_length: int
    preload_offset: int
    entry: int
    wavefront_size: int = 64
    max_flat_workgroup_size: int = 1024
    metadata: dict = field(default_factory=dict)


@dataclass
class CodeObject:
    blob: bytes
    kernels: dict[str, KernelInfo]
    sections: list[tuple[str, int, int, int]]
    image: np.ndarray | None = None
    _program: Program | None = None

    @property
    def image_address(self) -> int:
        """Where the loaded segments live in host memory: a code address is this plus its vaddr."""
        return self.image.ctypes.data

    @property
    def program(self) -> Program:
        """Every instruction of the text, decoded once on first use."""
        if self._program is None:
            self._program = disassemble(self.blob)
            self._program.load_base = self.image_address
        return self._program

    def read(self, address: int, size: int) -> bytes:
        """Bytes at a virtual address (the kernel descriptor, read-only data)."""
        for _, addr, offset, nbytes in self.sections:
            if addr <= address and address + size <= addr + nbytes and offset:
                start = offset + address - addr
                return self.blob[start:start + size]
        raise KeyError(f"0x{address:x} lies in no loaded section")


def load_code_object(blob: bytes) -> CodeObject:
    if blob[:4] != b"\x7fELF":
        raise ValueError("not an ELF (a clang offload bundle must be unbundled first)")
    sections = section_table(blob)
    symbols = symbol_table(blob, sections)
    notes = metadata_notes(blob, sections)
    code = CodeObject(blob, {}, [(s["name"], s["addr"], s["offset"], s["size"])
                                 for s in sections if s["type"] != 8])
    code.image = loaded_image(blob)
    for meta in notes.get("amdhsa.kernels", []):
        info = kernel_info(code, meta, symbols)
        code.kernels[info.name] = info
        code.kernels.setdefault(meta[".symbol"], info)
    return code


def loaded_image(blob: bytes) -> np.ndarray:
    """The PT_LOAD segments at their virtual addresses (bss zero): __constant__ and __device__
    globals are read through s_getpc_b64-relative addresses into this image."""
    phoff, = struct.unpack_from("<Q", blob, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", blob, 0x36)
    segments = []
    for index in range(phnum):
        kind, _, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", blob, phoff + index * phentsize)
        if kind == 1:
            segments.append((offset, vaddr, filesz, memsz))
    size = max((vaddr + memsz for _, vaddr, _, memsz in segments), default=0)
    image = np.zeros(max(size, 16), np.uint8)
    for offset, vaddr, filesz, _ in segments:
        image[vaddr:vaddr + filesz] = np.frombuffer(blob, np.uint8, filesz, offset)
    return image


def section_table(blob: bytes) -> list[dict]:
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3a)
    rows = []
    for index in range(shnum):
        fields = struct.unpack_from("<IIQQQQIIQQ", blob, shoff + index * shentsize)
        rows.append({"name_at": fields[0], "type": fields[1], "addr": fields[3],
                     "offset": fields[4], "size": fields[5], "link": fields[6],
                     "entsize": fields[9]})
    names = rows[shstrndx]
    for row in rows:
        row["name"] = cstring(blob, names["offset"] + row["name_at"])
    return rows


def cstring(blob: bytes, at: int) -> str:
    return blob[at:blob.index(b"\0", at)].decode()


def symbol_table(blob: bytes, sections: list[dict]) -> dict[str, int]:
    """Symbol name -> value, from .symtab (or .dynsym when stripped)."""
    symbols: dict[str, int] = {}
    for section in sections:
        if section["type"] not in (2, 11):
            continue
        strings = sections[section["link"]]["offset"]
        for at in range(section["offset"], section["offset"] + section["size"], 24):
            name_at, _info, _other, _shndx, value, _size = struct.unpack_from("<IBBHQQ", blob, at)
            if name_at:
                symbols.setdefault(cstring(blob, strings + name_at), value)
    return symbols


def metadata_notes(blob: bytes, sections: list[dict]) -> dict:
    for section in sections:
        if section["type"] != 7:
            continue
        at, end = section["offset"], section["offset"] + section["size"]
        while at < end:
            namesz, descsz, kind = struct.unpack_from("<III", blob, at)
            desc = at + 12 + align4(namesz)
            if kind == NT_AMDGPU_METADATA:
                return msgpack_note.unpack(blob[desc:desc + descsz])
            at = desc + align4(descsz)
    return {}


def align4(n: int) -> int:
    return (n + 3) & ~3


def kernel_info(code: CodeObject, meta: dict, symbols: dict[str, int]) -> KernelInfo:
    kd_address = symbols[meta[".symbol"]]
    kd = code.read(kd_address, 64)
    group, private, kernarg = struct.unpack_from("<III", kd, 0)
    entry_offset, = struct.unpack_from("<q", kd, 16)
    rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", kd, 44)
    properties, preload = struct.unpack_from("<HH", kd, 56)
    user = {name: bool(properties >> bit & 1) for bit, (name, _) in enumerate(USER_SGPR_FIELDS)}
    args = [(a[".offset"], a[".size"], a[".value_kind"]) for a in meta.get(".args", [])]
    return KernelInfo(
        name=meta[".name"], kernarg_size=meta.get(".kernarg_segment_size", kernarg),
        group_segment_size=meta.get(".group_segment_fixed_size", group),
        private_segment_size=meta.get(".private_segment_fixed_size", private), args=args,
        sgpr_count=meta.get(".sgpr_count", 0), vgpr_count=meta.get(".vgpr_count", 0),
        agpr_count=meta.get(".agpr_count", 0), accum_offset=((rsrc3 & 0x3f) + 1) * 4,
        user_sgprs=user, user_sgpr_count=rsrc2 >> 1 & 0x1f,
        workgroup_id=tuple(bool(rsrc2 >> bit & 1) for bit in (7, 8, 9)),
        workitem_id_dims=(rsrc2 >> 11 & 3) + 1, enable_private_segment=bool(rsrc2 & 1),
        preload_length=preload & 0x7f, preload_offset=preload >> 7,
        entry=kd_address + entry_offset, wavefront_size=meta.get(".wavefront_size", 64),
        max_flat_workgroup_size=meta.get(".max_flat_workgroup_size", 1024), metadata=meta)
