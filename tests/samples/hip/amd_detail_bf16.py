#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: includes hip/amd_detail/amd_hip_bf16.h directly and uses bf16 vector math (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor add_pairs(torch::Tensor a, torch::Tensor b);"
HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <hip/amd_detail/amd_hip_bf16.h>

__global__ void add_pairs_kernel(const __hip_bfloat162* a, const __hip_bfloat162* b, __hip_bfloat162* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd2(a[i], b[i]);
}

torch::Tensor add_pairs(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const int n = static_cast<int>(a.numel() / 2);
    add_pairs_kernel<<<(n + 127) / 128, 128>>>(reinterpret_cast<const __hip_bfloat162*>(a.data_ptr()),
                                              reinterpret_cast<const __hip_bfloat162*>(b.data_ptr()),
                                              reinterpret_cast<__hip_bfloat162*>(out.data_ptr()), n);
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_amd_detail_bf16", cpp_sources=CPP_SOURCE,
                                       cuda_sources=HIP_SOURCE, functions=["add_pairs"], extra_cuda_cflags=["-O3"])
    q = data[0]
    return _built["module"].add_pairs(q, q)
