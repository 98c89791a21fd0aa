#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: the same MFMA through its builtin; LLVM puts the wait states before the first read (expected: ok)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor tile_product(torch::Tensor a, torch::Tensor b);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

typedef float v4f __attribute__((ext_vector_type(4)));
typedef _Float16 v4h __attribute__((ext_vector_type(4)));

__global__ void tile_product_kernel(const v4h* a, const v4h* b, float* out) {
    const int lane = threadIdx.x;
    v4f acc = {0.f, 0.f, 0.f, 0.f};
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(a[lane], b[lane], acc, 0, 0, 0);
    out[lane] = acc[0] * 2.f + acc[1];
}

torch::Tensor tile_product(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty({64}, a.options().dtype(torch::kFloat32));
    tile_product_kernel<<<1, 64>>>(reinterpret_cast<const v4h*>(a.data_ptr()), reinterpret_cast<const v4h*>(b.data_ptr()),
                                   out.data_ptr<float>());
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_builtin_mfma", cpp_sources=CPP_SOURCE,
                                       cuda_sources=HIP_SOURCE, functions=["tile_product"], extra_cuda_cflags=["-O3"])
    q = data[0].half()
    return _built["module"].tile_product(q, q)
