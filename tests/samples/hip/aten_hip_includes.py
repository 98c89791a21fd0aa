#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: includes ATen/hip headers directly and guards the device the ROCm way (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor negate(torch::Tensor x);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/hip/HIPContext.h>
#include <ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h>
#include <hip/hip_runtime.h>

__global__ void negate_kernel(const float* x, float* y, long n) {
    const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}

torch::Tensor negate(torch::Tensor x) {
    const at::hip::HIPGuardMasqueradingAsCUDA guard(x.device());
    auto y = torch::empty_like(x);
    const long n = x.numel();
    negate_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_aten_hip", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["negate"], extra_cuda_cflags=["-O3"])
    return _built["module"].negate(data[0].float())
