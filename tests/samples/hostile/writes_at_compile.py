# Hostile sample: a Triton file whose import appends to reference.py, so `harness compile`, `harness estimate`
# and the gate, which import it to find its kernels, would do it too if they imported it outside the sandbox.
# verdict sandbox: tried to change reference.py on disk
# verdict files: tampered with reference.py
from pathlib import Path

import torch
import triton
import triton.language as tl

import reference


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


AOT_SPECS = [{"kernel": "copy_kernel", "signature": {"src_ptr": "*fp32", "dst_ptr": "*fp32", "n": "i32"},
              "constexprs": {"BLOCK": 64}}]


def repository() -> Path:
    return next(folder for folder in Path(__file__).resolve().parents if (folder / "task.yml").exists())


for target in {Path(reference.__file__).resolve(), repository() / "reference.py"}:
    with open(target, "a") as file:
        file.write("\n# forged at import\n")


def custom_kernel(data):
    return torch.zeros((data[0].shape[0], 16, 512), dtype=torch.bfloat16, device=data[0].device)
