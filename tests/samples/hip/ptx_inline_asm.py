#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: CUDA-only code, PTX inline asm that hipify leaves alone; AMD's assembler rejects it
(expected: compile_error)."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CPP_SOURCE = "torch::Tensor lane_ids(torch::Tensor like);"
CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void lane_ids_kernel(int* out) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));  // EXPECT-ERROR
    out[threadIdx.x] = static_cast<int>(lane);
}

torch::Tensor lane_ids(torch::Tensor like) {
    auto out = torch::empty({64}, like.options().dtype(torch::kInt32));
    lane_ids_kernel<<<1, 64>>>(out.data_ptr<int>());
    return out;
}
"""

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_ptx", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                                       functions=["lane_ids"])
    return _built["module"].lane_ids(data[0])
