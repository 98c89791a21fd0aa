"""A workgroup's LDS (160 KB on gfx950) and its race checker: per byte, the last writer wave and
reader wave with the barrier epoch they acted in. Two waves touching the same byte in one epoch,
at least one writing, is a race (atomics are exempt: they are meant to meet)."""
import numpy as np

from .errors import EmulationFault

LDS_BYTES = 160 * 1024
MANY = -2


class LDS:
    def __init__(self, size: int, checked: bool):
        self.size = size
        self.bytes = np.zeros(size, np.uint8)
        self.checked = checked
        self.epoch = 0
        if checked:
            self.writer = np.full(size, -1, np.int16)
            self.write_epoch = np.full(size, -1, np.int32)
            self.reader = np.full(size, -1, np.int16)
            self.read_epoch = np.full(size, -1, np.int32)

    def span(self, addresses: np.ndarray, nbytes: int, what: str) -> np.ndarray:
        index = addresses.astype(np.int64)[:, None] + np.arange(nbytes)
        if index.size and (index.min() < 0 or index.max() >= self.size):
            bad = int(index.max() if index.max() >= self.size else index.min())
            raise EmulationFault("lds out of bounds",
                                 f"{what} at LDS byte {bad}, the workgroup has {self.size} bytes")
        return index

    def read(self, wave: int, addresses: np.ndarray, nbytes: int, atomic: bool = False) -> np.ndarray:
        index = self.span(addresses, nbytes, "read")
        if self.checked and not atomic:
            self.check(wave, index, writing=False)
        return self.bytes[index]

    def write(self, wave: int, addresses: np.ndarray, data: np.ndarray, atomic: bool = False) -> None:
        index = self.span(addresses, data.shape[1], "write")
        if self.checked and not atomic:
            self.check(wave, index, writing=True)
        self.bytes[index] = data

    def check(self, wave: int, index: np.ndarray, writing: bool) -> None:
        flat = index.ravel()
        epoch = self.epoch
        writers = self.writer[flat]
        clash = (writers >= 0) & (writers != wave) & (self.write_epoch[flat] == epoch)
        if writing:
            readers = self.reader[flat]
            clash |= (readers != -1) & (readers != wave) & (self.read_epoch[flat] == epoch)
        if clash.any():
            at = int(np.flatnonzero(clash)[0])
            other = int(writers[at]) if writers[at] >= 0 and self.write_epoch[flat[at]] == epoch \
                else int(self.reader[flat[at]])
            other_text = "several waves" if other == MANY else f"wave {other}"
            kind = "write" if writing else "read"
            raise EmulationFault("lds race", f"wave {wave} {kind}s LDS byte {int(flat[at])} that "
                                 f"{other_text} touched since the last s_barrier")
        if writing:
            self.writer[flat] = wave
            self.write_epoch[flat] = epoch
            return
        current = self.read_epoch[flat] == epoch
        old = self.reader[flat]
        self.reader[flat] = np.where(current & (old != wave) & (old != -1), MANY, wave)
        self.read_epoch[flat] = epoch
