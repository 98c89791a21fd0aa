"""run_kernel: a grid of workgroups on the CPU. Waves of a workgroup take turns and meet at
s_barrier; workgroups run one after another until one runs long, then side by side (so a
workgroup spinning on another's flag lets that one run); no progress anywhere is a hang."""
import os
import struct
import time
from pathlib import Path

import numpy as np

from .code_object import CodeObject, KernelInfo
from .counts import LaunchCounts
from .errors import EmulationFault, NotEmulated
from .executor import Executors, build
from .lds import LDS_BYTES, LDS
from .native import capture, runner
from .progress import Progress
from .native.program import native_program
from .memory import HostMemory
from .operands import PRIVATE_APERTURE, SHARED_APERTURE
from .scratch import Scratch
from .sopp import BARRIER, END, YIELD
from . import trace as tracing
from .wave import LANES, Wave

__all__ = ["run_kernel", "HostMemory", "NotEmulated", "EmulationFault", "LaunchCounts"]
WAVE_QUANTUM = 4000          # wave instructions before the next wave of the workgroup runs
WORKGROUP_SLICE = 200_000    # before another workgroup is let in beside a long-running one
HANG_LIMIT = 3_000_000       # wave instructions with no store, barrier or wave end anywhere
MAX_RESIDENT = 1024
FLAT_SCRATCH = 102
# Per lane, for a kernel with a dynamic stack (calls, recursion): HIP's default stack limit, our reading.
DYNAMIC_STACK_BYTES = 1024
HIDDEN_U16 = ("hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z",
              "hidden_remainder_x", "hidden_remainder_y", "hidden_remainder_z", "hidden_grid_dims")


class Launch:
    def __init__(self, code, info, grid, block, memory, lds_size, quantum):
        self.code, self.info, self.grid, self.block = code, info, grid, block
        self.memory, self.lds_size, self.quantum = memory, lds_size, quantum
        if code.__dict__.get("_executors") is None:
            code.__dict__["_executors"] = Executors(code.program)
        self.executors = code.__dict__["_executors"]
        self.instructions = code.program.instructions
        self.hits = [0] * len(self.instructions)
        self.bytes_moved: dict[str, int] = {}
        self.clock = 0
        self.threads = block[0] * block[1] * block[2]
        self.waves_per_group = -(-self.threads // LANES)
        self.private_bytes = private_bytes(info)
        self.waves_started = 0
        self.native = None  # runner.LaunchState when the C fast path runs this launch
        self.traced: set[tuple[int, int, int]] = set()  # workgroups whose waves record their steps
        self.traces: dict[tuple[int, int, int], list[tracing.WaveTrace]] = {}
        self.unique_lines: dict[tuple[int, int, int], int] = {}  # per traced workgroup
        self.traced_hits = [0] * len(self.instructions)  # not used: their steps count them

    def trace_table(self) -> list:
        """The recording one-instruction table (kept on the program, as the executors are)."""
        program = self.code.program
        recorder = program.__dict__.get("_recorder")
        if recorder is None:
            recorder = tracing.Recorder(lambda i: build(program.instructions[i], program, i),
                                        len(self.instructions))
            program.__dict__["_recorder"] = recorder
        return recorder.table


def private_bytes(info: KernelInfo) -> int:
    """Scratch per lane: the kernel's fixed size, and a stack for one that grows it."""
    dynamic = info.metadata.get(".uses_dynamic_stack", False)
    return info.private_segment_size + DYNAMIC_STACK_BYTES * bool(dynamic)


def hidden_arguments(info: KernelInfo, segment: np.ndarray, grid, block, dynamic_lds, queue_address):
    values = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1],
              "hidden_block_count_z": grid[2], "hidden_group_size_x": block[0],
              "hidden_group_size_y": block[1], "hidden_group_size_z": block[2],
              "hidden_grid_dims": 3 if grid[2] > 1 or block[2] > 1 else (2 if grid[1] > 1 or block[1] > 1 else 1),
              "hidden_dynamic_lds_size": dynamic_lds, "hidden_private_base": PRIVATE_APERTURE >> 32,
              "hidden_shared_base": SHARED_APERTURE >> 32, "hidden_queue_ptr": queue_address}
    for offset, size, kind in info.args:
        if not kind.startswith("hidden_"):
            continue
        value = values.get(kind, 0)
        segment[offset:offset + size] = np.frombuffer(value.to_bytes(8, "little")[:size], np.uint8)


