#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""GPU bad submission: a Triton kernel that stores 64 GiB past the end of its buffer.

Expected: error (an illegal memory access, or a signal if the driver kills the process); the next
submission runs normally in a fresh worker.
"""
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def _scribble(out_ptr):
    offsets = tl.arange(0, 1024).to(tl.int64) + (1 << 34)
    tl.store(out_ptr + offsets, tl.zeros((1024,), dtype=tl.float32))


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    out = torch.zeros((q.shape[0], 16, 512), dtype=torch.float32, device=q.device)
    _scribble[(1,)](out)
    torch.cuda.synchronize()
    return out.bfloat16()
