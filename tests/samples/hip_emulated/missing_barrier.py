#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Test sample (issue 27): a two-wave flash-decode on bf16 KV whose waves exchange their halves of each score
through LDS, double-buffered as public files do, but with the `__syncthreads()` between the write and the read
left out: the emulator's LDS race check fails the run."""
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <stdint.h>

constexpr int kDim = 576, kVDim = 512, kHeads = 16, kThreads = 128;

__device__ float bf16(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

// Two waves per (head, sequence); thread t owns value dims t + 128 j and, below 64, rope dim 512 + t.
__global__ __launch_bounds__(128) void two_wave_decode(const uint16_t* q, const uint16_t* kv, const int* kv_indptr,
                                                       float sm_scale, uint16_t* out) {
    const int head = blockIdx.x, seq = blockIdx.y, tid = threadIdx.x, wave = tid / 64;
    __shared__ float halves[2][2];  // [buffer][wave]
    const uint16_t* qrow = q + (static_cast<long>(seq) * kHeads + head) * kDim;
    float qv[5], acc[4] = {};
    for (int j = 0; j < 4; ++j) qv[j] = bf16(qrow[tid + kThreads * j]);
    qv[4] = tid < 64 ? bf16(qrow[kVDim + tid]) : 0.f;
    float row_max = -1e30f, row_sum = 0.f;
    for (int token = kv_indptr[seq], step = 0; token < kv_indptr[seq + 1]; ++token, ++step) {
        const uint16_t* krow = kv + static_cast<long>(token) * kDim;
        float k[4], dot = tid < 64 ? qv[4] * bf16(krow[kVDim + tid]) : 0.f;
        for (int j = 0; j < 4; ++j) {
            k[j] = bf16(krow[tid + kThreads * j]);
            dot += qv[j] * k[j];
        }
        for (int offset = 32; offset >= 1; offset >>= 1) dot += __shfl_xor(dot, offset);
        if (tid % 64 == 0) halves[step & 1][wave] = dot;
        // (missing: __syncthreads(); the other wave's half may not be there yet)
        const float score = (halves[step & 1][0] + halves[step & 1][1]) * sm_scale;
        const float new_max = fmaxf(row_max, score);
        const float rescale = __expf(row_max - new_max), weight = __expf(score - new_max);
        row_sum = row_sum * rescale + weight;
        for (int j = 0; j < 4; ++j) acc[j] = acc[j] * rescale + weight * k[j];
        row_max = new_max;
    }
    uint16_t* orow = out + (static_cast<long>(seq) * kHeads + head) * kVDim;
    for (int j = 0; j < 4; ++j) {
        uint32_t bits = __float_as_uint(acc[j] / row_sum);
        orow[tid + kThreads * j] = uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    }
}

torch::Tensor decode(torch::Tensor q, torch::Tensor kv, torch::Tensor kv_indptr, double sm_scale) {
    const int batch = static_cast<int>(kv_indptr.size(0)) - 1;
    auto out = torch::empty({q.size(0), kHeads, kVDim}, q.options());
    two_wave_decode<<<dim3(kHeads, batch), kThreads>>>(
        reinterpret_cast<const uint16_t*>(q.data_ptr()), reinterpret_cast<const uint16_t*>(kv.data_ptr()),
        kv_indptr.data_ptr<int>(), static_cast<float>(sm_scale), reinterpret_cast<uint16_t*>(out.data_ptr()));
    return out;
}
"""

_module = {}


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, _, kv_indptr, config = data
    if "m" not in _module:
        _module["m"] = load_inline(
            name="sample_missing_barrier", cpp_sources="torch::Tensor decode(torch::Tensor q, torch::Tensor kv, "
            "torch::Tensor kv_indptr, double sm_scale);",
            cuda_sources=HIP_SOURCE, functions=["decode"], extra_cuda_cflags=["-O3", "--offload-arch=gfx950"])
    return _module["m"].decode(q.contiguous(), kv_data["bf16"].contiguous(), kv_indptr, float(config["sm_scale"]))
