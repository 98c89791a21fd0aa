"""Both instructions of an LDS race in an aiter kernel, and what the emulator assumed of the schedule.

The emulator's checker (harness/emulator/lds.py) stops at the access
that clashes and names it; the other side is only a wave number. While
an aiter kernel runs, `named_pairs()` keeps, per LDS byte, the offset
of the instruction that last wrote it and last read it, and words the
stop as "<this instruction> at <offset> against <that one> at <offset>".
It wraps the LDS methods for the block only (no emulator module is
edited); where the offset cannot be found it says so.
"""
import contextlib
import sys

import numpy as np

from harness.emulator import lds as lds_module
from harness.emulator.errors import EmulationFault

SCHEDULE = ("the checker flags two waves touching one LDS byte between two s_barriers, one of them "
            "writing, whatever their order; the emulator ran the waves of a workgroup in lockstep (one "
            "instruction each in turn; four where races are let through) and lands LDS-DMA at issue "
            "(on MI355X a memory round trip later), so a race it names needs a wave to lag on hardware, "
            "which is rare per call and likely over ranked mode's ~100 calls")


def _instruction():
    """(mnemonic, offset) of the instruction the running wave executes, or None."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "run_wave":
        frame = frame.f_back
    if frame is None:
        return None
    try:
        ins = frame.f_locals["launch"].instructions[frame.f_locals["i"]]
    except (KeyError, IndexError, AttributeError):
        return None
    return ins.mnemonic, ins.pc


class _Offsets:
    """Per LDS: the offset of each byte's last writer and last reader (-1 unknown)."""

    def __init__(self):
        self.by_lds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.names: dict[int, str] = {}
        self.last_pc = -1  # the other side of the latest clash

    def tables(self, lds):
        if id(lds) not in self.by_lds:
            self.by_lds[id(lds)] = (np.full(lds.size, -1, np.int64), np.full(lds.size, -1, np.int64))
        return self.by_lds[id(lds)]

    def note(self, lds, index, column: int) -> None:
        found = _instruction()
        if found is not None:
            self.names[found[1]] = found[0]
        self.tables(lds)[column][np.asarray(index).ravel()] = found[1] if found else -1

    def other(self, lds, byte: int, writing: bool, wave: int) -> str:
        """The other side of a clash at `byte`: the last write, else (for a write) the last read."""
        written, read = self.tables(lds)
        current = (lds.epoch + 1) << 16
        tag = int(lds.written[byte])
        by_writer = tag >= current and tag & 0xFFFF != wave + 1
        pc = int(written[byte] if by_writer or not writing else read[byte])
        self.last_pc = pc
        if pc < 0:
            return "an access whose offset the emulator did not keep (its native path)"
        return f"{self.names.get(pc, '?')} at 0x{pc:x}"


@contextlib.contextmanager
def named_pairs(let_through: str | None = None):
    """Within the block an LDS race stops with both instructions named; with `let_through` (why)
    the run goes on and each distinct pair is collected in the yielded list instead."""
    offsets = _Offsets()
    seen: list[str] = []
    cls = lds_module.LDS
    original = {name: cls.__dict__[name] for name in ("read", "write", "report")}

    def span(lds, addresses, nbytes):
        return addresses.astype(np.int64)[:, None] + np.arange(nbytes)

    def read(lds, wave, addresses, nbytes, atomic=False):
        data = original["read"](lds, wave, addresses, nbytes, atomic)
        if lds.checked and not atomic:
            offsets.note(lds, span(lds, addresses, nbytes), 1)
        return data

    def write(lds, wave, addresses, data, atomic=False):
        original["write"](lds, wave, addresses, data, atomic)
        if lds.checked and not atomic:
            offsets.note(lds, span(lds, addresses, data.shape[1]), 0)

    def report(lds, wave, flat, clash, writing):
        byte = int(flat[int(np.flatnonzero(clash)[0])])
        against = offsets.other(lds, byte, writing, wave)
        if let_through is not None:
            here = _instruction()
            text = f"{here[0]} at 0x{here[1]:x} against {against}" if here else against
            if text not in seen:
                seen.append(text)
            return
        try:
            original["report"](lds, wave, flat, clash, writing)
        except EmulationFault as fault:
            fault.message += f", last by {against}; schedule assumed: {SCHEDULE}"
            raise

    cls.read, cls.write, cls.report = read, write, report
    try:
        yield seen
    finally:
        for name, method in original.items():
            setattr(cls, name, method)
