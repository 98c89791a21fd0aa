"""Scratch: the private segment of each wave, and the scratch_* instructions that reach it.

What gfx950 does, and where it is written down:
- gfx940 and later have *architected flat scratch* (AMDGPUUsage, processor table and
  kernel descriptor, https://reviews.llvm.org/D102432): the dispatcher sets FLAT_SCRATCH to
  the wave's own scratch base; the private segment buffer and flat scratch init user SGPRs
  are "not supported and must be 0", and no wavefront-offset SGPR follows the workgroup ids.
  A kernel states its per-lane need in `.private_segment_fixed_size` (kernel descriptor word
  1); compute_pgm_rsrc2 bit 0 (ENABLE_PRIVATE_SEGMENT) asks for the set-up.
- scratch_* (FLAT encoding, SEG=1) address a lane's private bytes as
  SADDR (one SGPR, or off) + VADDR (one VGPR, or off) + a signed 13-bit offset
  (LLVM's gfx90a operand page: "saddr: an optional 32-bit flat scratch offset"; CLRX's
  GCN 1.4 FLAT page for the offset). Both may be off (the "ST" form): llvm-mc-22
  assembles it for gfx950 and clang-22 emits it for a private array at offset 0.
- That private address is swizzled: AMDGPUUsage's private segment ("accessed in an
  interleaved manner ... by the scratch instructions, or by flat instructions"); gem5's
  MI300 model, after the MI300 ISA's 9.1.5.2 "Swizzled Buffer Addressing" and checked
  against MI300 output: each dword of a lane lies 64 lanes x 4 bytes from its next, so
  private byte a of lane L is at base + (a // 4) * 256 + 4 L + a % 4.
- gfx940+ compilers reach scratch only through scratch_* (no buffer descriptor exists for
  it), so buffer_* to scratch is not emulated; flat_* into the private aperture is (vmem).
Beyond AMD: an access past the kernel's per-lane size is a fault naming "scratch of wave N"
(the hardware would read or clobber a neighbour's private bytes without a word)."""
import numpy as np

from .errors import EmulationFault, NotEmulated
from .operands import parse, scalar_reader, vector_reader
from .vmem import count_bytes, kind_of, lds_dma_target, place_loaded, store_bytes
from .wave import LANES

DWORD = 4
ROW = LANES * DWORD  # one private dword of every lane
WORD = np.int64(0xFFFFFFFF)


class Scratch:
    """One wave's private segment: lane_bytes per lane, dword-interleaved over the lanes."""

    def __init__(self, lane_bytes: int, name: str):
        self.lane_bytes, self.name = lane_bytes, name
        self.bytes = np.zeros(-(-lane_bytes // DWORD) * ROW, np.uint8)

    @property
    def address(self) -> int:
        """Its host address: what FLAT_SCRATCH holds for the wave."""
        return self.bytes.ctypes.data

    def placed(self, lanes, offsets, nbytes: int, what: str) -> np.ndarray:
        """Byte positions [n, nbytes] of each lane's private offset, after the swizzle."""
        bad = (offsets < 0) | (offsets + nbytes > self.lane_bytes)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise EmulationFault("out of bounds", (
                f"{what} of {nbytes} bytes at private offset {int(offsets[at])} of lane "
                f"{int(lanes[at])}: past the {self.lane_bytes} bytes per lane of {self.name}"))
        byte = offsets[:, None] + np.arange(nbytes)
        return (byte >> 2) * ROW + lanes[:, None] * DWORD + (byte & 3)

    def read(self, lanes, offsets, nbytes: int, what: str = "scratch load") -> np.ndarray:
        return self.bytes[self.placed(lanes, offsets, nbytes, what)]

    def write(self, lanes, offsets, data: np.ndarray, what: str = "scratch store") -> None:
        self.bytes[self.placed(lanes, offsets, data.shape[1], what)] = data


def private_address(ins, vaddr_text: str, saddr_text: str):
    """fn(wave) -> int64 private offsets of the 64 lanes: saddr + vaddr + offset, 32 bits."""
    offset = int(ins.modifiers.get("offset", "0"), 0)
    vaddr, saddr = parse(vaddr_text), parse(saddr_text)
    read_base = scalar_reader(saddr)
    if vaddr.kind == "null":
        return lambda w: np.full(LANES, (read_base(w) + offset) & 0xFFFFFFFF, np.int64)
    read_lane = vector_reader(vaddr)
    return lambda w: (read_lane(w).astype(np.int64) + (read_base(w) + offset)) & WORD


def scratch_load(ins, name):
    _, size, is_signed, d16 = kind_of(name)
    destination = parse(ins.operands[0])
    address = private_address(ins, ins.operands[1], ins.operands[2])

    def run(w):
        lanes = w.exec_mask()
        data = w.scratch.read(np.flatnonzero(lanes), address(w)[lanes], size)
        count_bytes(w, "scratch_load", data.size)
        place_loaded(w, ins, destination, data, lanes, size, is_signed, d16)
    return run


def scratch_store(ins, name):
    _, size, _, d16 = kind_of(name)
    source = parse(ins.operands[1])
    address = private_address(ins, ins.operands[0], ins.operands[2])

    def run(w):
        lanes = w.exec_mask()
        data = store_bytes(w, source, size, lanes, d16)
        w.scratch.write(np.flatnonzero(lanes), address(w)[lanes], data)
        count_bytes(w, "scratch_store", data.size)
        w.progress += 1
    return run


def scratch_to_lds(ins, name):
    """scratch_load_lds_*: each lane's private bytes land in LDS at M0 + offset + lane * size."""
    _, size, _, _ = kind_of(name)
    address = private_address(ins, ins.operands[0], ins.operands[1])
    offset = int(ins.modifiers.get("offset", "0"), 0)

    def run(w):
        lanes = w.exec_mask()
        data = w.scratch.read(np.flatnonzero(lanes), address(w)[lanes], size)
        w.lds.write(w.index, lds_dma_target(w, offset, lanes, size), data)
        count_bytes(w, "scratch_load", data.size)
    return run


def build(ins, name: str):
    if name.startswith("load_lds_"):
        return scratch_to_lds(ins, name)
    if name.startswith("load_"):
        return scratch_load(ins, name)
    if name.startswith("store_"):
        return scratch_store(ins, name)
    raise NotEmulated(ins.mnemonic)
