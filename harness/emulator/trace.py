"""What the timing model reads of an emulated launch: per traced wave, the instructions it ran
in order, with the lanes each had active. The emulator writes it (run_kernel's trace option);
harness/estimate's gfx950 timeline reads it. Saved as one .npz, read back the same."""
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMAT = 1  # bump when a field changes meaning; load() refuses other formats


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
                "only_traced": self.only_traced}
        arrays["head"] = np.frombuffer(json.dumps(head).encode(), np.uint8)
        np.savez_compressed(path, **arrays)


def load(path: Path) -> LaunchTrace:
    with np.load(path) as saved:
        head = json.loads(saved["head"].tobytes())
        if head.get("format") != FORMAT:
            raise ValueError(f"{path}: trace format {head.get('format')}, this harness reads {FORMAT}")
        trace = LaunchTrace(head["kernel"], tuple(head["grid"]), tuple(head["block"]),
                            KernelResources(**head["resources"]),
                            [tuple(pair) for pair in head["instructions"]],
                            only_traced=head["only_traced"])
        for n, (group, _) in enumerate(head["waves"]):
            wave = WaveTrace(saved[f"w{n}_steps"], saved[f"w{n}_lanes"])
            trace.workgroups.setdefault(tuple(group), []).append(wave)
    return trace
