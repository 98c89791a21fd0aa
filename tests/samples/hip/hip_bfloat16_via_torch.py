#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: includes only hip/hip_bf16.h yet uses the older hip_bfloat16 type, as a public submission that ran on
the runner does. There torch's headers bring hip/hip_bfloat16.h in: torch/types.h -> c10/util/complex.h ->
torch/headeronly/util/complex.h -> thrust/complex.h (rocThrust) -> rocprim/config.hpp -> hip/hip_bfloat16.h
(expected: ok; tests/samples/hip/EXPECTED.md)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor halve_bf16(torch::Tensor x);"
HIP_SOURCE = r"""
#include <hip/hip_bf16.h>

__global__ void halve_kernel(const hip_bfloat16* x, hip_bfloat16* y, int n) {  // EXPECT-KERNEL halve_kernel
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = hip_bfloat16(static_cast<float>(x[i]) * 0.5f);
}

torch::Tensor halve_bf16(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int n = static_cast<int>(x.numel());
    halve_kernel<<<(n + 255) / 256, 256>>>(reinterpret_cast<const hip_bfloat16*>(x.data_ptr()),
                                          reinterpret_cast<hip_bfloat16*>(y.data_ptr()), n);
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_hip_bfloat16_via_torch", cpp_sources=CPP_SOURCE,
                                       cuda_sources=HIP_SOURCE, functions=["halve_bf16"])
    return _built["module"].halve_bf16(data[0])
