"""A launch saved to disk (code object, arguments, every region's bytes) and replayed in this
process with its pointers moved to fresh copies: for profiles, rates and differential tests.
$HARNESS_EMULATOR_CAPTURE names the folder run_kernel saves launches to (small cases only)."""
import os
import pickle
from pathlib import Path

import numpy as np

ENV = "HARNESS_EMULATOR_CAPTURE"
OWNED = ("kernarg segment", "dispatch packet", "queue", "code object globals")


def save(code, name, grid, block, kernarg: bytes, dynamic_lds: int, memory) -> None:
    """Writes launch-N.pkl into $HARNESS_EMULATOR_CAPTURE (called by run_kernel when it is set)."""
    folder = Path(os.environ[ENV])
    folder.mkdir(parents=True, exist_ok=True)
    regions = [(r.address, r.bytes.tobytes(), r.name) for r in memory.regions
               if r.name not in OWNED]
    launch = {"blob": code.blob, "name": name, "grid": tuple(grid), "block": tuple(block),
              "kernarg": bytes(kernarg), "dynamic_lds": dynamic_lds, "regions": regions}
    path = folder / f"launch-{len(list(folder.glob('launch-*.pkl'))):04d}.pkl"
    path.write_bytes(pickle.dumps(launch))


class Replay:
    """One saved launch with its regions as new arrays and the kernarg's pointers moved there."""

    def __init__(self, launch: dict):
        self.launch = launch
        self.arrays = [np.frombuffer(data, np.uint8).copy() for _, data, _ in launch["regions"]]
        self.kernarg = self.moved(launch["kernarg"])

    def moved(self, kernarg: bytes) -> bytes:
        words = bytearray(kernarg)
        for at in range(0, len(words) - 7, 8):
            value = int.from_bytes(words[at:at + 8], "little")
            for (old, data, _), array in zip(self.launch["regions"], self.arrays):
                if old <= value < old + max(len(data), 1):
                    words[at:at + 8] = (array.ctypes.data + value - old).to_bytes(8, "little")
                    break
        return bytes(words)

    def memory(self):
        from harness.emulator.memory import HostMemory
        memory = HostMemory()
        for (_, _, label), array in zip(self.launch["regions"], self.arrays):
            memory.add_array(array, label)
        return memory

    def arguments(self, code=None) -> tuple:
        """run_kernel's arguments for it, on the regions as they are now: run_kernel(*replay.arguments())
        (launch imports this module, so the call is the caller's)."""
        from harness.emulator.code_object import load_code_object
        launch = self.launch
        code = code or load_code_object(launch["blob"])
        return (code, launch["name"], launch["grid"], launch["block"], self.kernarg,
                launch["dynamic_lds"], self.memory())


def load(path) -> Replay:
    return Replay(pickle.loads(Path(path).read_bytes()))