def dispatch_packet(info, grid, block, kernarg_address) -> np.ndarray:
    """The AQL dispatch packet, for kernels that read the workgroup size through dispatch_ptr."""
    packet = np.zeros(64, np.uint8)
    dims = 3 if grid[2] > 1 or block[2] > 1 else (2 if grid[1] > 1 or block[1] > 1 else 1)
    struct.pack_into("<HHHHHHIIIII", packet, 0, 0, dims, *block, 0,
                     *(g * b for g, b in zip(grid, block)), private_bytes(info),
                     info.group_segment_size)
    struct.pack_into("<QQ", packet, 32, 0, kernarg_address)
    return packet


class Workgroup:
    def __init__(self, launch: Launch, group_id, setup):
        self.launch, self.id = launch, group_id
        self.lds = LDS(launch.lds_size, checked=launch.waves_per_group > 1)
        self.waves = [self.make_wave(k, setup) for k in range(launch.waves_per_group)]
        self.executed = 0
        self.traced = group_id in launch.traced
        for wave in self.waves if self.traced else ():
            wave.steps, wave.lanes = [], []
        self.lines: list = []  # a traced workgroup's cache lines, one array per access

    def make_wave(self, k, setup):
        launch, info = self.launch, self.launch.info
        wave = Wave(self, k, launch.code.program.index_of[info.entry])
        sgprs, _ = setup
        wave.s[:len(sgprs)] = sgprs
        at = info.user_sgpr_count
        for enabled, value in zip(info.workgroup_id, self.id):
            if enabled:
                wave.s[at] = value
                at += 1
        bx, by, _ = launch.block
        threads = np.arange(k * LANES, (k + 1) * LANES)
        x, y, z = threads % bx, threads // bx % by, threads // (bx * by)
        wave.v[0] = (x | y << 10 | z << 20).astype(np.uint32)
        active = threads < launch.threads
        wave.exec_bits = int(sum(1 << lane for lane in range(LANES) if active[lane]))
        wave.memory, wave.lds, wave.bytes_moved = launch.memory, self.lds, launch.bytes_moved
        wave.clock = 0
        # architected flat scratch: the wave's own private segment, its base in FLAT_SCRATCH
        wave.scratch = Scratch(launch.private_bytes, f"scratch of wave {launch.waves_started}")
        wave.set_sgpr64(FLAT_SCRATCH, wave.scratch.address)
        if launch.native is not None:
            launch.native.attach(wave)
        launch.waves_started += 1
        return wave

    @property
    def done(self) -> bool:
        return all(w.done for w in self.waves)

    def run(self, budget: int) -> int:
        """Runs the waves in turn for about budget wave instructions; returns progress events."""
        used, progress = 0, 0
        while used < budget and not self.done:
            for wave in self.waves:
                if wave.done or wave.at_barrier:
                    continue
                before = wave.progress
                used += self.step(wave)
                progress += wave.progress - before + wave.done
            waiting = [w for w in self.waves if not w.done]
            if waiting and all(w.at_barrier for w in waiting):
                for w in waiting:
                    w.at_barrier = False
                self.lds.epoch += 1
                progress += 1
        self.executed += used
        return progress, used

    def step(self, wave) -> int:
        """One turn of a wave: traced waves recording their steps and lines (in C where it runs)."""
        launch = self.launch
        if self.traced:
            launch.memory.touched = self.lines
            try:
                if launch.native:
                    return runner.run_wave(launch, wave, launch.quantum, traced=True)
                return run_wave(launch, wave, launch.quantum, launch.trace_table(), launch.traced_hits)
            finally:
                launch.memory.touched = None
        return (runner.run_wave if launch.native else run_wave)(launch, wave, launch.quantum)


