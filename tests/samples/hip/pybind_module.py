#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: its own PYBIND11_MODULE in the HIP source (functions=None), so the device compile must see
pybind11 through torch/extension.h (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void clamp_kernel(float* y, float low, float high, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fminf(fmaxf(y[i], low), high);
}

torch::Tensor clamp_(torch::Tensor y, double low, double high) {
    const int n = static_cast<int>(y.numel());
    clamp_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), static_cast<float>(low), static_cast<float>(high), n);
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("clamp_", &clamp_, "clamp in place", pybind11::arg("y"), pybind11::arg("low"), pybind11::arg("high"));
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_pybind", cpp_sources="", cuda_sources=HIP_SOURCE,
                                       extra_cuda_cflags=["-O3"])
    return _built["module"].clamp_(data[0].float().clone(), -1.0, 1.0)
