"""One wave of a program run from a given state on either path (the numpy executors, or C with
numpy for what C leaves), for the differential tests: registers, SCC, LDS, memory, hits."""
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from harness.emulator import launch as launch_module
from harness.emulator import executor
from harness.emulator.executor import Executors
from harness.emulator.lds import LDS
from harness.emulator.memory import HostMemory
from harness.emulator.native import runner
from harness.emulator.native.program import NativeProgram, compiler
from harness.emulator.wave import Wave


def skip_without_clang() -> None:
    """The fast path needs clang-22 (make setup installs it): without it these tests skip."""
    import pytest
    try:
        compiler()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))


@dataclass
class Start:
    """A wave's first state: SGPRs, SCC, VGPR rows, LDS and one global buffer."""
    s: list
    scc: int
    v: np.ndarray
    lds: np.ndarray
    buffer: np.ndarray
    checked: bool = True
    buffer_sgpr: int = 40  # where the buffer's address goes (each run has its own copy)
    descriptor_sgpr: int = 44  # a V# of the buffer (num_records from the start state's SGPR there + 2)


@dataclass
class End:
    s: list
    scc: int
    v: np.ndarray
    lds: np.ndarray
    buffer: np.ndarray
    hits: list
    bytes_moved: dict


def run_one(code, start: Start, native: bool, budget: int = 1000, steps: list | None = None) -> End:
    """Runs the wave to its end; with `steps`, one instruction at a time, each state kept there
    (the numpy path then without its blocks, so both stop after every instruction)."""
    program = code.program
    count = len(program.instructions)
    buffer = start.buffer.copy()
    memory = HostMemory()
    memory.add_array(buffer, "buffer")
    launch = SimpleNamespace(executors=Executors(program), hits=[0] * count,
                             instructions=program.instructions, bytes_moved={},
                             info=SimpleNamespace(name="differential"), native=None)
    wave = Wave(None, 0, 0)
    wave.s, wave.scc = list(start.s), start.scc
    address = buffer.ctypes.data
    wave.s[start.buffer_sgpr], wave.s[start.buffer_sgpr + 1] = address & 0xFFFFFFFF, address >> 32
    at = start.descriptor_sgpr
    wave.s[at], wave.s[at + 1] = address & 0xFFFFFFFF, address >> 32 & 0xFFFF
    wave.v[:len(start.v)] = start.v
    wave.lds = LDS(len(start.lds), checked=start.checked)
    wave.lds.bytes[:] = start.lds
    wave.memory, wave.bytes_moved, wave.clock = memory, launch.bytes_moved, 0
    if native:
        launch.native = runner.LaunchState(NativeProgram(program, code.blob), memory, count,
                                           launch.executors, launch_module.run_wave)
        launch.native.attach(wave)
    step = runner.run_wave if native else launch_module.run_wave
    if steps is not None:
        budget = 1
        launch.executors.block = lambda index: executor.build(program.instructions[index], program, index)
    with np.errstate(all="ignore"):
        while not wave.done:
            pc = wave.pc
            step(launch, wave, budget)
            if steps is not None:
                sgprs = list(wave.s)
                sgprs[start.buffer_sgpr:start.buffer_sgpr + 2] = [0, 0]  # the copies' own addresses
                sgprs[start.descriptor_sgpr:start.descriptor_sgpr + 2] = [0, 0]
                steps.append(End(sgprs, wave.scc, wave.v[:len(start.v)].copy(), wave.lds.bytes.copy(),
                                 buffer.copy(), [pc], {}))
    launch.executors.spread_hits(launch.hits)
    if native:
        launch.native.finish(launch.hits, launch.bytes_moved)
    wave.s[start.buffer_sgpr:start.buffer_sgpr + 2] = [0, 0]  # the copies' own addresses
    wave.s[start.descriptor_sgpr:start.descriptor_sgpr + 2] = [0, 0]
    return End(list(wave.s), wave.scc, wave.v[:len(start.v)].copy(), wave.lds.bytes.copy(), buffer,
               launch.hits, dict(launch.bytes_moved))


def first_step_apart(code, one: list, other: list) -> str | None:
    """The first instruction after which two step traces differ, and how (None: never)."""
    for mine, theirs in zip(one, other):
        found = differences(mine, theirs)
        if found:
            return f"{code.program.instructions[mine.hits[0]].text}: {found}"
    return None if len(one) == len(other) else f"{len(one)} steps against {len(other)}"


def differences(one: End, other: End) -> list[str]:
    """Where two ends differ, bit for bit (empty: the same)."""
    found = []
    if one.s != other.s:
        found.append(f"SGPRs {[k for k in range(len(one.s)) if one.s[k] != other.s[k]]}")
    if one.scc != other.scc:
        found.append("SCC")
    rows = np.flatnonzero((one.v != other.v).any(axis=1))
    if len(rows):
        found.append(f"VGPR rows {rows.tolist()[:8]}")
    if not np.array_equal(one.lds, other.lds):
        found.append("LDS")
    if not np.array_equal(one.buffer, other.buffer):
        found.append("memory")
    if one.hits != other.hits:
        found.append("hits")
    if one.bytes_moved != other.bytes_moved:
        found.append(f"bytes {one.bytes_moved} vs {other.bytes_moved}")
    return found
