"""run_wave on the fast path: C runs from the wave's PC until an instruction it does not
translate (or a check that fails), then that one instruction goes to its numpy executor, and
C resumes after it. The SGPRs are a Python list for the executors: copied in and out around C."""
import ctypes

import numpy as np

from .. import executor
from ..errors import EmulationFault, NotEmulated
from ..sopp import BARRIER, END, YIELD
from .program import BARRIER_STOP, BUDGET_STOP, BYTE_KINDS, END_STOP, State


class LaunchState:
    """What every wave's C state shares in one launch: regions, hits, byte counters."""

    def __init__(self, native, memory, count: int):
        self.native = native
        self.starts = np.array([r.address for r in memory.regions], np.uint64)
        self.ends = np.array([r.end for r in memory.regions], np.uint64)
        self.hits = np.zeros(count + 1, np.int64)
        self.bytes = np.zeros(len(BYTE_KINDS), np.int64)
        self.hits_address = self.hits.ctypes.data
        # one numpy executor per instruction, no blocks: a block would run on past what C takes
        self.singles = native.__dict__.setdefault("singles", [None] * count)

    def single(self, executors, index: int):
        program = executors.program
        built = executor.build(program.instructions[index], program, index)
        if getattr(built, "span_end", None):  # a region it runs itself (gpr_idx): hits spread
            executors.spans[index] = built.span_end
        self.singles[index] = built
        return built

    def attach(self, wave) -> None:
        """The wave's C state: pointers into its own arrays and its workgroup's LDS."""
        state = State()
        wave.native_s = np.zeros(128, np.uint32)
        state.v, state.s = wave.v.ctypes.data, wave.native_s.ctypes.data
        lds = wave.lds
        state.lds, state.lds_size, state.checked = lds.bytes.ctypes.data, lds.size, int(lds.checked)
        if lds.checked:
            state.written, state.read_by = lds.written.ctypes.data, lds.read_by.ctypes.data
        state.starts, state.ends = self.starts.ctypes.data, self.ends.ctypes.data
        state.regions = len(self.starts)
        state.bytes = self.bytes.ctypes.data
        wave.native = state
        wave.native_ref = ctypes.byref(state)

    def finish(self, hits: list[int], bytes_moved: dict) -> None:
        """C's hits and bytes into the launch's own (after the numpy blocks' hits are spread)."""
        for k, count in enumerate(self.hits[:len(hits)].tolist()):
            if count:
                hits[k] += count
        for kind, count in zip(BYTE_KINDS, self.bytes.tolist()):
            if count:
                bytes_moved[kind] = bytes_moved.get(kind, 0) + count


def run_wave(launch, w, budget: int) -> int:
    """As launch.run_wave, with stretches of translated instructions run in C."""
    native = launch.native
    translated, run = native.native.translated, native.native.run
    singles, hits, state = native.singles, launch.hits, w.native
    i, n = w.pc, 0
    count = len(translated)
    try:
        while n < budget:
            if i < count and translated[i]:
                lds = w.lds
                state.current = (lds.epoch + 1) << 16
                state.mine = state.current | (w.index + 1)
                w.native_s[:] = w.s
                state.scc = w.scc
                i = run(w.native_ref, i, budget - n, native.hits_address)
                w.s[:] = w.native_s.tolist()
                w.scc = state.scc
                n += state.executed
                w.progress += state.progress
                state.progress = 0
                status = state.status
                if status == BARRIER_STOP:
                    w.at_barrier = True
                    break
                if status == END_STOP:
                    w.done = True
                    break
                if status == BUDGET_STOP:
                    break
            single = singles[i] or launch.native.single(launch.executors, i)
            result = single(w)  # NEED_NUMPY, or an instruction C does not translate
            hits[i] += 1
            n += 1
            if result is None:
                i += 1
            elif result >= 0:
                i = result
            elif result == BARRIER:
                w.at_barrier = True
                i += 1
                break
            elif result == END:
                w.done = True
                break
            elif result == YIELD:
                i += 1
                break
    except NotEmulated as missing:
        raise missing.in_kernel(launch.info.name) from None
    except EmulationFault as fault:
        ins = launch.instructions[i]
        raise fault.located(launch.info.name, ins.mnemonic, f"0x{ins.pc:x}", ins.source_line) from None
    w.pc = i
    n += w.skipped
    w.skipped = 0
    w.clock += n
    return n