def run_wave(launch: Launch, w: Wave, budget: int, table=None, hits=None) -> int:
    """Runs wave w for up to `budget` table entries (`table`: the executors', blocks and all,
    unless the C fast path or a trace passes a one-instruction table); returns the
    instructions run. hits: where they are counted (the launch's unless given)."""
    table = launch.executors.table if table is None else table
    hits = launch.hits if hits is None else hits
    i, n = w.pc, 0
    try:
        for n in range(1, budget + 1):  # n: instructions run, counted by the loop itself
            result = table[i](w)
            hits[i] += 1
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
    n += w.skipped  # the instructions blocks ran after their first
    w.skipped = 0
    w.clock += n
    return n


def initial_sgprs(info: KernelInfo, packet_address, queue_address, kernarg_address, segment) -> list[int]:
    values = []
    fields = {"private_segment_buffer": [0, 0, 0, 0], "dispatch_ptr": split64(packet_address),
              "queue_ptr": split64(queue_address), "kernarg_segment_ptr": split64(kernarg_address),
              "dispatch_id": [0, 0], "flat_scratch_init": [0, 0],
              "private_segment_size": [private_bytes(info)]}
    for name, enabled in info.user_sgprs.items():
        if enabled:
            values += fields[name]
    if info.preload_length:
        start = 4 * info.preload_offset
        words = segment[start:start + 4 * info.preload_length].view(np.uint32)
        values += [int(x) for x in words]
    return values


def split64(value: int) -> list[int]:
    return [value & 0xFFFFFFFF, value >> 32]


def run_kernel(code: CodeObject, name: str, grid, block, kernarg: bytes, dynamic_lds: int = 0,
               memory: HostMemory | None = None, quantum: int = WAVE_QUANTUM,
               native: bool = True, trace: tracing.TraceRequest | None = None) -> LaunchCounts:
    """quantum: wave instructions a wave runs before the next wave of its workgroup (1: lockstep);
    native: the C fast path where it is on and builds (else the numpy executors alone);
    trace: workgroups whose waves record each step and line (counts.trace), in C where it runs;
    $HARNESS_EMULATOR_TRACE asks for representative ones and saves them there."""
    info = code.kernels.get(name) or code.kernels.get(name.removesuffix(".kd"))
    if info is None:
        raise KeyError(f"no kernel {name} in the code object ({sorted(code.kernels)})")
    grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
    memory = memory if memory is not None else HostMemory()
    lds_size = info.group_segment_size + dynamic_lds
    if lds_size > LDS_BYTES:
        raise EmulationFault("lds too large", f"{lds_size} bytes of LDS, gfx950 has {LDS_BYTES}", info.name)
    segment = np.zeros(max(info.kernarg_size, len(kernarg), 8) + 64, np.uint8)
    segment[:len(kernarg)] = np.frombuffer(kernarg, np.uint8)
    queue = np.zeros(256, np.uint8)
    hidden_arguments(info, segment, grid, block, dynamic_lds, queue.ctypes.data)
    packet = dispatch_packet(info, grid, block, segment.ctypes.data)
    owned = [(segment, "kernarg segment"), (packet, "dispatch packet"), (queue, "queue"),
             (code.image, "code object globals")]
    for array, label in owned:
        memory.add_array(array, label)
    if os.environ.get(capture.ENV):
        capture.save(code, name, grid, block, kernarg, dynamic_lds, memory)
    launch = Launch(code, info, grid, block, memory, max(lds_size, 4), quantum)
    trace_folder = os.environ.get(tracing.ENV)
    if trace is None and trace_folder:
        trace = tracing.TraceRequest()
    if trace is not None:
        launch.traced = set(trace.chosen(grid))
    program = native_program(code, code.program.index_of[info.entry]) if native else None
    if program is not None:
        launch.native = runner.LaunchState(program, memory, len(launch.instructions), launch.executors,
                                           run_wave)
    setup = (initial_sgprs(info, packet.ctypes.data, queue.ctypes.data, segment.ctypes.data, segment), None)
    counts = LaunchCounts(info.name, grid, block, launch.waves_per_group, grid[0] * grid[1] * grid[2])
    if launch.native is not None:
        counts.engine = "C fast path (numpy for the rest)"
    started = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            schedule(launch, grid, setup, trace is not None and trace.only_traced)
    finally:
        for array, _ in owned:
            memory.remove_region(array.ctypes.data)
        counts.seconds = time.perf_counter() - started
        launch.executors.spread_hits(launch.hits)
        if launch.native is not None:
            launch.native.finish(launch.hits, launch.bytes_moved)
        add_traced_hits(launch)
        counts.add_hits(launch.instructions, launch.hits)
        counts.bytes = dict(launch.bytes_moved)
    if trace is not None:
        counts.trace = launch_trace(launch, lds_size, trace.only_traced)
        if trace_folder:
            tracing.save_to_folder(counts.trace, Path(trace_folder))
    return counts


