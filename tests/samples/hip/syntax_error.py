#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: a missing semicolon in the kernel; the verdict names this .py file's line (expected: compile_error)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor twice(torch::Tensor x);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void twice_kernel(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x  // EXPECT-ERROR: no ';'
    if (i < n) y[i] = 2.f * x[i];
}

torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int n = static_cast<int>(x.numel());
    twice_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_syntax_error", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["twice"], extra_cuda_cflags=["-O3"])
    return _built["module"].twice(data[0].float())
