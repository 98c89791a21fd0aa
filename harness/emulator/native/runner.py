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
TRACE_ROOM = 4096      # instructions a traced wave runs in C between two drains of its buffers
LINES_PER_STEP = 128   # the most lines one instruction notes: 64 lanes, each its first and last


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
        # a traced wave's buffers (one wave runs at a time), drained after each C run of at most
        # TRACE_ROOM instructions; its hits go to a scratch array: its steps count them
        self.steps = np.zeros(TRACE_ROOM, np.int32)
        self.step_lanes = np.zeros(TRACE_ROOM, np.uint8)
        self.lines = np.zeros(TRACE_ROOM * LINES_PER_STEP, np.uint64)
        self.scratch_hits = np.zeros(count + 1, np.int64)
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

    def drain(self, w, state: State, touched: list) -> None:
        """A traced wave's steps and lines of its last C run, out of the shared buffers."""
        w.steps.extend(self.steps[:state.nsteps].tolist())
        w.lanes.extend(self.step_lanes[:state.nsteps].tolist())
        if state.nlines:
            touched.append(self.lines[:state.nlines].copy())

    def finish(self, hits: list[int], bytes_moved: dict) -> None:
        """C's hits and bytes into the launch's own (after the numpy blocks' hits are spread)."""
        for k, count in enumerate(self.hits[:len(hits)].tolist()):
            if count:
                hits[k] += count
        for kind, count in zip(BYTE_KINDS, self.bytes.tolist()):
            if count:
                bytes_moved[kind] = bytes_moved.get(kind, 0) + count


def run_wave(launch, w, budget: int, traced: bool = False) -> int:
    """As launch.run_wave, with stretches of translated instructions run in C; what C leaves
    (or hands back after a failed check) goes one instruction at a time to launch.run_wave.
    traced: a wave of a traced workgroup. C notes each step, its EXEC lanes and the lines its
    memory ops touch (trace.Recorder and HostMemory.touched on numpy), drained into the wave's
    steps and the workgroup's lines after each run of at most TRACE_ROOM instructions; its hits
    go to scratch (its steps count them); what C leaves runs on the recording table."""
    native = launch.native
    translated, run = native.native.translated, native.native.run
    state, count, n = w.native, len(translated), 0
    room, hits = (TRACE_ROOM, native.scratch_hits.ctypes.data) if traced else (budget, native.hits_address)
    table, table_hits = (launch.trace_table(), launch.traced_hits) if traced else (native.singles_table, None)
    if traced:
        state.steps, state.step_lanes = native.steps.ctypes.data, native.step_lanes.ctypes.data
        state.lines = native.lines.ctypes.data
    try:
        while n < budget and not (w.done or w.at_barrier):
            i = w.pc
            if i < count and translated[i]:
                state.current = (w.lds.epoch + 1) << 16
                state.mine = state.current | (w.index + 1)
                if w.s != w.native_list:
                    SGPRS.pack_into(w.native_s, 0, *w.s)
                state.scc, state.nsteps, state.nlines = w.scc, 0, 0
                w.pc = run(w.native_ref, i, min(budget - n, room), hits)
                if traced:
                    native.drain(w, state, launch.memory.touched)
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
                    continue  # the loop's test ends the turn (a traced wave's room may come first)
            sleeping = launch.instructions[w.pc].mnemonic == "s_sleep"
            n += native.numpy_step(launch, w, 1, table, table_hits)
            if sleeping:  # s_sleep ends the wave's turn, as on the numpy path
                break
    finally:
        if traced:  # the buffers are the launch's, lent to one wave at a time
            state.steps = state.step_lanes = state.lines = None
    return n
