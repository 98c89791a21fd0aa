"""Run one file's custom_kernel on one case, either with its Triton kernels on the gfx950 emulator or through the
Triton interpreter, and save the output (python -m tests.emulator.agreement emulator|interpreter FILE B KV OUT).

Both see torch report ROCm, so the file takes the same path; the interpreter runs with its two faults mended,
as in the harness's child (harness/run/interpreter.py)."""
import importlib.util
import sys

import torch

import reference
from harness.run import interpreter


def main(how: str, path: str, batch: int, kv: int, out: str) -> None:
    if how == "emulator":
        from harness.emulator import launch_triton
        launch_triton.install()
    else:
        torch.version.hip = "interpreter, as ROCm"
        interpreter.mend()
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = reference.generate_input(batchsize=batch, qseqlen=1, kvseqlen=kv, seed=7)
    torch.save(module.custom_kernel(data), out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
