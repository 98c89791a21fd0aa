"""What the timing model reads of an emulated launch: per traced wave, the instructions it ran
in order, with the lanes each had active. The emulator writes it (run_kernel's trace option);
harness/estimate's gfx950 timeline reads it. Saved as one .npz, read back the same."""
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .wave import EXEC

FORMAT = 2  # bump when a field changes meaning; load() upgrades the older ones it knows
# 1: no unique_lines (its traffic is then the op widths alone)
READS = (1, 2)


@dataclass
class KernelResources:
    """What bounds the waves a CU holds: from the code object's descriptor and metadata."""
    vgprs: int
    agprs: int
    sgprs: int
    lds_bytes: int            # group segment, dynamic LDS included
    waves_per_workgroup: int
    scratch_bytes: int = 0    # per lane


@dataclass
class WaveTrace:
    steps: np.ndarray   # int32: indices into LaunchTrace.instructions, in the order run
    lanes: np.ndarray   # uint8: active lanes (popcount of EXEC) at each step


@dataclass
class LaunchTrace:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    resources: KernelResources
    instructions: list[tuple[str, str]]  # (mnemonic, operands as disassembled), by index
    # traced workgroups: {workgroup id: its waves' traces}; the rest of the grid was not traced
    workgroups: dict[tuple[int, int, int], list[WaveTrace]] = field(default_factory=dict)
    only_traced: bool = False  # True: the untraced workgroups did not run at all
    # per traced workgroup: the distinct 128-byte lines its global loads and stores touched
    unique_lines: dict[tuple[int, int, int], int] = field(default_factory=dict)

    @property
    def workgroup_count(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def save(self, path: Path) -> None:
        arrays, waves = {}, []
        for group, traces in self.workgroups.items():
            for k, wave in enumerate(traces):
                name = f"w{len(waves)}"
                arrays[name + "_steps"], arrays[name + "_lanes"] = wave.steps, wave.lanes
                waves.append([list(group), k])
        head = {"format": FORMAT, "kernel": self.kernel, "grid": list(self.grid),
                "block": list(self.block), "resources": vars(self.resources),
                "instructions": self.instructions, "waves": waves,
                "only_traced": self.only_traced,
                "unique_lines": [[list(g), n] for g, n in self.unique_lines.items()]}
        arrays["head"] = np.frombuffer(json.dumps(head).encode(), np.uint8)
        np.savez_compressed(path, **arrays)


def load(path: Path) -> LaunchTrace:
    with np.load(path) as saved:
        head = json.loads(saved["head"].tobytes())
        if head.get("format") not in READS:
            raise ValueError(f"{path}: trace format {head.get('format')}, this harness reads {READS}")
        trace = LaunchTrace(head["kernel"], tuple(head["grid"]), tuple(head["block"]),
                            KernelResources(**head["resources"]),
                            [tuple(pair) for pair in head["instructions"]],
                            only_traced=head["only_traced"],
                            unique_lines={tuple(g): n for g, n in head.get("unique_lines", [])})
        for n, (group, _) in enumerate(head["waves"]):
            wave = WaveTrace(saved[f"w{n}_steps"], saved[f"w{n}_lanes"])
            trace.workgroups.setdefault(tuple(group), []).append(wave)
    return trace


ENV = "HARNESS_EMULATOR_TRACE"  # a folder: every launch traces representative workgroups there


@dataclass
class TraceRequest:
    """Which workgroups of a launch to trace: explicit (x, y, z) ids, or "representative"
    (the first, middle and last of the grid). only_traced: run those alone (their outputs
    are then all a launch writes: for estimates, not for results)."""
    workgroups: str | list[tuple[int, int, int]] = "representative"
    only_traced: bool = False

    def chosen(self, grid: tuple[int, int, int]) -> list[tuple[int, int, int]]:
        """The traced workgroup ids, in the order the grid would run them."""
        gx, gy, gz = grid
        count = gx * gy * gz
        if self.workgroups == "representative":
            linear = sorted({0, count // 2, count - 1})
            return [(n % gx, n // gx % gy, n // (gx * gy)) for n in linear]
        ids = [tuple(g) + (0,) * (3 - len(g)) for g in self.workgroups]
        outside = [g for g in ids if not all(0 <= c < n for c, n in zip(g, grid))]
        if outside:
            raise ValueError(f"traced workgroups {outside} are outside the grid {grid}")
        return sorted(set(ids), key=lambda g: (g[2], g[1], g[0]))


class Recorder:
    """The one-instruction table traced waves run: each entry notes its index and active
    lanes in the wave's `steps`/`lanes` lists before it runs. Built lazily, kept per program."""

    def __init__(self, build_single, count: int):
        """build_single(index) -> the executor of that one instruction (no blocks)."""
        self.build_single = build_single
        self.table = [self.lazy(i) for i in range(count)]

    def lazy(self, index: int):
        def first_run(w):
            self.table[index] = self.recording(index)
            return self.table[index](w)
        return first_run

    def recording(self, index: int):
        single = self.build_single(index)
        # a region that runs the instructions after it itself (gpr_idx): each is a step too
        covered = list(range(index, getattr(single, "span_end", None) or index + 1))

        def step(w):
            active = (w.s[EXEC] | w.s[EXEC + 1] << 32).bit_count()
            w.steps.extend(covered)
            w.lanes.extend([active] * len(covered))
            return single(w)
        return step


def count_lines(lines: list) -> int:
    """Distinct cache lines among a workgroup's accesses (arrays of line numbers)."""
    return int(np.unique(np.concatenate(lines)).size) if lines else 0


def wave_trace(wave) -> WaveTrace:
    return WaveTrace(np.array(wave.steps, np.int32), np.array(wave.lanes, np.uint8))


def save_to_folder(trace: LaunchTrace, folder: Path) -> Path:
    """launch-NNNN-<kernel>.npz in folder (the next free number): what $HARNESS_EMULATOR_TRACE keeps."""
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("launch-*.npz")))
    path = folder / f"launch-{number:04d}-{trace.kernel[:80]}.npz"
    trace.save(path)
    return path
