#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: 1024-thread blocks cap a thread at 128 VGPRs while the kernel keeps 192 values live (expected: spills)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor mix(torch::Tensor x);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

constexpr int kLive = 192;

__global__ __launch_bounds__(1024) void mix_kernel(const float* __restrict__ x, float* __restrict__ y) {
    float v[kLive];
#pragma unroll
    for (int i = 0; i < kLive; ++i) v[i] = x[threadIdx.x + i * 1024];
    float total = 0.f;
#pragma unroll
    for (int r = 1; r < 4; ++r)
#pragma unroll
        for (int i = 0; i < kLive; ++i) total += v[i] * v[(i * 7 + r) % kLive];
    y[threadIdx.x] = total;
}

torch::Tensor mix(torch::Tensor x) {
    auto y = torch::empty({1024}, x.options());
    mix_kernel<<<1, 1024>>>(x.data_ptr<float>(), y.data_ptr<float>());
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_spills", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["mix"], extra_cuda_cflags=["-O3"])
    return _built["module"].mix(data[0].float())
