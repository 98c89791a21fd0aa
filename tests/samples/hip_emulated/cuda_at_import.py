#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Test sample (issue 39): a HIP file that speaks CUDA's device at import, as most public HIP files do: a
workspace made with device="cuda" at module level, the device's properties read and checked for gfx950, the
inputs checked to be CUDA tensors in Python and in the C++ host code (is_cuda(), device type kCUDA), and in the
call .cuda(), torch.cuda.Event and torch.cuda.synchronize(). The attention is plain torch in float32; the HIP
kernel's one job is to round that result to bf16 into the output (so an unrun kernel leaves poison). Passes on
the emulator; a CPU run without it stops at import."""
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

DEVICE = torch.cuda.current_device()
ARCH = torch.cuda.get_device_properties(DEVICE).gcnArchName
if not ARCH.startswith("gfx950"):
    raise RuntimeError(f"written for gfx950, found {ARCH}")
WORKSPACE = torch.empty(1 << 16, dtype=torch.float32, device="cuda")

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <stdint.h>

// Round to nearest even, one float per thread.
__global__ void to_bf16(const float* in, uint16_t* out, long count) {
    const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const uint32_t bits = __float_as_uint(in[i]);
    out[i] = uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

#define CHECK_ON_GPU(x) TORCH_CHECK(x.is_cuda() && x.device().type() == torch::kCUDA, #x " must be a CUDA tensor")

void round_into(torch::Tensor values, torch::Tensor out) {
    CHECK_ON_GPU(values);
    CHECK_ON_GPU(out);
    const long count = values.numel();
    const int threads = 256;
    const int blocks = static_cast<int>((count + threads - 1) / threads);
    to_bf16<<<blocks, threads>>>(values.data_ptr<float>(), reinterpret_cast<uint16_t*>(out.data_ptr()), count);
}
"""

_module = {}


def _rounding():
    if "m" not in _module:
        _module["m"] = load_inline(
            name="sample_cuda_at_import", cpp_sources="void round_into(torch::Tensor values, torch::Tensor out);",
            cuda_sources=HIP_SOURCE, functions=["round_into"], extra_cuda_cflags=["-O3", "--offload-arch=gfx950"])
    return _module["m"]


def _attention(q, kv, qo_indptr, kv_indptr, sm_scale):
    """float32 attention per sequence: keys are all 576 dims, values the first 512."""
    result = torch.empty(q.shape[0], q.shape[1], 512, dtype=torch.float32, device="cuda")
    for seq in range(qo_indptr.numel() - 1):
        rows = slice(int(qo_indptr[seq]), int(qo_indptr[seq + 1]))
        keys = kv[int(kv_indptr[seq]):int(kv_indptr[seq + 1])].reshape(-1, 576).float().cuda()
        scores = torch.einsum("qhd,td->qht", q[rows].float(), keys) * sm_scale
        result[rows] = torch.einsum("qht,td->qhd", torch.softmax(scores, dim=-1), keys[:, :512])
    return result


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    if not (q.is_cuda and q.device.type == "cuda"):
        raise RuntimeError(f"q must be on the GPU, found {q.device}")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    values = _attention(q, kv_data["bf16"], qo_indptr, kv_indptr, float(config["sm_scale"]))
    out = torch.empty(values.shape, dtype=torch.bfloat16, device=torch.device("cuda", DEVICE))
    _rounding().round_into(values.contiguous(), out)
    end.record()
    torch.cuda.synchronize()
    return out
