#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: hip/hip_bf16.h intrinsics in a kernel (expected: ok; tests/samples/hip/EXPECTED.md)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor scale_bf16(torch::Tensor x, double factor);"
HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>

__global__ void scale_bf16_kernel(const __hip_bfloat16* x, __hip_bfloat16* y, float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(__bfloat162float(x[i]) * factor);
}

torch::Tensor scale_bf16(torch::Tensor x, double factor) {
    auto y = torch::empty_like(x);
    const int n = static_cast<int>(x.numel());
    scale_bf16_kernel<<<(n + 255) / 256, 256>>>(reinterpret_cast<const __hip_bfloat16*>(x.data_ptr()),
                                               reinterpret_cast<__hip_bfloat16*>(y.data_ptr()),
                                               static_cast<float>(factor), n);
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_bf16_header", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["scale_bf16"], extra_cuda_cflags=["-O3"])
    return _built["module"].scale_bf16(data[0], 1.0)
