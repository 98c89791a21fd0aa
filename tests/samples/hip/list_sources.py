#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: cuda_sources given as a list of two strings, name and flags bound to module names; each kernel's
line in the report is its line in this file (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

MODULE_NAME = "sample_list_sources"
FLAGS = ["-O3", "--offload-arch=gfx950"]
KERNELS = r"""
#include <hip/hip_runtime.h>
__global__ void fill_kernel(float* y, float value, int n) {  // EXPECT-KERNEL fill_kernel
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = value;
}
"""
WRAPPER = """
#include <torch/extension.h>
__global__ void square_kernel(float* y, int n) {  // EXPECT-KERNEL square_kernel
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= y[i];
}
torch::Tensor filled_square(torch::Tensor like, double value) {
    auto y = torch::empty_like(like);
    const int n = static_cast<int>(y.numel());
    fill_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), static_cast<float>(value), n);
    square_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(MODULE_NAME, "torch::Tensor filled_square(torch::Tensor like, double value);",
                                       [KERNELS, WRAPPER], functions=["filled_square"], extra_cuda_cflags=FLAGS)
    return _built["module"].filled_square(data[0].float(), 3.0)
