#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: the kernel source is generated at run time from the input's shape, so it cannot be read from
the file (expected: unsupported)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t


def kernel_source(width: int) -> str:
    return f"""
#include <hip/hip_runtime.h>
__global__ void copy_kernel(const float* x, float* y) {{ y[threadIdx.x % {width}] = x[threadIdx.x]; }}
"""


_built = {}


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_runtime_source", cpp_sources="",
                                       cuda_sources=kernel_source(q.shape[-1]), extra_cuda_cflags=["-O3"])
    raise NotImplementedError("sample only")