def add_traced_hits(launch: Launch) -> None:
    """The traced waves' steps, each a hit (their table counted into traced_hits only)."""
    for waves in launch.traces.values():
        for wave in waves:
            for index, count in enumerate(np.bincount(wave.steps, minlength=len(launch.hits)).tolist()):
                if count:
                    launch.hits[index] += count


def launch_trace(launch: Launch, lds_size: int, only_traced: bool) -> tracing.LaunchTrace:
    info = launch.info
    resources = tracing.KernelResources(info.vgpr_count, info.agpr_count, info.sgpr_count, lds_size,
                                        launch.waves_per_group, launch.private_bytes)
    listing = [(ins.mnemonic, ins.text[len(ins.mnemonic):].strip()) for ins in launch.instructions]
    return tracing.LaunchTrace(info.name, launch.grid, launch.block, resources, listing,
                               dict(launch.traces), only_traced, dict(launch.unique_lines))


def schedule(launch: Launch, grid, setup, only_traced: bool = False) -> None:
    """only_traced: the traced workgroups alone run (launch.traced)."""
    pending = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    if only_traced:
        pending = [group for group in pending if group in launch.traced]
    pending.reverse()
    path = "C fast path" if launch.native is not None else "numpy executors"  # counts.engine
    progress_line = Progress(launch.info.name, len(pending), path)
    active: list[Workgroup] = []
    quiet = 0
    while pending or active:
        if not active or (pending and len(active) < MAX_RESIDENT and all(
                g.executed >= WORKGROUP_SLICE * len(active) for g in active)):
            active.append(Workgroup(launch, pending.pop(), setup))
        made = 0
        for group in list(active):
            progress, used = group.run(WORKGROUP_SLICE)
            made += progress
            quiet = 0 if progress else quiet + used
            if group.done:
                active.remove(group)
                if group.traced:
                    launch.traces[group.id] = [tracing.wave_trace(w) for w in group.waves]
                    launch.unique_lines[group.id] = tracing.count_lines(group.lines)
                progress_line.finished(group)
        if quiet > HANG_LIMIT and (not pending or len(active) >= MAX_RESIDENT):
            stuck = active[0].waves[0]
            ins = launch.instructions[stuck.pc]
            why = ("only the traced workgroups ran: one may wait on a workgroup that did not"
                   if only_traced else "a spin on a value no workgroup writes?")
            raise EmulationFault("hang", f"{len(active)} workgroups made no progress for {quiet} wave "
                                 f"instructions ({why})",
                                 launch.info.name, ins.mnemonic, f"0x{ins.pc:x}", ins.source_line)
