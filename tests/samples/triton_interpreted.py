#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: a Triton kernel (an element-wise copy of the reference output); on a CPU it can only
# run through the interpreter, and it reports whether TRITON_INTERPRET was set.
import os

import torch
import triton
import triton.language as tl

from task import input_t, output_t
from reference import ref_kernel

LAST_RUN_INFO = {}


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    expected = ref_kernel(data).to(torch.float32).contiguous()
    out = torch.empty_like(expected)
    n = expected.numel()
    copy_kernel[(triton.cdiv(n, 4096),)](expected, out, n, BLOCK=4096)
    LAST_RUN_INFO["TRITON_INTERPRET"] = os.environ.get("TRITON_INTERPRET", "")
    return out.to(torch.bfloat16)
