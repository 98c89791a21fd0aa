#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: the gfx950-only scaled fp8 MFMA builtin; builds for gfx950 (expected: ok) but not for gfx942
(expected: compile_error, the builtin needs gfx950's instructions)."""
import os

import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor fp8_tile(torch::Tensor a, torch::Tensor b);"
HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

typedef float v4f __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));

__global__ void fp8_tile_kernel(const v8i* a, const v8i* b, v4f* out) {
    const int lane = threadIdx.x;
    const v4f zero = {0.f, 0.f, 0.f, 0.f};
    out[lane] = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a[lane], b[lane], zero, 0, 0, 0, 127, 0, 127);  // EXPECT-ERROR gfx942
}

torch::Tensor fp8_tile(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty({64, 4}, a.options().dtype(torch::kFloat32));
    fp8_tile_kernel<<<1, 64>>>(reinterpret_cast<const v8i*>(a.data_ptr()), reinterpret_cast<const v8i*>(b.data_ptr()),
                               reinterpret_cast<v4f*>(out.data_ptr()));
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        os.environ["PYTORCH_ROCM_ARCH"] = "gfx950"
        _built["module"] = load_inline(name="sample_gfx950_builtin", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                                       functions=["fp8_tile"], extra_cuda_cflags=["-O3"])
    q = data[0].view(torch.uint8)
    return _built["module"].fp8_tile(q, q)
