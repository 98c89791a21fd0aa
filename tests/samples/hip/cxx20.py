#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: built with -std=c++20 and using concepts and designated initializers in device code (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double a);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <concepts>

template <std::floating_point T>
struct Axpy {
    T a;
    __device__ T operator()(T x, T y) const { return a * x + y; }
};

template <std::floating_point T>
__global__ void axpy_kernel(Axpy<T> op, const T* x, T* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = op(x[i], y[i]);
}

torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double a) {
    auto out = y.clone();
    const int n = static_cast<int>(x.numel());
    axpy_kernel<float><<<(n + 255) / 256, 256>>>(Axpy<float>{.a = static_cast<float>(a)}, x.data_ptr<float>(),
                                                 out.data_ptr<float>(), n);
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_cxx20", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["axpy"], extra_cuda_cflags=["-O3", "-std=c++20"])
    q = data[0].float()
    return _built["module"].axpy(q, q, 2.0)
