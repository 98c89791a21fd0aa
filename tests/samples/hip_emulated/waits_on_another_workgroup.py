#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Test sample (issue 40): every workgroup of a small launch but the second waits until the second has set a
flag, then the answer comes from the reference. Passes. The estimate's recorded call runs only a launch's
traced workgroups (the first, middle and last), which wait on one that never runs: the emulator stops it as a
hang, and the call must be run again whole."""
import torch
from torch.utils.cpp_extension import load_inline

from reference import ref_kernel
from task import input_t, output_t

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>

__global__ void wait_for_second(int* flag, int* seen) {
    if (blockIdx.x == 1) {
        if (threadIdx.x == 0) atomicExch(flag, 1);
        return;
    }
    if (threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) {}
        seen[blockIdx.x] = 1;
    }
}

torch::Tensor wait(torch::Tensor flag) {
    auto seen = torch::zeros({8}, flag.options());
    wait_for_second<<<8, 64>>>(flag.data_ptr<int>(), seen.data_ptr<int>());
    return seen;
}
"""

_module = {}


def custom_kernel(data: input_t) -> output_t:
    if "m" not in _module:
        _module["m"] = load_inline(name="sample_waits_on_another_workgroup",
                                   cpp_sources="torch::Tensor wait(torch::Tensor flag);", cuda_sources=HIP_SOURCE,
                                   functions=["wait"], extra_cuda_cflags=["-O3"])
    flag = torch.zeros(1, dtype=torch.int32, device=data[0].device)
    seen = _module["m"].wait(flag)
    if int(seen.sum()) != 7:
        raise RuntimeError(f"workgroups that saw the flag: {seen.tolist()}")
    return ref_kernel(data)
