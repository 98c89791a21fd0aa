#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: HIP source built with load_inline for gfx950 (only its text matters to the tests).
import os

from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

os.environ.setdefault("PYTORCH_ROCM_ARCH", "gfx950")

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
__global__ void touch(float* x) { x[threadIdx.x] = 0.0f; }
"""

_module = None


def custom_kernel(data: input_t) -> output_t:
    global _module
    if _module is None:
        _module = load_inline(name="touch", cpp_sources="", cuda_sources=HIP_SOURCE,
                              extra_cuda_cflags=["--offload-arch=gfx950"])
    raise NotImplementedError("sample only")
