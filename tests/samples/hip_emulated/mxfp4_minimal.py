#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Test sample (issue 39), ours, written in the style of the public one-kernel "minimal" MXFP4 HIP MLA files:
one load_inline kernel, built at import, does the whole decode. One workgroup of one wave per (sequence, head)
walks every KV token in turn: the wave unpacks the token's fp4x2 bytes with their e8m0 block scales into LDS,
reduces q.k through an LDS tree with a barrier per step, and keeps an online softmax and eight output dims per
lane. Q goes in as float32, the output comes back float32 and is rounded to bf16 by torch. No MFMA, no splits:
slow by design, and a pass on the emulator (S3 times the emulator on it)."""
import os

import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

os.environ["PYTORCH_ROCM_ARCH"] = "gfx950"

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <torch/extension.h>

constexpr int kDim = 576, kVDim = 512, kPacked = kDim / 2;
constexpr int kBlock = 32, kBlocks = kDim / kBlock, kThreads = 64;

// E2M1 magnitudes, then the same negated: a nibble indexes it whole.
__device__ __constant__ float kFp4Values[16] = {
    0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// e8m0: 2^(byte - 127); every block of a real token has one.
__device__ float block_scale(const unsigned char* scales, int block) {
    return ldexpf(1.0f, static_cast<int>(scales[block]) - 127);
}

__global__ void mxfp4_decode_kernel(
        const float* q, const unsigned char* kv, const unsigned char* scales,
        long scale_stride, const int* qo_indptr, const int* kv_indptr,
        float* out, int heads, float sm_scale) {
    const int seq = blockIdx.x, head = blockIdx.y, tid = threadIdx.x;
    __shared__ float q_row[kDim];
    __shared__ float k_row[kDim];
    __shared__ float partials[kThreads];
    const int kv_begin = kv_indptr[seq], kv_end = kv_indptr[seq + 1];
    for (int row = qo_indptr[seq]; row < qo_indptr[seq + 1]; ++row) {
        const float* q_head = q + (static_cast<long>(row) * heads + head) * kDim;
        for (int d = tid; d < kDim; d += kThreads) q_row[d] = q_head[d];
        float running_max = -1e30f, running_sum = 0.0f, acc[kVDim / kThreads];
        for (int i = 0; i < kVDim / kThreads; ++i) acc[i] = 0.0f;
        for (int token = kv_begin; token < kv_end; ++token) {
            const unsigned char* packed = kv + static_cast<long>(token) * kPacked;
            const unsigned char* token_scales = scales + token * scale_stride;
            // Unpack: the low nibble is the even dim, the high one the odd.
            for (int byte = tid; byte < kPacked; byte += kThreads) {
                const int bits = packed[byte], even = 2 * byte;
                const float scale = block_scale(token_scales, even / kBlock);
                k_row[even] = kFp4Values[bits & 15] * scale;
                k_row[even + 1] = kFp4Values[bits >> 4] * scale;
            }
            __syncthreads();
            float dot = 0.0f;
            for (int d = tid; d < kDim; d += kThreads) dot += q_row[d] * k_row[d];
            partials[tid] = dot;
            __syncthreads();
            for (int half = kThreads / 2; half > 0; half /= 2) {
                if (tid < half) partials[tid] += partials[tid + half];
                __syncthreads();
            }
            const float score = partials[0] * sm_scale;
            const float new_max = fmaxf(running_max, score);
            const float rescale = expf(running_max - new_max);
            const float weight = expf(score - new_max);
            running_sum = running_sum * rescale + weight;
            running_max = new_max;
            for (int i = 0; i < kVDim / kThreads; ++i)
                acc[i] = acc[i] * rescale + weight * k_row[tid + i * kThreads];
            __syncthreads();  // k_row and partials are rewritten next token
        }
        float* out_head = out + (static_cast<long>(row) * heads + head) * kVDim;
        const float inverse = running_sum > 0.0f ? 1.0f / running_sum : 0.0f;
        for (int i = 0; i < kVDim / kThreads; ++i)
            out_head[tid + i * kThreads] = acc[i] * inverse;
        __syncthreads();  // q_row is rewritten for the next row
    }
}

torch::Tensor mla_mxfp4(torch::Tensor q, torch::Tensor kv, torch::Tensor scales,
                        torch::Tensor qo_indptr, torch::Tensor kv_indptr,
                        int64_t heads, double sm_scale) {
    const int batch = static_cast<int>(qo_indptr.size(0)) - 1;
    auto out = torch::zeros({q.size(0), heads, kVDim}, q.options());
    hipLaunchKernelGGL(mxfp4_decode_kernel, dim3(batch, heads), dim3(kThreads), 0, 0,
                       q.data_ptr<float>(), kv.data_ptr<unsigned char>(),
                       scales.data_ptr<unsigned char>(), scales.stride(0),
                       qo_indptr.data_ptr<int>(), kv_indptr.data_ptr<int>(),
                       out.data_ptr<float>(), static_cast<int>(heads),
                       static_cast<float>(sm_scale));
    return out;
}
"""

CPP_SOURCE = """
torch::Tensor mla_mxfp4(torch::Tensor q, torch::Tensor kv, torch::Tensor scales,
                        torch::Tensor qo_indptr, torch::Tensor kv_indptr,
                        int64_t heads, double sm_scale);
"""

module = load_inline(name="sample_mxfp4_minimal", cpp_sources=CPP_SOURCE, cuda_sources=HIP_SOURCE,
                     functions=["mla_mxfp4"], extra_cuda_cflags=["-O3", "--offload-arch=gfx950"])


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    packed, scales = kv_data["mxfp4"]
    packed = packed.view(torch.uint8).reshape(-1, 288)
    scales = scales.view(torch.uint8)
    out = module.mla_mxfp4(q.float().contiguous(), packed.contiguous(), scales, qo_indptr.int(),
                           kv_indptr.int(), q.shape[1], float(config["sm_scale"]))
    return out.to(torch.bfloat16)
