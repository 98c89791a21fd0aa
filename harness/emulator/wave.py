"""One wavefront's state: 64 lanes, SGPRs (VCC, EXEC, M0 among them), SCC, VGPRs and AGPRs, PC."""
import numpy as np

LANES = 64
VCC, M0, EXEC = 106, 124, 126
SGPR_FILE = 128
VGPR_FILE = 256  # AGPRs follow the VGPRs in one array: a0 is row 256
MASK_CACHE: dict[int, np.ndarray] = {}
BITS_CACHE: dict[bytes, int] = {}  # a bool lane array's bytes -> its 64-bit mask
FULL = 0xFFFFFFFF
LANE_BITS = np.uint64(1) << np.arange(LANES, dtype=np.uint64)


def lane_mask(bits: int) -> np.ndarray:
    """The 64 lanes an EXEC-like value enables, as a cached boolean array."""
    mask = MASK_CACHE.get(bits)
    if mask is None:
        mask = (np.uint64(bits) & LANE_BITS) != 0
        mask.flags.writeable = False
        if len(MASK_CACHE) < 4096:
            MASK_CACHE[bits] = mask
    return mask


def lanes64(value) -> np.ndarray:
    """A per-lane array of 64 (a scalar operand repeated), without np.broadcast_to's cost."""
    if type(value) is np.ndarray and value.shape == (LANES,):
        return value
    return np.full(LANES, value, np.asarray(value).dtype)


def mask_bits(mask: np.ndarray) -> int:
    """A boolean lane array back to a 64-bit lane mask (kernels repeat few masks: cached)."""
    if mask.dtype != np.bool_:
        mask = mask.astype(bool)
    key = mask.tobytes()
    bits = BITS_CACHE.get(key)
    if bits is None:
        bits = int(np.packbits(mask, bitorder="little").view(np.uint64)[0])
        if len(BITS_CACHE) < 65536:
            BITS_CACHE[key] = bits
    return bits


class Wave:
    def __init__(self, workgroup, index: int, pc: int, vgpr_rows: int = 2 * VGPR_FILE):
        self.workgroup = workgroup
        self.index = index
        self.pc = pc
        self.s = [0] * SGPR_FILE
        self.scc = 0
        self.v = np.zeros((vgpr_rows, LANES), np.uint32)
        self.f32, self.i32 = self.v.view(np.float32), self.v.view(np.int32)  # typed views
        self.views = {np.dtype(np.float32): self.f32, np.dtype(np.int32): self.i32,
                      np.dtype(np.uint32): self.v}
        self.done = False
        self.at_barrier = False
        self.progress = 0
        self.skipped = 0  # instructions run inside blocks beyond their first (launch.run_wave)

    @property
    def exec_bits(self) -> int:
        return self.s[EXEC] | self.s[EXEC + 1] << 32

    @exec_bits.setter
    def exec_bits(self, bits: int) -> None:
        self.s[EXEC] = bits & 0xFFFFFFFF
        self.s[EXEC + 1] = bits >> 32 & 0xFFFFFFFF

    def exec_mask(self) -> np.ndarray:
        return lane_mask(self.s[EXEC] | self.s[EXEC + 1] << 32)

    def sgpr64(self, index: int) -> int:
        return self.s[index] | self.s[index + 1] << 32

    def set_sgpr64(self, index: int, value: int) -> None:
        self.s[index] = value & 0xFFFFFFFF
        self.s[index + 1] = value >> 32 & 0xFFFFFFFF
