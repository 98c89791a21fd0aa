#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: its own flags, -O2 and the half operators torch turns off (-U__HIP_NO_HALF_*), used with __half
arithmetic that only compiles with them (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

FLAGS = ["-O2", "-U__HIP_NO_HALF_OPERATORS__", "-U__HIP_NO_HALF_CONVERSIONS__", "-ffp-contract=fast"]
CPP_SOURCE = "torch::Tensor half_fma(torch::Tensor a, torch::Tensor b);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

__global__ void half_fma_kernel(const __half* a, const __half* b, __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i] + a[i];
}

torch::Tensor half_fma(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const int n = static_cast<int>(a.numel());
    half_fma_kernel<<<(n + 255) / 256, 256>>>(reinterpret_cast<const __half*>(a.data_ptr()),
                                             reinterpret_cast<const __half*>(b.data_ptr()),
                                             reinterpret_cast<__half*>(out.data_ptr()), n);
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_own_flags", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["half_fma"], extra_cuda_cflags=FLAGS)
    q = data[0].half()
    return _built["module"].half_fma(q, q)
