"""A workgroup's LDS (160 KB on gfx950) and its race checker: per byte, the last writer wave and
reader wave with the barrier epoch they acted in. Two waves touching the same byte in one epoch,
at least one writing, is a race (atomics are exempt: they are meant to meet)."""
import numpy as np

from .errors import EmulationFault

LDS_BYTES = 160 * 1024
MANY = -2
BYTES = [np.arange(n) for n in range(65)]  # the byte offsets of an n-byte access


class LDS:
    def __init__(self, size: int, checked: bool):
        self.size = size
        self.bytes = np.zeros(size, np.uint8)
        self.checked = checked
        self.epoch = 0
        if checked:
            # per byte: epoch << 16 | (wave + 1) of the last writer and of the reader(s)
            self.written = np.zeros(size, np.int64)
            self.read_by = np.zeros(size, np.int64)

    def span(self, addresses: np.ndarray, nbytes: int, what: str) -> np.ndarray:
        addresses = addresses.astype(np.int64)
        limit = self.size - nbytes  # as uint64 a negative address is past any limit: one test
        if limit < 0 or np.count_nonzero(addresses.view(np.uint64) > np.uint64(limit)):
            bad = int(addresses.max() + nbytes - 1 if addresses.max() + nbytes > self.size else addresses.min())
            raise EmulationFault("lds out of bounds",
                                 f"{what} at LDS byte {bad}, the workgroup has {self.size} bytes")
        offsets = BYTES[nbytes] if nbytes < len(BYTES) else np.arange(nbytes)
        return addresses[:, None] + offsets if nbytes > 1 else addresses[:, None]

    def read(self, wave: int, addresses: np.ndarray, nbytes: int, atomic: bool = False) -> np.ndarray:
        if len(addresses) > 1 and not np.count_nonzero(addresses != addresses[0]):
            # every lane reads the same bytes (a broadcast): check and read them once
            return self.read(wave, addresses[:1], nbytes, atomic).repeat(len(addresses), axis=0)
        index = self.span(addresses, nbytes, "read")
        if self.checked and not atomic:
            self.check(wave, index, writing=False)
        return self.bytes[index]

    def write(self, wave: int, addresses: np.ndarray, data: np.ndarray, atomic: bool = False) -> None:
        index = self.span(addresses, data.shape[1], "write")
        if self.checked and not atomic:
            changed = self.bytes[index] != data  # storing what is there already (replicated data) is no race
            if changed.all():
                self.check(wave, index, writing=True)
            elif changed.any():
                self.check(wave, index[changed], writing=True)
        self.bytes[index] = data

    def check(self, wave: int, index: np.ndarray, writing: bool) -> None:
        flat = index.ravel()
        mine = ((self.epoch + 1) << 16) | (wave + 1)
        current = (self.epoch + 1) << 16
        # no tag is newer than this epoch: ">= current" is "touched in this epoch"
        written = self.written[flat]
        clash = (written >= current) & (written != mine)
        read_by = self.read_by[flat]
        if writing:
            clash |= (read_by >= current) & (read_by != mine)
        if np.count_nonzero(clash):
            self.report(wave, flat, clash, writing)
        if writing:
            self.written[flat] = mine
            return
        shared = (read_by >= current) & (read_by != mine)
        self.read_by[flat] = np.where(shared, current | (MANY & 0xFFFF), mine)

    def report(self, wave, flat, clash, writing):
        at = int(np.flatnonzero(clash)[0])
        current = (self.epoch + 1) << 16
        written = int(self.written[flat[at]])
        tag = written if (written & ~0xFFFF) == current and written & 0xFFFF != wave + 1 \
            else int(self.read_by[flat[at]])
        other = tag & 0xFFFF
        other_text = "several waves" if other == MANY & 0xFFFF else f"wave {other - 1}"
        kind = "write" if writing else "read"
        raise EmulationFault("lds race", f"wave {wave} {kind}s LDS byte {int(flat[at])} that "
                             f"{other_text} touched since the last s_barrier")
