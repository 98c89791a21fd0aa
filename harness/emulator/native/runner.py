"""run_wave on the fast path: C runs from the wave's PC until an instruction it does not
translate (or a check that fails), then that one instruction goes to its numpy executor, and
C resumes after it. The SGPRs are a Python list for the executors: copied out after C, and in
only when an executor changed them since (a wave stopped at a barrier resumes without a copy)."""
import ctypes
import struct

import numpy as np

from .. import executor
from .program import BARRIER_STOP, BYTE_KINDS, END_STOP, NEED_NUMPY, State

SGPRS = struct.Struct("<128I")


class LaunchState:
    """What every wave's C state shares in one launch: regions, hits, byte counters."""

    def __init__(self, native, memory, count: int, executors, numpy_step):
        """numpy_step: launch.run_wave (passed in: launch imports this module)."""
        self.native, self.executors, self.numpy_step = native, executors, numpy_step
        self.starts = np.array([r.address for r in memory.regions], np.uint64)
        self.ends = np.array([r.end for r in memory.regions], np.uint64)
        self.hits = np.zeros(count + 1, np.int64)
        self.bytes = np.zeros(len(BYTE_KINDS), np.int64)
        self.hits_address = self.hits.ctypes.data
        self.singles_table = native.__dict__.get("singles_table")
        if self.singles_table is None:  # no blocks: a block would run on past what C takes
            self.singles_table = [self.lazy(k) for k in range(count)]
            native.singles_table = self.singles_table

    def lazy(self, index: int):
        def first_run(w):
            executors = self.executors
            program = executors.program
            built = executor.build(program.instructions[index], program, index)
            if getattr(built, "span_end", None):  # a region it runs itself (gpr_idx): hits spread
                executors.spans[index] = built.span_end
            self.singles_table[index] = built
            return built(w)
        return first_run

    def attach(self, wave) -> None:
        """The wave's C state: pointers into its own arrays and its workgroup's LDS."""
        state = State()
        wave.native_s = np.zeros(128, np.uint32)
        wave.native_list = None  # the SGPRs as C left them (None: C's copy is stale)
        state.v, state.s = wave.v.ctypes.data, wave.native_s.ctypes.data
        lds = wave.lds
        state.lds, state.lds_size, state.checked = lds.bytes.ctypes.data, lds.size, int(lds.checked)
        if lds.checked:
            state.written, state.read_by = lds.written.ctypes.data, lds.read_by.ctypes.data
        state.starts, state.ends = self.starts.ctypes.data, self.ends.ctypes.data
        state.regions = len(self.starts)
        state.bytes = self.bytes.ctypes.data
        state.load_base = self.executors.program.load_base
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
    """As launch.run_wave, with stretches of translated instructions run in C; what C leaves
    (or hands back after a failed check) goes one instruction at a time to launch.run_wave."""
    native = launch.native
    translated, run = native.native.translated, native.native.run
    state, count, n = w.native, len(translated), 0
    while n < budget and not (w.done or w.at_barrier):
        i = w.pc
        if i < count and translated[i]:
            state.current = (w.lds.epoch + 1) << 16
            state.mine = state.current | (w.index + 1)
            if w.s != w.native_list:
                SGPRS.pack_into(w.native_s, 0, *w.s)
            state.scc = w.scc
            w.pc = run(w.native_ref, i, budget - n, native.hits_address)
            w.native_list = w.native_s.tolist()
            w.s[:] = w.native_list
            w.scc = state.scc
            n += state.executed
            w.clock += state.executed
            w.progress += state.progress
            state.progress = 0
            status = state.status
            if status == BARRIER_STOP:
                w.at_barrier = True
            elif status == END_STOP:
                w.done = True
            if status != NEED_NUMPY:
                break
        sleeping = launch.instructions[w.pc].mnemonic == "s_sleep"
        n += native.numpy_step(launch, w, 1, native.singles_table)
        if sleeping:  # s_sleep ends the wave's turn, as on the numpy path
            break
    return n
