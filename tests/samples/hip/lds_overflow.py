#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: a kernel asking for 192 KiB of LDS, over gfx950's 160 KiB per workgroup (expected: lds_overflow)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor reverse_tile(torch::Tensor x);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

constexpr int kTile = 48 * 1024;  // floats: 196608 bytes

__global__ void reverse_tile_kernel(const float* x, float* y) {
    __shared__ float tile[kTile];
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) tile[i] = x[i];
    __syncthreads();
    for (int i = threadIdx.x; i < kTile; i += blockDim.x) y[i] = tile[kTile - 1 - i];
}

torch::Tensor reverse_tile(torch::Tensor x) {
    auto y = torch::empty_like(x);
    reverse_tile_kernel<<<1, 256>>>(x.data_ptr<float>(), y.data_ptr<float>());
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_lds_overflow", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["reverse_tile"], extra_cuda_cflags=["-O3"])
    return _built["module"].reverse_tile(data[0].float())
