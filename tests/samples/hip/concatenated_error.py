#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""HIP sample: the source is a header string + textwrap.dedent(body); an undeclared name in the body is
reported at its line in this file (expected: compile_error)."""
import textwrap

import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

HEADER = "#include <torch/extension.h>\n#include <hip/hip_runtime.h>\n"
BODY = textwrap.dedent("""\
    __global__ void shift_kernel(float* y, int n) {
        const int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += offset_value;  // EXPECT-ERROR: never declared
    }
    torch::Tensor shift(torch::Tensor y) {
        const int n = static_cast<int>(y.numel());
        shift_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
        return y;
    }
""")

_built = {}


def custom_kernel(data: input_t) -> output_t:
    if "module" not in _built:
        _built["module"] = load_inline(name="sample_concatenated", cpp_sources="torch::Tensor shift(torch::Tensor y);",
                                       cuda_sources=HEADER + BODY, functions=["shift"])
    return _built["module"].shift(data[0].float().clone())
