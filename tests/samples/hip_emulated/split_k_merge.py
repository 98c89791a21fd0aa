#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Test sample (issue 27): split-K flash-decode on bf16 KV, in the style of public HIP MLA files: a split kernel
writes each KV split's unnormalised output and (max, sum), a merge kernel combines them exactly. Passes."""
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

SPLITS = 3

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <stdint.h>

constexpr int kDim = 576, kVDim = 512, kHeads = 16, kLanes = 64;

__device__ float bf16(uint16_t bits) { return __uint_as_float(uint32_t(bits) << 16); }

// One wave per (split, head, sequence).
__global__ __launch_bounds__(64) void split_kernel(const uint16_t* q, const uint16_t* kv, const int* kv_indptr,
                                                   float sm_scale, int splits, float* part, float* ml) {
    const int split = blockIdx.x, head = blockIdx.y, seq = blockIdx.z, lane = threadIdx.x;
    const int begin = kv_indptr[seq], end = kv_indptr[seq + 1];
    const int per = (end - begin + splits - 1) / splits;
    const int lo = begin + split * per, hi = min(lo + per, end);
    const long row = (static_cast<long>(seq) * kHeads + head) * splits + split;
    float qv[kDim / kLanes], acc[kVDim / kLanes];
    const uint16_t* qrow = q + (static_cast<long>(seq) * kHeads + head) * kDim;
    for (int j = 0; j < kDim / kLanes; ++j) qv[j] = bf16(qrow[lane + kLanes * j]);
    for (int j = 0; j < kVDim / kLanes; ++j) acc[j] = 0.f;
    float row_max = -1e30f, row_sum = 0.f;
    for (int token = lo; token < hi; ++token) {
        const uint16_t* krow = kv + static_cast<long>(token) * kDim;
        float dot = 0.f;
        for (int j = 0; j < kDim / kLanes; ++j) dot += qv[j] * bf16(krow[lane + kLanes * j]);
        for (int offset = 32; offset >= 1; offset >>= 1) dot += __shfl_xor(dot, offset);
        const float score = dot * sm_scale, new_max = fmaxf(row_max, score);
        const float rescale = __expf(row_max - new_max), weight = __expf(score - new_max);
        row_sum = row_sum * rescale + weight;
        for (int j = 0; j < kVDim / kLanes; ++j) acc[j] = acc[j] * rescale + weight * bf16(krow[lane + kLanes * j]);
        row_max = new_max;
    }
    for (int j = 0; j < kVDim / kLanes; ++j) part[row * kVDim + lane + kLanes * j] = acc[j];
    if (lane == 0) { ml[2 * row] = row_max; ml[2 * row + 1] = row_sum; }
}

// One wave per (head, sequence): every split rescaled to the common max.
__global__ __launch_bounds__(64) void merge_kernel(const float* part, const float* ml, int splits, uint16_t* out) {
    const long item = static_cast<long>(blockIdx.y) * kHeads + blockIdx.x;
    const int lane = threadIdx.x;
    float top = -1e30f;
    for (int s = 0; s < splits; ++s) {
        if (ml[2 * (item * splits + s) + 1] > 0.f) top = fmaxf(top, ml[2 * (item * splits + s)]);
    }
    float total = 0.f, acc[kVDim / kLanes] = {};
    for (int s = 0; s < splits; ++s) {
        const long row = item * splits + s;
        if (ml[2 * row + 1] <= 0.f) continue;
        const float w = __expf(ml[2 * row] - top);
        total += w * ml[2 * row + 1];
        for (int j = 0; j < kVDim / kLanes; ++j) acc[j] += w * part[row * kVDim + lane + kLanes * j];
    }
    for (int j = 0; j < kVDim / kLanes; ++j) {
        uint32_t bits = __float_as_uint(acc[j] / total);
        out[item * kVDim + lane + kLanes * j] = uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    }
}

torch::Tensor decode(torch::Tensor q, torch::Tensor kv, torch::Tensor kv_indptr, double sm_scale, int64_t splits) {
    const int batch = static_cast<int>(kv_indptr.size(0)) - 1;
    auto out = torch::empty({q.size(0), kHeads, kVDim}, q.options());
    auto part = torch::empty({batch * kHeads * splits, kVDim}, q.options().dtype(torch::kFloat32));
    auto ml = torch::empty({batch * kHeads * splits, 2}, q.options().dtype(torch::kFloat32));
    split_kernel<<<dim3(splits, kHeads, batch), kLanes>>>(
        reinterpret_cast<const uint16_t*>(q.data_ptr()), reinterpret_cast<const uint16_t*>(kv.data_ptr()),
        kv_indptr.data_ptr<int>(), static_cast<float>(sm_scale), static_cast<int>(splits), part.data_ptr<float>(),
        ml.data_ptr<float>());
    merge_kernel<<<dim3(kHeads, batch), kLanes>>>(part.data_ptr<float>(), ml.data_ptr<float>(),
                                                  static_cast<int>(splits),
                                                  reinterpret_cast<uint16_t*>(out.data_ptr()));
    return out;
}
"""

_module = {}


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, _, kv_indptr, config = data
    if "m" not in _module:
        _module["m"] = load_inline(
            name="sample_split_k_merge", cpp_sources="torch::Tensor decode(torch::Tensor q, torch::Tensor kv, "
            "torch::Tensor kv_indptr, double sm_scale, int64_t splits);",
            cuda_sources=HIP_SOURCE, functions=["decode"], extra_cuda_cflags=["-O3", "--offload-arch=gfx950"])
    return _module["m"].decode(q.contiguous(), kv_data["bf16"].contiguous(), kv_indptr, float(config["sm_scale"]),
                               SPLITS)
